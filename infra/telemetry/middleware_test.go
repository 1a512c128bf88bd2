package telemetry

import (
	"errors"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/checkpointd/checkpointd/messages/envelope"
)

// TestMiddlewareWithoutTraceContext starts a new trace for a record with no
// headers (MM2's records, __consumer_offsets) and passes control messages
// through untraced.
func TestMiddlewareWithoutTraceContext(t *testing.T) {
	otel.SetTextMapPropagator(propagation.TraceContext{})
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	var seen trace.SpanContext
	h := Middleware(tp, nil, nil)(func(m *message.Message) ([]*message.Message, error) {
		seen = trace.SpanContextFromContext(m.Context())
		return nil, errors.New("boom")
	})
	msg := envelope.FromRecord(envelope.Record{Topic: "mm2-offset-syncs.target.internal", Offset: 5, Key: []byte("k"), Value: []byte("v")})
	if _, err := h(msg); err == nil {
		t.Fatal("handler error lost")
	}
	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	if spans[0].Parent().IsValid() {
		t.Errorf("span has parent %v, want a new trace", spans[0].Parent())
	}
	if seen.SpanID() != spans[0].SpanContext().SpanID() {
		t.Errorf("handler saw span %s, want %s", seen.SpanID(), spans[0].SpanContext().SpanID())
	}
	if spans[0].Status().Code.String() != "Error" {
		t.Errorf("status %v, want Error", spans[0].Status())
	}
	if _, err := h(envelope.NewControl(envelope.CaughtUp, "t", -1)); err == nil {
		t.Fatal("handler error lost")
	}
	if len(rec.Ended()) != 1 {
		t.Errorf("a control message was traced")
	}
}
