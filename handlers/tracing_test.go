package handlers

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/checkpointd/checkpointd/handlers/groupsync"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
)

func useTraceContext(t *testing.T) {
	prev := otel.GetTextMapPropagator()
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() { otel.SetTextMapPropagator(prev) })
}

func eventAttrs(e sdktrace.Event) map[string]string {
	out := map[string]string{}
	for _, kv := range e.Attributes {
		out[string(kv.Key)] = kv.Value.Emit()
	}
	return out
}

func TestCheckpointerRecordsDecisionsOnTheSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test")
	c, _ := newTestCheckpointer(t, ".*", ".*")
	openGate(c)

	// A source commit with no sync yet: skipped, and why.
	ctx, span := tracer.Start(context.Background(), "process __consumer_offsets")
	c.SourceCommit(ctx, 0, commitRec("g", orders0, 10), time.Time{})
	span.End()
	// An offset sync that moves g's translation: emitted, with both offsets.
	ctx, span = tracer.Start(context.Background(), "process offset-syncs")
	c.ApplySync(ctx, syncOf(orders0, 10, 5))
	span.End()
	// Without a recording span nothing happens (and nothing breaks).
	c.SourceCommit(context.Background(), 0, commitRec("g", orders0, 11), time.Time{})

	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	spanAttrs := map[string]string{}
	for _, kv := range spans[0].Attributes() {
		spanAttrs[string(kv.Key)] = kv.Value.Emit()
	}
	for k, want := range map[string]string{"checkpointd.group": "g", "checkpointd.upstream.topic": "orders",
		"checkpointd.partition": "0", "checkpointd.upstream.offset": "10"} {
		if spanAttrs[k] != want {
			t.Errorf("commit span %s = %q, want %q (all: %v)", k, spanAttrs[k], want, spanAttrs)
		}
	}
	for i, want := range []map[string]string{
		{"checkpointd.decision": "skipped", "checkpointd.reason": "no_sync_yet", "checkpointd.group": "g",
			"checkpointd.upstream.topic": "orders", "checkpointd.partition": "0", "checkpointd.upstream.offset": "10"},
		{"checkpointd.decision": "emitted", "checkpointd.group": "g", "checkpointd.upstream.topic": "orders",
			"checkpointd.partition": "0", "checkpointd.upstream.offset": "10",
			"checkpointd.downstream.topic": "source.orders", "checkpointd.downstream.offset": "5"},
	} {
		events := spans[i].Events()
		if len(events) != 1 || events[0].Name != DecisionEvent {
			t.Fatalf("span %q: events %v, want one %s", spans[i].Name(), events, DecisionEvent)
		}
		got := eventAttrs(events[0])
		for k, v := range want {
			if got[k] != v {
				t.Errorf("span %q event %s = %q, want %q (all: %v)", spans[i].Name(), k, got[k], v, got)
			}
		}
		if _, ok := got["checkpointd.reason"]; ok && want["checkpointd.reason"] == "" {
			t.Errorf("emitted decision has a reason: %v", got)
		}
	}
}

type capturePublisher struct {
	mu   sync.Mutex
	msgs []*message.Message
	got  chan struct{}
}

func (p *capturePublisher) Publish(_ string, msgs ...*message.Message) error {
	p.mu.Lock()
	p.msgs = append(p.msgs, msgs...)
	p.mu.Unlock()
	for range msgs {
		p.got <- struct{}{}
	}
	return nil
}

func (p *capturePublisher) Close() error { return nil }

func TestOutboxCarriesTraceContextAndCommitTime(t *testing.T) {
	useTraceContext(t)
	tracer := sdktrace.NewTracerProvider().Tracer("test")
	pub := &capturePublisher{got: make(chan struct{}, 2)}
	o := NewOutbox(pub, "cps", 4, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- o.Run(ctx, time.Second) }()

	spanCtx, span := tracer.Start(context.Background(), "process __consumer_offsets")
	committed := time.UnixMilli(1_700_000_000_123)
	o.Emit(spanCtx, cp("g", 10, 5), committed)
	span.End()
	o.Emit(context.Background(), cp("g", 11, 6), time.Time{})
	<-pub.got
	<-pub.got
	cancel()
	<-done

	first, second := pub.msgs[0], pub.msgs[1]
	if got := first.Metadata.Get(envelope.HeaderCommitTime); got != "1700000000123" {
		t.Errorf("commit time header %q, want 1700000000123", got)
	}
	sc := trace.SpanContextFromContext(otel.GetTextMapPropagator().Extract(context.Background(), propagation.MapCarrier(first.Metadata)))
	if sc.TraceID() != span.SpanContext().TraceID() || sc.SpanID() != span.SpanContext().SpanID() {
		t.Errorf("traceparent %q, want the emitting span %s", first.Metadata.Get("traceparent"), span.SpanContext().SpanID())
	}
	if _, ok := second.Metadata[envelope.HeaderCommitTime]; ok {
		t.Errorf("commit time header without a commit time: %v", second.Metadata)
	}
	if _, ok := second.Metadata["traceparent"]; ok {
		t.Errorf("traceparent without a span: %v", second.Metadata)
	}
}

// linkTarget records the links the syncer passes with each commit.
type linkTarget struct {
	*memTarget
	links [][]trace.Link
}

func (l *linkTarget) Commit(ctx context.Context, group string, offs map[messages.TopicPartition]groupsync.Checkpoint) (map[messages.TopicPartition]groupsync.Reason, error) {
	l.links = append(l.links, CommitLinks(ctx))
	return l.memTarget.Commit(ctx, group, offs)
}

func TestOffsetSyncerLinksCommitToCheckpointsAndPassesCommitTime(t *testing.T) {
	useTraceContext(t)
	tracer := sdktrace.NewTracerProvider().Tracer("test")
	target := &linkTarget{memTarget: newMemTarget()}
	target.existing[tp0], target.existing[tp1] = true, true
	type result struct {
		tp          messages.TopicPartition
		reason      groupsync.Reason
		committedAt time.Time
	}
	var results []result
	s := NewOffsetSyncer(OffsetSyncerConfig{Target: target, RetryInterval: time.Minute,
		OnResult: func(_ string, tp messages.TopicPartition, r groupsync.Reason, _, committedAt time.Time) {
			results = append(results, result{tp, r, committedAt})
		}})

	// tp0's checkpoint was written by checkpointd (trace context, commit
	// time); tp1's by MM2 (no headers).
	_, span := tracer.Start(context.Background(), "process __consumer_offsets")
	span.End()
	headers := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(trace.ContextWithSpan(context.Background(), span), headers)
	committed := time.UnixMilli(1_700_000_000_123)
	headers[envelope.HeaderCommitTime] = strconv.FormatInt(committed.UnixMilli(), 10)
	c0, c1 := cpFor("g", tp0, 7), cpFor("g", tp1, 8)
	withHeaders := envelope.FromRecord(envelope.Record{Topic: "source.checkpoints.internal", Offset: 0,
		Timestamp: time.UnixMilli(1000), Key: c0.Key(), Value: c0.Value(), Headers: headers})
	handle(t, s, envelope.NewControl(envelope.Assigned, "cp", 0), envelope.NewControl(envelope.CaughtUp, "cp", 0),
		withHeaders, checkpointMsg(t, 1, c1))
	s.Round(context.Background(), time.Unix(100, 0))

	if len(target.links) != 1 {
		t.Fatalf("%d commits, want 1", len(target.links))
	}
	if links := target.links[0]; len(links) != 1 || links[0].SpanContext.SpanID() != span.SpanContext().SpanID() ||
		links[0].SpanContext.TraceID() != span.SpanContext().TraceID() {
		t.Errorf("commit links %v, want one to the checkpoint's span %s", links, span.SpanContext().SpanID())
	}
	if len(results) != 2 {
		t.Fatalf("results %v, want 2", results)
	}
	for _, r := range results {
		want := time.Time{}
		if r.tp == tp0 {
			want = committed
		}
		if r.reason != groupsync.Committed || !r.committedAt.Equal(want) {
			t.Errorf("%v: %s committed at %v, want committed with %v", r.tp, r.reason, r.committedAt, want)
		}
	}
}
