package events

import (
	"context"
	"fmt"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/checkpointd/checkpointd/messages/event"
)

// Metadata keys the JSON marshaler sets on every message, beside the trace
// context's own (traceparent, tracestate for W3C).
const (
	MetaKind  = "checkpointd_event" // the event's kind, e.g. checkpoint_decided
	MetaGroup = "checkpointd_group" // the source group; absent for offset syncs
)

// Marshaler turns an event into a Watermill message and back.
type Marshaler interface {
	Marshal(ctx context.Context, e event.Event) (*message.Message, error)
	Unmarshal(msg *message.Message) (event.Event, error)
}

// JSONMarshaler writes the event's fields as JSON (event.Marshal) in the
// payload, its kind and source group in metadata, and its trace context in
// metadata through Propagator (W3C Trace Context if nil), as checkpointd's
// Kafka records carry it in headers. The message's UUID is random.
type JSONMarshaler struct {
	Propagator propagation.TextMapPropagator
}

func (m JSONMarshaler) propagator() propagation.TextMapPropagator {
	if m.Propagator == nil {
		return propagation.TraceContext{}
	}
	return m.Propagator
}

// Marshal implements Marshaler.
func (m JSONMarshaler) Marshal(_ context.Context, e event.Event) (*message.Message, error) {
	payload, err := event.Marshal(e)
	if err != nil {
		return nil, err
	}
	msg := message.NewMessage(watermill.NewUUID(), payload)
	msg.Metadata.Set(MetaKind, e.Kind().String())
	if g := e.SourceGroup(); g != "" {
		msg.Metadata.Set(MetaGroup, g)
	}
	if sc := e.SpanContext(); sc.IsValid() {
		ctx := trace.ContextWithSpanContext(context.Background(), sc)
		m.propagator().Inject(ctx, propagation.MapCarrier(msg.Metadata))
		msg.SetContext(ctx)
	}
	return msg, nil
}

// Unmarshal implements Marshaler: the event, with the trace context read
// back from metadata.
func (m JSONMarshaler) Unmarshal(msg *message.Message) (event.Event, error) {
	k, ok := event.ParseKind(msg.Metadata.Get(MetaKind))
	if !ok {
		return nil, fmt.Errorf("message %s: no known event kind in metadata %q", msg.UUID, MetaKind)
	}
	e, err := event.Unmarshal(k, msg.Payload)
	if err != nil {
		return nil, fmt.Errorf("message %s: %w", msg.UUID, err)
	}
	sc := trace.SpanContextFromContext(m.propagator().Extract(context.Background(), propagation.MapCarrier(msg.Metadata)))
	return withTrace(e, sc), nil
}

// withTrace returns e carrying sc.
func withTrace(e event.Event, sc trace.SpanContext) event.Event {
	switch v := e.(type) {
	case event.SourceCommitRead:
		v.Trace = sc
		return v
	case event.OffsetSyncApplied:
		v.Trace = sc
		return v
	case event.CheckpointDecided:
		v.Trace = sc
		return v
	case event.CheckpointWritten:
		v.Trace = sc
		return v
	case event.TargetCommitResult:
		v.Trace = sc
		return v
	}
	return e
}
