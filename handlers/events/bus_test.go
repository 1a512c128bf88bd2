package events_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	"go.opentelemetry.io/otel/trace"

	"github.com/checkpointd/checkpointd/handlers/events"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/event"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func run(t *testing.T, b *events.Bus) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = b.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func decided(group string, up int64) event.CheckpointDecided {
	return event.CheckpointDecided{Group: group, Topic: "orders", Emitted: true, UpstreamOffset: up}
}

func TestTypedHandlerGetsItsKindInOrder(t *testing.T) {
	var mu sync.Mutex
	var got []int64
	h := events.AddNoPublisherHandler("decisions", func(_ context.Context, e event.CheckpointDecided) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, e.UpstreamOffset)
		return nil
	})
	b, err := events.New(events.Config{Logger: quiet}, h)
	if err != nil {
		t.Fatal(err)
	}
	if !b.Wants(event.KindCheckpointDecided) || b.Wants(event.KindOffsetSyncApplied) {
		t.Fatal("Wants does not follow the handler's kind")
	}
	run(t, b)
	for i := range int64(100) {
		b.Publish(decided("g", i))
		b.Publish(event.OffsetSyncApplied{Topic: "orders"}) // nobody takes it
	}
	waitFor(t, "100 decisions", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 100 })
	for i, v := range got {
		if v != int64(i) {
			t.Fatalf("event %d has offset %d: out of order", i, v)
		}
	}
	if st := b.Stats()[0]; st.Handled != 100 || st.Dropped != 0 || st.Failed != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestEventInterfaceHandlerTakesEveryKind(t *testing.T) {
	h := events.AddNoPublisherHandler("all", func(context.Context, event.Event) error { return nil })
	if len(h.Kinds()) != len(event.Kinds()) {
		t.Fatalf("kinds %v, want all of %v", h.Kinds(), event.Kinds())
	}
}

// A slow handler loses events beyond its queue; Publish never waits.
// A burst larger than the queue reaches a fast handler whole: Publish
// waits a moment for room instead of dropping.
func TestBurstReachesAFastHandler(t *testing.T) {
	h := events.AddNoPublisherHandler("noop", func(context.Context, event.CheckpointDecided) error { return nil })
	b, err := events.New(events.Config{Logger: quiet, Queue: 8}, h)
	if err != nil {
		t.Fatal(err)
	}
	run(t, b)
	const n = 5000
	for i := range int64(n) {
		b.Publish(decided("g", i))
	}
	waitFor(t, "the burst to be handled", func() bool { st := b.Stats()[0]; return st.Handled+st.Dropped == n })
	if st := b.Stats()[0]; st.Dropped != 0 {
		t.Fatalf("stats %+v: a no-op handler dropped events of a burst", st)
	}
}

func TestFullQueueDropsWithoutBlocking(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	h := events.AddNoPublisherHandler("slow", func(ctx context.Context, _ event.CheckpointDecided) error {
		select {
		case started <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	})
	b, err := events.New(events.Config{Logger: quiet, Queue: 4}, h)
	if err != nil {
		t.Fatal(err)
	}
	run(t, b)
	b.Publish(decided("g", 0))
	<-started
	start := time.Now()
	for i := int64(1); i < 50; i++ {
		b.Publish(decided("g", i))
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Publish waited %v for a slow handler", d)
	}
	close(release)
	waitFor(t, "the queue to drain", func() bool { st := b.Stats()[0]; return st.Queued == 0 && st.Handled+st.Dropped == 50 })
	st := b.Stats()[0]
	// One in the handler, four queued: the other 45 were dropped.
	if st.Dropped != 45 || st.Handled != 5 {
		t.Fatalf("stats %+v, want 45 dropped and 5 handled", st)
	}
}

func TestErrorsAreRetriedThenDropped(t *testing.T) {
	for _, tt := range []struct {
		name        string
		failures    int // calls that fail before one succeeds
		retries     int
		wantCalls   int
		wantHandled int64
		wantFailed  int64
	}{
		{"succeeds on a retry", 2, 3, 3, 1, 0},
		{"fails every retry", 10, 2, 3, 0, 1},
		{"no retries", 1, -1, 1, 0, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			calls := 0
			h := events.AddNoPublisherHandler("flaky", func(context.Context, event.TargetCommitResult) error {
				mu.Lock()
				defer mu.Unlock()
				calls++
				if calls <= tt.failures {
					return errors.New("webhook down")
				}
				return nil
			})
			b, err := events.New(events.Config{Logger: quiet, Retries: tt.retries, Backoff: time.Millisecond}, h)
			if err != nil {
				t.Fatal(err)
			}
			run(t, b)
			b.Publish(event.TargetCommitResult{Group: "g", Reason: targetgroup.Committed})
			waitFor(t, "the outcome", func() bool { st := b.Stats()[0]; return st.Handled+st.Failed == 1 })
			mu.Lock()
			defer mu.Unlock()
			st := b.Stats()[0]
			if calls != tt.wantCalls || st.Handled != tt.wantHandled || st.Failed != tt.wantFailed {
				t.Fatalf("calls %d, stats %+v; want %d calls, %d handled, %d failed", calls, st, tt.wantCalls, tt.wantHandled, tt.wantFailed)
			}
		})
	}
}

func TestPanicIsAnError(t *testing.T) {
	h := events.AddNoPublisherHandler("panics", func(context.Context, event.OffsetSyncApplied) error { panic("boom") })
	b, err := events.New(events.Config{Logger: quiet, Retries: -1}, h)
	if err != nil {
		t.Fatal(err)
	}
	run(t, b)
	b.Publish(event.OffsetSyncApplied{})
	waitFor(t, "the failure", func() bool { return b.Stats()[0].Failed == 1 })
}

// Middleware wraps only its handler, outermost first, and sees the event's
// trace context in ctx.
func TestPerHandlerMiddleware(t *testing.T) {
	var mu sync.Mutex
	var order []string
	var seen trace.SpanContext
	note := func(name string) events.Middleware {
		return func(next events.HandlerFunc) events.HandlerFunc {
			return func(ctx context.Context, e event.Event) ([]*message.Message, error) {
				mu.Lock()
				order = append(order, name)
				seen = trace.SpanContextFromContext(ctx)
				mu.Unlock()
				return next(ctx, e)
			}
		}
	}
	with := events.AddNoPublisherHandler("with", func(context.Context, event.CheckpointWritten) error {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, "with")
		return nil
	}).AddMiddleware(note("outer"), note("inner"))
	without := events.AddNoPublisherHandler("without", func(context.Context, event.CheckpointWritten) error {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, "without")
		return nil
	})
	b, err := events.New(events.Config{Logger: quiet}, with, without)
	if err != nil {
		t.Fatal(err)
	}
	run(t, b)
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled})
	b.Publish(event.CheckpointWritten{Group: "g", Trace: sc})
	waitFor(t, "both handlers", func() bool { mu.Lock(); defer mu.Unlock(); return len(order) == 4 })
	mu.Lock()
	defer mu.Unlock()
	var withOrder []string
	for _, s := range order {
		if s != "without" {
			withOrder = append(withOrder, s)
		}
	}
	if len(withOrder) != 3 || withOrder[0] != "outer" || withOrder[1] != "inner" || withOrder[2] != "with" {
		t.Fatalf("calls %v, want outer, inner, with (and without, unwrapped)", order)
	}
	if seen.TraceID() != sc.TraceID() {
		t.Fatalf("middleware saw trace %v, want %v", seen.TraceID(), sc.TraceID())
	}
}

// Forward publishes JSON to any Watermill publisher, here gochannel; the
// marshaler reads the event and its trace context back.
func TestForwardToWatermillPublisher(t *testing.T) {
	ps := gochannel.NewGoChannel(gochannel.Config{OutputChannelBuffer: 16}, watermill.NopLogger{})
	defer ps.Close()
	out, err := ps.Subscribe(context.Background(), "checkpointd.events")
	if err != nil {
		t.Fatal(err)
	}
	b, err := events.New(events.Config{Logger: quiet},
		events.Forward("to_gochannel", "checkpointd.events", ps, nil, event.KindCheckpointDecided))
	if err != nil {
		t.Fatal(err)
	}
	run(t, b)
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{3}, SpanID: trace.SpanID{4}, TraceFlags: trace.FlagsSampled})
	want := event.CheckpointDecided{Group: "g", Topic: "orders", Partition: 2, Reason: messages.SkipBehindOldestSync,
		UpstreamOffset: 10, DownstreamOffset: -1, Trace: sc}
	b.Publish(want)
	select {
	case msg := <-out:
		msg.Ack()
		if msg.Metadata.Get(events.MetaKind) != "checkpoint_decided" || msg.Metadata.Get(events.MetaGroup) != "g" ||
			msg.Metadata.Get("traceparent") == "" {
			t.Fatalf("metadata %v", msg.Metadata)
		}
		got, err := events.JSONMarshaler{}.Unmarshal(msg)
		if err != nil {
			t.Fatal(err)
		}
		cd, ok := got.(event.CheckpointDecided)
		if !ok || cd.Trace.TraceID() != sc.TraceID() || cd.Trace.SpanID() != sc.SpanID() {
			t.Fatalf("round trip: got %+v, want trace %v", got, sc)
		}
		cd.Trace, want.Trace = trace.SpanContext{}, trace.SpanContext{}
		if !reflect.DeepEqual(cd, want) {
			t.Fatalf("round trip: got %+v, want %+v", cd, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("nothing forwarded")
	}
}

// AddHandler publishes what the handler returns, and a failed publish is
// the handler's error.
func TestAddHandlerPublishesItsMessages(t *testing.T) {
	pub := &flakyPublisher{fail: 1}
	h := events.AddHandler("alerts", "alerts", pub, func(_ context.Context, e event.TargetCommitResult) ([]*message.Message, error) {
		return []*message.Message{message.NewMessage(watermill.NewUUID(), []byte(e.Group))}, nil
	})
	b, err := events.New(events.Config{Logger: quiet, Backoff: time.Millisecond}, h)
	if err != nil {
		t.Fatal(err)
	}
	run(t, b)
	b.Publish(event.TargetCommitResult{Group: "g"})
	waitFor(t, "the publish", func() bool { return b.Stats()[0].Handled == 1 })
	if pub.count() != 1 || pub.calls() != 2 {
		t.Fatalf("published %d in %d calls, want 1 in 2 (one failed)", pub.count(), pub.calls())
	}
}

type flakyPublisher struct {
	mu             sync.Mutex
	fail, n, tries int
}

func (p *flakyPublisher) Publish(_ string, msgs ...*message.Message) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tries++
	if p.tries <= p.fail {
		return errors.New("broker away")
	}
	p.n += len(msgs)
	return nil
}
func (p *flakyPublisher) Close() error { return nil }
func (p *flakyPublisher) count() int   { p.mu.Lock(); defer p.mu.Unlock(); return p.n }
func (p *flakyPublisher) calls() int   { p.mu.Lock(); defer p.mu.Unlock(); return p.tries }

func TestValidate(t *testing.T) {
	ok := func(string) *events.Handler {
		return events.AddNoPublisherHandler("x", func(context.Context, event.CheckpointDecided) error { return nil })
	}
	named := func(name string) *events.Handler {
		return events.AddNoPublisherHandler(name, func(context.Context, event.CheckpointDecided) error { return nil })
	}
	for _, tt := range []struct {
		name    string
		hs      []*events.Handler
		wantErr bool
	}{
		{"one", []*events.Handler{ok("")}, false},
		{"two names", []*events.Handler{named("a"), named("b")}, false},
		{"same name twice", []*events.Handler{named("a"), named("a")}, true},
		{"no name", []*events.Handler{named("")}, true},
		{"nil", []*events.Handler{nil}, true},
		{"publisher without topic", []*events.Handler{events.Forward("f", "", &flakyPublisher{}, nil)}, true},
		{"unknown kind", []*events.Handler{events.Forward("f", "t", &flakyPublisher{}, nil, event.Kind(99))}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := events.Validate(tt.hs, nil)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Validate: %v, want error %v", err, tt.wantErr)
			}
			if _, err := events.New(events.Config{}, tt.hs...); (err != nil) != tt.wantErr {
				t.Fatalf("New: %v, want error %v", err, tt.wantErr)
			}
		})
	}
}
