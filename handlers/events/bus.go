package events

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"
	"go.opentelemetry.io/otel/trace"

	"github.com/checkpointd/checkpointd/messages/event"
)

// Defaults of Config.
const (
	DefaultQueue   = 1024
	DefaultRetries = 3
	// DefaultBackoff is the first wait before a retry; it doubles up to
	// MaxBackoff, as the outbox's retries of a checkpoint batch do.
	DefaultBackoff = 100 * time.Millisecond
	MaxBackoff     = 10 * time.Second
	// DefaultFullWait is how long Publish waits for room in a full queue
	// before it drops, once per spell of falling behind.
	DefaultFullWait = 5 * time.Millisecond
)

// Config tunes a Bus. Zero values take the defaults.
type Config struct {
	Logger  *slog.Logger
	Queue   int           // events each handler may have waiting; more are dropped
	Retries int           // calls after the first for an event that fails; <0: none
	Backoff time.Duration // first wait before a retry
	// FullWait is how long Publish waits for room in a handler's full
	// queue before dropping; <0: no wait. It waits only until the first
	// drop, and again once the queue has run empty.
	FullWait time.Duration
}

// Bus hands events to the handlers that take their kind. Publish never
// blocks; each handler runs in a goroutine of its own once Run is called.
type Bus struct {
	cfg    Config
	byKind [16][]*runner // indexed by event.Kind; Kinds stay well below 16
	all    []*runner
}

// runner is one handler with its queue and counters.
type runner struct {
	h       *Handler
	fn      HandlerFunc
	queue   chan event.Event
	dropped atomic.Int64
	failed  atomic.Int64
	handled atomic.Int64
	warned  atomic.Bool // a drop was logged since the queue last ran empty
}

// Stats are one handler's counters since the bus was made.
type Stats struct {
	Handler string
	Queued  int   // events waiting now
	Handled int64 // events the handler took without error (retries included)
	Failed  int64 // events dropped after the last retry failed
	Dropped int64 // events dropped because the queue was full
}

// New makes a bus for hs, which must pass Validate.
func New(cfg Config, hs ...*Handler) (*Bus, error) {
	if err := Validate(hs, nil); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Queue <= 0 {
		cfg.Queue = DefaultQueue
	}
	if cfg.Retries == 0 {
		cfg.Retries = DefaultRetries
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.FullWait == 0 {
		cfg.FullWait = DefaultFullWait
	}
	b := &Bus{cfg: cfg}
	for _, h := range hs {
		r := &runner{h: h, fn: h.chain(), queue: make(chan event.Event, cfg.Queue)}
		b.all = append(b.all, r)
		for _, k := range h.kinds {
			b.byKind[k] = append(b.byKind[k], r)
		}
	}
	return b, nil
}

// Wants reports whether a handler takes kind k: producers skip building
// events nobody takes.
func (b *Bus) Wants(k event.Kind) bool { return b != nil && len(b.byKind[k]) > 0 }

// Publish queues e for every handler of its kind, without waiting: a
// handler whose queue is full loses the event (Stats.Dropped).
func (b *Bus) Publish(e event.Event) {
	for _, r := range b.byKind[e.Kind()] {
		select {
		case r.queue <- e:
			continue
		default:
		}
		if b.waitForRoom(r, e) {
			continue
		}
		if r.dropped.Add(1); !r.warned.Swap(true) {
			b.cfg.Logger.Warn("event handler is behind: dropping events until its queue empties",
				"handler", r.h.name, "queue", cap(r.queue), "kind", e.Kind().String())
		}
	}
}

// waitForRoom queues e if r's queue has room within FullWait, unless r is
// behind already. A burst (a first start decides every pair at once) fills
// a queue before the handler's goroutine gets a CPU: measured, a no-op
// handler dropped 3,371 of the 4,000 decisions of a first start without
// this wait. Waiting only until the first drop bounds what a stuck
// handler costs the pipeline to one FullWait per spell of falling behind.
func (b *Bus) waitForRoom(r *runner, e event.Event) bool {
	if b.cfg.FullWait <= 0 || r.warned.Load() {
		return false
	}
	t := time.NewTimer(b.cfg.FullWait)
	defer t.Stop()
	select {
	case r.queue <- e:
		return true
	case <-t.C:
		return false
	}
}

// Stats reports every handler's counters, in registration order.
func (b *Bus) Stats() []Stats {
	out := make([]Stats, len(b.all))
	for i, r := range b.all {
		out[i] = Stats{Handler: r.h.name, Queued: len(r.queue), Handled: r.handled.Load(),
			Failed: r.failed.Load(), Dropped: r.dropped.Load()}
	}
	return out
}

// Run runs the handlers until ctx ends. Events still queued then are
// dropped: delivery is at most once.
func (b *Bus) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, r := range b.all {
		wg.Go(func() { b.run(ctx, r) })
	}
	wg.Wait()
	return nil
}

func (b *Bus) run(ctx context.Context, r *runner) {
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-r.queue:
			b.deliver(ctx, r, e)
			if len(r.queue) == 0 {
				r.warned.Store(false)
			}
		}
	}
}

// deliver calls the handler with e until it succeeds or the retries are
// spent; the handler's context carries the event's trace context.
func (b *Bus) deliver(ctx context.Context, r *runner, e event.Event) {
	hctx := ctx
	if sc := e.SpanContext(); sc.IsValid() {
		hctx = trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	bo := &backoff.ExponentialBackOff{InitialInterval: b.cfg.Backoff, MaxInterval: MaxBackoff,
		Multiplier: 2, RandomizationFactor: 0.2}
	bo.Reset()
	for attempt := 0; ; attempt++ {
		err := b.call(hctx, r, e)
		if err == nil {
			r.handled.Add(1)
			return
		}
		if attempt >= b.cfg.Retries || ctx.Err() != nil {
			r.failed.Add(1)
			b.cfg.Logger.Warn("event handler failed: event dropped", "handler", r.h.name,
				"kind", e.Kind().String(), "group", e.SourceGroup(), "attempts", attempt+1, "error", err)
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(bo.NextBackOff()):
		}
	}
}

// call runs the handler once and publishes what it returns; a panic is an
// error, as Watermill's Recoverer makes it.
func (b *Bus) call(ctx context.Context, r *runner, e event.Event) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	msgs, err := r.fn(ctx, e)
	if err != nil {
		return err
	}
	if r.h.publisher == nil || len(msgs) == 0 {
		return nil
	}
	if err := r.h.publisher.Publish(r.h.publishTopic, msgs...); err != nil {
		return fmt.Errorf("publish to %s: %w", r.h.publishTopic, err)
	}
	return nil
}
