package kafkalog

import (
	"context"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/messages/envelope"
)

// recordMessage turns a consumed record into a Watermill message. Headers
// become metadata under their own names, so W3C trace context (traceparent,
// tracestate) reaches the handlers.
func recordMessage(ctx context.Context, m *sarama.ConsumerMessage) *message.Message {
	msg := envelope.FromRecord(envelopeRecord(m))
	msg.SetContext(ctx)
	return msg
}

// envelopeRecord is m as an envelope.Record.
func envelopeRecord(m *sarama.ConsumerMessage) envelope.Record {
	rec := envelope.Record{
		Topic:     m.Topic,
		Partition: m.Partition,
		Offset:    m.Offset,
		Timestamp: m.Timestamp,
		Key:       m.Key,
		Value:     m.Value,
	}
	rec.Headers = headerMap(m.Headers)
	return rec
}

// headerMap is a record's headers as envelope.Record has them; nil for none.
func headerMap(hs []*sarama.RecordHeader) map[string]string {
	if len(hs) == 0 {
		return nil
	}
	out := make(map[string]string, len(hs))
	for _, h := range hs {
		if h != nil {
			out[string(h.Key)] = string(h.Value)
		}
	}
	return out
}

// recordsMessage turns consecutive records of one partition into one
// message (envelope.FromRecords), headers included; recs is scratch space
// kept between calls.
func recordsMessage(ctx context.Context, ms []*sarama.ConsumerMessage, recs *[]envelope.Record) *message.Message {
	rs := (*recs)[:0]
	for _, m := range ms {
		rs = append(rs, envelopeRecord(m))
	}
	msg := envelope.FromRecords(rs)
	clear(rs)
	*recs = rs[:0]
	msg.SetContext(ctx)
	return msg
}

// controlMessage makes a control message carrying ctx.
func controlMessage(ctx context.Context, c envelope.Control, topic string, partition int32) *message.Message {
	msg := envelope.NewControl(c, topic, partition)
	msg.SetContext(ctx)
	return msg
}
