// Package event holds the typed events checkpointd reports at each hop of
// its pipeline, for the handlers users plug in (pipeline.WithEventHandler):
// a source commit read, an offset sync applied, a checkpoint decided
// (emitted or skipped, and why), a checkpoint written to the target and a
// target group commit's result. Handlers get these values, never the
// records or the readers' envelopes they were made from.
//
// Every event carries the W3C trace context of the hop that produced it
// (invalid when that hop was not traced), so a handler's own spans can join
// the record's trace. The JSON encoding (Marshal) leaves it out of the
// payload: forwarders put it in message metadata, as Kafka records carry it
// in headers.
package event
