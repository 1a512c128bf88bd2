package handlers

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/checkpointd/checkpointd/handlers/filter"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
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
	rec := tracetest.NewSpanRecorder()
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test")
	pub := &capturePublisher{got: make(chan struct{}, 2)}
	o := NewOutbox(pub, "cps", 4, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- o.Run(ctx, time.Second) }()

	spanCtx, span := tracer.Start(context.Background(), "process __consumer_offsets")
	committed := time.UnixMilli(1_700_000_000_123)
	o.Emit(spanCtx, cp("g", 10, 5), committed)
	span.End()
	o.Emit(context.Background(), cp("h", 11, 6), time.Time{}) // another key: not coalesced with the first
	<-pub.got
	<-pub.got
	cancel()
	<-done

	first, second := pub.msgs[0], pub.msgs[1]
	if got := first.Metadata.Get(envelope.HeaderCommitTime); got != "1700000000123" {
		t.Errorf("commit time header %q, want 1700000000123", got)
	}
	sc := trace.SpanContextFromContext(otel.GetTextMapPropagator().Extract(context.Background(), propagation.MapCarrier(first.Metadata)))
	var send sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.SpanContext().SpanID() == sc.SpanID() {
			send = s
		}
	}
	switch {
	case send == nil:
		t.Fatalf("traceparent %q names no ended span", first.Metadata.Get("traceparent"))
	case send.Name() != "send cps" || send.SpanKind() != trace.SpanKindProducer:
		t.Errorf("checkpoint carries span %q (%v), want `send cps` (producer)", send.Name(), send.SpanKind())
	case send.Parent().SpanID() != span.SpanContext().SpanID() || sc.TraceID() != span.SpanContext().TraceID():
		t.Errorf("send span's parent %s, want the emitting span %s", send.Parent().SpanID(), span.SpanContext().SpanID())
	}
	attrs := map[string]string{}
	for _, kv := range send.Attributes() {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	for k, want := range map[string]string{
		"messaging.system":                   "kafka",
		"messaging.operation.type":           "send",
		"messaging.destination.name":         "cps",
		"messaging.destination.partition.id": "0",
		"checkpointd.group":                  "g",
		"checkpointd.upstream.offset":        "10",
		"checkpointd.downstream.offset":      "5",
	} {
		if attrs[k] != want {
			t.Errorf("send span %s = %q, want %q", k, attrs[k], want)
		}
	}
	if _, ok := second.Metadata[envelope.HeaderCommitTime]; ok {
		t.Errorf("commit time header without a commit time: %v", second.Metadata)
	}
	if _, ok := second.Metadata["traceparent"]; ok {
		t.Errorf("traceparent without a span: %v", second.Metadata)
	}
	if n := len(rec.Ended()); n != 2 {
		t.Errorf("%d spans ended, want 2 (process and send)", n)
	}
}

// failingPublisher refuses every checkpoint.
type failingPublisher struct{ tries atomic.Int64 }

func (p *failingPublisher) Publish(string, ...*message.Message) error {
	p.tries.Add(1)
	return errors.New("broker down")
}
func (p *failingPublisher) Close() error { return nil }

// A checkpoint that is never written ends its send span as failed, with
// one event per retry, instead of leaving it open.
func TestOutboxSendSpanOfUnpublishedCheckpoint(t *testing.T) {
	useTraceContext(t)
	rec := tracetest.NewSpanRecorder()
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test")
	pub := &failingPublisher{}
	o := NewOutbox(pub, "cps", 4, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- o.Run(ctx, 10*time.Millisecond) }()

	spanCtx, span := tracer.Start(context.Background(), "process __consumer_offsets")
	o.Emit(spanCtx, cp("g", 10, 5), time.Time{})
	o.Emit(spanCtx, cp("h", 11, 6), time.Time{}) // another key: both stay queued
	span.End()
	for pub.tries.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done

	var sends []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "send cps" {
			sends = append(sends, s)
		}
	}
	if len(sends) != 2 {
		t.Fatalf("%d send spans ended, want 2 (both keys unwritten)", len(sends))
	}
	for _, s := range sends {
		if s.Status().Code != codes.Error || !strings.Contains(s.Status().Description, "not published") {
			t.Errorf("unpublished checkpoint's send span status %v %q, want an error saying it was not published", s.Status().Code, s.Status().Description)
		}
	}
	retries := 0
	for _, s := range sends {
		for _, e := range s.Events() {
			if e.Name == "retry" {
				retries++
			}
		}
	}
	if retries < 2 {
		t.Errorf("%d retry events over the send spans, want at least 2 (the publisher refused %d times)", retries, pub.tries.Load())
	}
}

// linkTarget records the links the syncer passes with each commit.
type linkTarget struct {
	*memTarget
	mu    sync.Mutex
	links [][]trace.Link
}

func (l *linkTarget) Commit(ctx context.Context, group string, offs map[messages.TopicPartition]targetgroup.Checkpoint) (map[messages.TopicPartition]targetgroup.Reason, error) {
	l.mu.Lock()
	l.links = append(l.links, targetgroup.CommitLinks(ctx))
	l.mu.Unlock()
	return l.memTarget.Commit(ctx, group, offs)
}

func TestOffsetSyncerLinksCommitToCheckpointsAndPassesCommitTime(t *testing.T) {
	useTraceContext(t)
	tracer := sdktrace.NewTracerProvider().Tracer("test")
	target := &linkTarget{memTarget: newMemTarget()}
	target.existing[tp0], target.existing[tp1] = true, true
	type result struct {
		tp          messages.TopicPartition
		reason      targetgroup.Reason
		committedAt time.Time
	}
	var results []result
	s := NewOffsetSyncer(OffsetSyncerConfig{Target: target, RetryInterval: time.Minute,
		Observer: resultObserver{f: func(_ string, tp messages.TopicPartition, r targetgroup.Reason, _, committedAt time.Time) {
			results = append(results, result{tp, r, committedAt})
		}}})

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
		if r.reason != targetgroup.Committed || !r.committedAt.Equal(want) {
			t.Errorf("%v: %s committed at %v, want committed with %v", r.tp, r.reason, r.committedAt, want)
		}
	}
}

// ctxEmitter keeps the span each checkpoint was emitted under.
type ctxEmitter struct{ spans []trace.Span }

func (e *ctxEmitter) Emit(ctx context.Context, _ messages.Checkpoint, _ time.Time) {
	e.spans = append(e.spans, trace.SpanFromContext(ctx))
}

// A commit that arrives before it can be decided (replay not caught up, or
// the gate still closed) keeps its trace: it is decided later in a `decide`
// span, child of the commit record's span, that holds the decision and under
// which the checkpoint is emitted.
func TestCheckpointDecidedLaterContinuesTheCommitsTrace(t *testing.T) {
	for _, tc := range []struct {
		name string
		// before runs ahead of the commits, after decides them.
		before, after func(*Checkpointer)
	}{
		{"replay caught up later", func(c *Checkpointer) {
			c.SyncsReadToEnd(context.Background())
			c.CheckpointsReadToEnd(context.Background())
			c.ShardAssigned(0)
		}, func(c *Checkpointer) { c.ShardCaughtUp(context.Background(), 0) }},
		{"gate opened later", func(c *Checkpointer) {
			c.ShardAssigned(0)
			c.ShardCaughtUp(context.Background(), 0)
			c.CheckpointsReadToEnd(context.Background())
		}, func(c *Checkpointer) { c.SyncsReadToEnd(context.Background()) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			tracer := tp.Tracer("test")
			em := &ctxEmitter{}
			all, _ := filter.New(".*", "")
			c, err := NewCheckpointer(CheckpointerConfig{SourceAlias: "source", TargetAlias: "target",
				Policy: messages.DefaultReplicationPolicy{}, Topics: all, Groups: all, Emitter: em})
			if err != nil {
				t.Fatal(err)
			}
			orders1 := messages.TopicPartition{Topic: "orders", Partition: 1}
			c.ApplySync(context.Background(), syncOf(orders0, 0, 0))
			c.ApplySync(context.Background(), syncOf(orders1, 0, 0))
			tc.before(c)
			var last trace.SpanContext
			for _, off := range []int64{5, 9} {
				ctx, span := tracer.Start(context.Background(), "process __consumer_offsets")
				c.SourceCommit(ctx, 0, commitRec("g", orders0, off), time.Time{})
				span.End()
				last = span.SpanContext()
			}
			// A commit deleted before the decision leaves nothing behind.
			ctx, span := tracer.Start(context.Background(), "process __consumer_offsets")
			c.SourceCommit(ctx, 0, commitRec("g", orders1, 3), time.Time{})
			span.End()
			c.SourceCommit(ctx, 0, messages.OffsetsRecord{Kind: messages.OffsetCommitRecord, Group: "g", TopicPartition: orders1, Tombstone: true}, time.Time{})
			tc.after(c)

			if len(em.spans) != 1 {
				t.Fatalf("%d checkpoints emitted, want 1", len(em.spans))
			}
			var decide sdktrace.ReadOnlySpan
			for _, s := range rec.Ended() {
				if s.SpanContext().SpanID() == em.spans[0].SpanContext().SpanID() {
					decide = s
				}
			}
			switch {
			case decide == nil:
				t.Fatalf("checkpoint emitted under span %s, which was not recorded", em.spans[0].SpanContext().SpanID())
			case decide.Name() != "decide" || decide.Parent().SpanID() != last.SpanID() || decide.SpanContext().TraceID() != last.TraceID():
				t.Fatalf("checkpoint emitted under %q, child of %s, want `decide`, child of the latest commit's span %s",
					decide.Name(), decide.Parent().SpanID(), last.SpanID())
			}
			if ev := decide.Events(); len(ev) != 1 || eventAttrs(ev[0])["checkpointd.decision"] != "emitted" {
				t.Errorf("decide span events %v, want one emitted decision", ev)
			}
			if n := len(c.undecided); n != 0 {
				t.Errorf("%d undecided commits kept after the decisions", n)
			}
		})
	}
}

// markPropagator writes one header of its own, to show which propagator
// wrote a record's trace context.
type markPropagator struct{ propagation.TraceContext }

func (m markPropagator) Inject(ctx context.Context, c propagation.TextMapCarrier) {
	m.TraceContext.Inject(ctx, c)
	c.Set("x-propagated-by", "mark")
}

// TestOutboxUsesTheGivenPropagator: the record carries the context in the
// form of the propagator the outbox was handed, not the global one.
func TestOutboxUsesTheGivenPropagator(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test")
	pub := &capturePublisher{got: make(chan struct{}, 1)}
	o := NewOutbox(pub, "cps", 4, slog.New(slog.DiscardHandler), WithPropagator(markPropagator{}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- o.Run(ctx, time.Second) }()
	spanCtx, span := tracer.Start(context.Background(), "process __consumer_offsets")
	o.Emit(spanCtx, cp("g", 10, 5), time.Time{})
	span.End()
	<-pub.got
	cancel()
	<-done
	if got := pub.msgs[0].Metadata.Get("x-propagated-by"); got != "mark" {
		t.Errorf("x-propagated-by %q, want mark: the outbox did not use the propagator it was given", got)
	}
	if pub.msgs[0].Metadata.Get("traceparent") == "" {
		t.Error("no traceparent")
	}
}
