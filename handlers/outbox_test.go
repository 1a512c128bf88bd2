package handlers

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
)

// gatedPublisher records every batch it is given. While gate is set, each
// call waits for a value on it; fail decides per call whether it fails.
type gatedPublisher struct {
	gate    chan struct{}
	entered chan struct{}
	fail    func(call int) bool

	mu      sync.Mutex
	calls   int
	batches [][]messages.Checkpoint
}

func (p *gatedPublisher) Publish(_ string, msgs ...*message.Message) error {
	if p.entered != nil {
		p.entered <- struct{}{}
	}
	if p.gate != nil {
		<-p.gate
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	if p.fail != nil && p.fail(p.calls) {
		return errors.New("broker down")
	}
	batch := make([]messages.Checkpoint, len(msgs))
	for i, m := range msgs {
		cp, err := messages.DecodeCheckpoint([]byte(m.Metadata.Get(envelope.MetaKey)), m.Payload)
		if err != nil {
			panic(err)
		}
		batch[i] = cp
	}
	p.batches = append(p.batches, batch)
	return nil
}

func (p *gatedPublisher) Close() error { return nil }

func (p *gatedPublisher) written() [][]messages.Checkpoint {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.batches
}

func cpOn(group string, partition int32, up, down int64) messages.Checkpoint {
	return messages.Checkpoint{Group: group, TopicPartition: messages.TopicPartition{Topic: "source.orders", Partition: partition},
		UpstreamOffset: up, DownstreamOffset: down}
}

func runOutbox(t *testing.T, o *Outbox) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = o.Run(ctx, time.Second)
	}()
	return func() {
		cancel()
		<-done
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// While a batch is being written, newer decisions of one key replace each
// other: the next batch carries only the newest, once.
func TestOutboxCoalescesPerKey(t *testing.T) {
	pub := &gatedPublisher{gate: make(chan struct{}), entered: make(chan struct{}, 16)}
	o := NewOutbox(pub, "cps", 0, slog.New(slog.DiscardHandler))
	stop := runOutbox(t, o)
	defer stop()

	o.Emit(context.Background(), cpOn("g", 0, 1, 1), time.Time{})
	<-pub.entered // the first batch is in flight
	for up := int64(2); up <= 100; up++ {
		o.Emit(context.Background(), cpOn("g", 0, up, up), time.Time{})
		o.Emit(context.Background(), cpOn("h", 1, up, up), time.Time{})
	}
	if got := o.Len(); got != 3 {
		t.Errorf("Len = %d with 2 keys queued and 1 in flight, want 3", got)
	}
	pub.gate <- struct{}{}
	<-pub.entered
	pub.gate <- struct{}{}
	waitFor(t, "two batches", func() bool { return len(pub.written()) == 2 })

	b := pub.written()
	if len(b[0]) != 1 || b[0][0] != cpOn("g", 0, 1, 1) {
		t.Errorf("first batch %+v, want the first checkpoint alone", b[0])
	}
	want := map[messages.Checkpoint]bool{cpOn("g", 0, 100, 100): true, cpOn("h", 1, 100, 100): true}
	if len(b[1]) != 2 || !want[b[1][0]] || !want[b[1][1]] || b[1][0] == b[1][1] {
		t.Errorf("second batch %+v, want the newest of each key once", b[1])
	}
	st := o.Stats()
	if st.Superseded != 2*98 || st.Published != 3 || st.Batches != 2 || st.Queued != 0 {
		t.Errorf("stats %+v, want 196 superseded, 3 published in 2 batches, 0 queued", st)
	}
}

// Emit never waits for the broker, and what waits is bounded by the number
// of keys, not by the number of decisions.
func TestOutboxEmitNeverBlocks(t *testing.T) {
	pub := &gatedPublisher{gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	o := NewOutbox(pub, "cps", 0, slog.New(slog.DiscardHandler))
	stop := runOutbox(t, o)
	defer func() {
		close(pub.gate)
		stop()
	}()
	o.Emit(context.Background(), cpOn("g0", 0, 0, 0), time.Time{})
	<-pub.entered // the publisher now hangs, as a stopped broker does
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 200_000 {
			o.Emit(context.Background(), cpOn("g"+strconv.Itoa(i%50), int32(i%4), int64(i), int64(i)), time.Time{})
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Emit blocked while the publisher hung")
	}
	if got := o.Len(); got > 50*4+1 {
		t.Errorf("Len = %d after 200,000 decisions over 200 keys, want at most 201", got)
	}
}

// Batches hold at most maxBatch checkpoints, each key at most once.
func TestOutboxBatchLimit(t *testing.T) {
	pub := &gatedPublisher{gate: make(chan struct{}), entered: make(chan struct{}, 16)}
	o := NewOutbox(pub, "cps", 100, slog.New(slog.DiscardHandler))
	stop := runOutbox(t, o)
	defer stop()
	o.Emit(context.Background(), cpOn("first", 0, 0, 0), time.Time{})
	<-pub.entered
	for i := range 250 {
		o.Emit(context.Background(), cpOn("g"+strconv.Itoa(i), 0, 1, 1), time.Time{})
	}
	close(pub.gate)
	waitFor(t, "251 checkpoints", func() bool { return o.Stats().Published == 251 })
	var sizes []int
	for _, b := range pub.written() {
		sizes = append(sizes, len(b))
		seen := map[string]bool{}
		for _, cp := range b {
			if seen[cp.Group] {
				t.Errorf("key %s twice in one batch", cp.Group)
			}
			seen[cp.Group] = true
		}
	}
	if len(sizes) != 4 || sizes[0] != 1 || sizes[1] != 100 || sizes[2] != 100 || sizes[3] != 50 {
		t.Errorf("batch sizes %v, want [1 100 100 50]", sizes)
	}
}

// Under random failures and racing decisions, every key's records land in
// the order decided (never lower), and the last one written for each key is
// the last one decided.
func TestOutboxOrderPerKeyUnderFailures(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4, 5} {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, seed))
			var mu sync.Mutex
			pub := &gatedPublisher{fail: func(int) bool {
				mu.Lock()
				defer mu.Unlock()
				return rng.IntN(3) == 0
			}}
			o := NewOutbox(pub, "cps", 7, slog.New(slog.DiscardHandler))
			o.backoff = time.Microsecond
			stop := runOutbox(t, o)
			defer stop()

			const keys, perKey = 20, 300
			last := map[string]int64{}
			for i := range keys * perKey {
				g := "g" + strconv.Itoa(i%keys)
				up := int64(i / keys)
				o.Emit(context.Background(), cpOn(g, 0, up, up), time.Time{})
				last[g] = up
				if i%97 == 0 {
					time.Sleep(50 * time.Microsecond)
				}
			}
			waitFor(t, "the queue to empty", func() bool { return o.Len() == 0 })
			seen := map[string]int64{}
			for _, b := range pub.written() {
				for _, cp := range b {
					if prev, ok := seen[cp.Group]; ok && cp.UpstreamOffset <= prev {
						t.Fatalf("key %s: %d written after %d", cp.Group, cp.UpstreamOffset, prev)
					}
					seen[cp.Group] = cp.UpstreamOffset
				}
			}
			for g, up := range last {
				if seen[g] != up {
					t.Errorf("key %s: last written %d, want the last decided %d", g, seen[g], up)
				}
			}
			st := o.Stats()
			if st.Published+st.Superseded != keys*perKey {
				t.Errorf("published %d + superseded %d != %d decided", st.Published, st.Superseded, keys*perKey)
			}
		})
	}
}

// A replaced checkpoint's send span ends, marked superseded, not as failed;
// the one written ends on the ack.
func TestOutboxSupersededSendSpan(t *testing.T) {
	useTraceContext(t)
	rec := tracetest.NewSpanRecorder()
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test")
	pub := &gatedPublisher{gate: make(chan struct{}), entered: make(chan struct{}, 4)}
	o := NewOutbox(pub, "cps", 0, slog.New(slog.DiscardHandler))
	stop := runOutbox(t, o)
	defer stop()

	ctx, span := tracer.Start(context.Background(), "process __consumer_offsets")
	o.Emit(ctx, cpOn("x", 0, 1, 1), time.Time{})
	<-pub.entered
	o.Emit(ctx, cpOn("g", 0, 2, 2), time.Time{})
	o.Emit(ctx, cpOn("g", 0, 3, 3), time.Time{})
	span.End()
	close(pub.gate)
	waitFor(t, "two records", func() bool { return o.Stats().Published == 2 })

	var superseded, written int
	for _, s := range rec.Ended() {
		if s.Name() != "send cps" {
			continue
		}
		isSuperseded := false
		for _, kv := range s.Attributes() {
			if kv.Key == SupersededKey && kv.Value.AsBool() {
				isSuperseded = true
			}
		}
		if s.Status().Code != 0 {
			t.Errorf("send span status %v, want unset", s.Status())
		}
		if isSuperseded {
			superseded++
		} else {
			written++
		}
	}
	if superseded != 1 || written != 2 {
		t.Errorf("%d superseded and %d written send spans ended, want 1 and 2", superseded, written)
	}
}

// A batch that fails many times logs its first failure and attempts 2, 4,
// 8, ..., not each retry, and one line when it is written at last.
func TestOutboxRetryLogging(t *testing.T) {
	const failures = 20
	pub := &gatedPublisher{fail: func(call int) bool { return call <= failures }}
	var buf bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &buf, mu: &mu}, nil))
	o := NewOutbox(pub, "cps", 0, logger)
	o.backoff = time.Microsecond
	stop := runOutbox(t, o)
	defer stop()
	o.Emit(context.Background(), cpOn("g", 0, 1, 1), time.Time{})
	waitFor(t, "the checkpoint to be written", func() bool { return o.Stats().Published == 1 })

	mu.Lock()
	out := buf.String()
	mu.Unlock()
	var attempts []string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "publishing checkpoints failed; retrying") {
			_, a, _ := strings.Cut(line, "attempt=")
			a, _, _ = strings.Cut(a, " ")
			attempts = append(attempts, a)
		}
	}
	if got, want := strings.Join(attempts, ","), "1,2,4,8,16"; got != want {
		t.Errorf("failure lines for attempts %s, want %s; log:\n%s", got, want, out)
	}
	if !strings.Contains(out, "publishing checkpoints succeeded after retries") || !strings.Contains(out, "attempts=21") {
		t.Errorf("no recovery line naming 21 attempts; log:\n%s", out)
	}
	if st := o.Stats(); st.Failures != failures {
		t.Errorf("failures = %d, want %d", st.Failures, failures)
	}
}

// lockedWriter serializes writes to w: the outbox logs from its own goroutine.
type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestOutboxForgetDropsQueuedGroups(t *testing.T) {
	o := NewOutbox(nil, "cp", 10, nil)
	for _, g := range []string{"a1", "b1", "a2"} {
		o.Emit(context.Background(), messages.Checkpoint{Group: g, TopicPartition: messages.TopicPartition{Topic: "t"}, UpstreamOffset: 1, DownstreamOffset: 1}, time.Time{})
	}
	if n := o.Forget(func(g string) bool { return g[0] == 'a' }); n != 2 {
		t.Fatalf("Forget dropped %d, want 2", n)
	}
	batch := o.take()
	if len(batch) != 1 || batch[0].key.group != "b1" {
		t.Fatalf("left %+v, want b1 only", batch)
	}
}
