// Package events delivers the pipeline's typed events (messages/event) to
// the handlers users register, the way a Watermill router delivers messages
// to its handlers: by name, with per-handler middleware, optionally
// publishing what a handler returns.
//
// Delivery, in short (docs/extending.md has the whole contract):
//
//   - Live only, at most once per instance. An event goes to the handlers
//     of the instance that produced it: decisions, writes and target
//     commits of a group on the instance that owns the group, offset syncs
//     on every instance. Nothing is replayed after a restart.
//   - Each handler has its own bounded queue and goroutine: it gets its
//     events one at a time, in the order the pipeline produced them (so in
//     order per group). The pipeline never waits for a handler: when a
//     handler's queue is full the new event is dropped and counted.
//   - A handler that returns an error is called again with the same event
//     after a backoff, up to Config.Retries times; then the event is
//     dropped, counted as failed and logged.
package events
