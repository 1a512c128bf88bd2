package pipeline_test

import (
	"fmt"
	"strconv"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/checkpointd/checkpointd/handlers"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages/envelope"
	"github.com/checkpointd/checkpointd/pipeline"
)

// TestTracingOnKafka runs checkpointd with tracing into an in-memory
// recorder against the real clusters and MM2: the checkpoint a source commit
// leads to carries, in its Kafka headers, the context of its PRODUCER `send
// <checkpoints topic>` span, child of the `process __consumer_offsets` span
// that decided it, and the commit stage's `process <checkpoints topic>` span
// is the send span's child, in the same trace. The deciding span holds the
// decision as an event; the checkpoint carries the source commit time in a
// header; the target commit gets a CLIENT span that links to the send span of
// the checkpoint it commits.
func TestTracingOnKafka(t *testing.T) {
	bed := kafkatest.Shared(t)
	f := newFixture(t, bed, map[string]int32{"tracing": 1})
	topic := f.topics["tracing"]
	group := kafkatest.UniqueName(t, "grp")
	cfg := loadConfig(t, writeConfig(t, "tracing.yaml", f.props(t, []string{group}, "offsets-log")))

	prev := otel.GetTextMapPropagator()
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() { otel.SetTextMapPropagator(prev) })
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))

	in := startWithOptions(t, f, "tracing", cfg, func(*pipeline.Pipeline) {}, pipeline.WithTracing(tp))
	f.produce(t, "tracing", 20, 10)
	ends, _ := f.settle(t, "tracing", in)
	f.commit(t, group, topic, ends, make(map[int32][]int64))
	cps := f.waitCheckpoints(t, group, topic, ends)
	f.waitTargetFollows(t, group, cps)

	cp := cps[0]
	carrier := propagation.MapCarrier{}
	for _, h := range cp.rec.Headers {
		carrier[string(h.Key)] = string(h.Value)
	}
	sc := trace.SpanContextFromContext(otel.GetTextMapPropagator().Extract(t.Context(), carrier))
	if !sc.IsValid() {
		t.Fatalf("checkpoint %v at offset %d has no trace context; headers %v", cp.Checkpoint, cp.rec.Offset, carrier)
	}

	// consumed is the span of the source commit record; decided is the span
	// that holds the decision: the same span when the commit was decided as
	// it arrived, its `decide` child when it arrived during the start-up
	// replay and was decided once that caught up.
	var consumed, decided, sent, committed, commitCall sdktrace.ReadOnlySpan
	f.waitFor(t, waitTimeout, "the spans of the checkpoint's hops", func() error {
		consumed, decided, sent, committed, commitCall = nil, nil, nil, nil, nil
		ended := rec.Ended()
		for _, s := range ended {
			if s.SpanContext().SpanID() == sc.SpanID() {
				sent = s
			}
		}
		if sent == nil {
			return fmt.Errorf("no span %s (the checkpoint's traceparent) among %d", sc.SpanID(), len(ended))
		}
		for _, s := range ended {
			switch {
			case s.SpanContext().SpanID() == sent.Parent().SpanID():
				decided = s
			case s.Parent().SpanID() == sc.SpanID() && handlerOf(s) == "sync_target_offsets":
				committed = s
			case s.Name() == "commit "+group && linksTo(s, sc):
				commitCall = s
			}
		}
		consumed = decided
		if decided != nil && decided.Name() == "decide" {
			consumed = nil
			for _, s := range ended {
				if s.SpanContext().SpanID() == decided.Parent().SpanID() {
					consumed = s
				}
			}
		}
		switch {
		case decided == nil:
			return fmt.Errorf("no span %s (the send span's parent) among %d", sent.Parent().SpanID(), len(ended))
		case consumed == nil:
			return fmt.Errorf("no span %s (the decide span's parent) among %d", decided.Parent().SpanID(), len(ended))
		case committed == nil:
			return fmt.Errorf("no commit-stage span child of %s", sc.SpanID())
		case commitCall == nil:
			return fmt.Errorf("no `commit %s` span linking to the checkpoint's span %s", group, sc.SpanID())
		}
		return nil
	})
	if want := "send " + f.bed.CheckpointsTopic(); sent.Name() != want || sent.SpanKind() != trace.SpanKindProducer || sent.Parent().TraceID() != decided.SpanContext().TraceID() {
		t.Errorf("checkpoint carries span %q (%v), want %q (producer) in the deciding span's trace", sent.Name(), sent.SpanKind(), want)
	}
	if consumed.Name() != "process __consumer_offsets" || consumed.SpanKind() != trace.SpanKindConsumer || consumed.SpanContext().TraceID() != sc.TraceID() {
		t.Errorf("the checkpoint's trace starts at %q (%v), want `process __consumer_offsets` (consumer)", consumed.Name(), consumed.SpanKind())
	}
	attrs := map[string]string{}
	for _, kv := range consumed.Attributes() {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	for k, want := range map[string]string{
		"messaging.system":              "kafka",
		"messaging.destination.name":    "__consumer_offsets",
		"messaging.consumer.group.name": cfg.GroupID,
		"checkpointd.handler":           "translate_commits",
	} {
		if attrs[k] != want {
			t.Errorf("decision span %s = %q, want %q", k, attrs[k], want)
		}
	}
	if attrs["messaging.kafka.offset"] == "" || attrs["messaging.destination.partition.id"] == "" {
		t.Errorf("decision span lacks the record's partition and offset: %v", attrs)
	}
	if want := "process " + f.bed.CheckpointsTopic(); committed.Name() != want || committed.SpanContext().TraceID() != sc.TraceID() {
		t.Errorf("commit-stage span %q in trace %s, want %q in %s", committed.Name(), committed.SpanContext().TraceID(), want, sc.TraceID())
	}
	if ms, err := strconv.ParseInt(carrier[envelope.HeaderCommitTime], 10, 64); err != nil || ms <= 0 {
		t.Errorf("checkpoint header %s = %q, want the source commit time in ms", envelope.HeaderCommitTime, carrier[envelope.HeaderCommitTime])
	}
	var decision map[string]string
	for _, e := range decided.Events() {
		if e.Name == handlers.DecisionEvent {
			decision = map[string]string{}
			for _, kv := range e.Attributes {
				decision[string(kv.Key)] = kv.Value.Emit()
			}
		}
	}
	for k, want := range map[string]string{
		"checkpointd.decision":          "emitted",
		"checkpointd.group":             group,
		"checkpointd.upstream.topic":    topic,
		"checkpointd.upstream.offset":   strconv.FormatInt(cp.UpstreamOffset, 10),
		"checkpointd.downstream.offset": strconv.FormatInt(cp.DownstreamOffset, 10),
	} {
		if decision[k] != want {
			t.Errorf("decision event %s = %q, want %q (event: %v)", k, decision[k], want, decision)
		}
	}
	if commitCall.SpanKind() != trace.SpanKindClient {
		t.Errorf("target commit span kind %v, want client", commitCall.SpanKind())
	}
	t.Logf("trace %s: %s -> %s -> %s -> checkpoint at offset %d -> %s; target commit %q", sc.TraceID(), consumed.Name(), decided.Name(), sent.Name(), cp.rec.Offset, committed.Name(), commitCall.Name())
	f.stop(t, in)
}

// linksTo reports whether s links to the span sc.
func linksTo(s sdktrace.ReadOnlySpan, sc trace.SpanContext) bool {
	for _, l := range s.Links() {
		if l.SpanContext.TraceID() == sc.TraceID() && l.SpanContext.SpanID() == sc.SpanID() {
			return true
		}
	}
	return false
}

func handlerOf(s sdktrace.ReadOnlySpan) string {
	for _, kv := range s.Attributes() {
		if kv.Key == "checkpointd.handler" {
			return kv.Value.AsString()
		}
	}
	return ""
}
