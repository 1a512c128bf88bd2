package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/cenkalti/backoff/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

// DefaultOutboxBatch is how many checkpoints one publish call carries at most.
const DefaultOutboxBatch = 2048

// maxOutboxBackoff is the longest wait between two attempts at a batch.
const maxOutboxBackoff = 10 * time.Second

// Outbox holds the checkpoints decided and not yet written, at most one per
// record key (group, downstream partition), and writes them in batches.
//
// A checkpoint is the latest translation of its key, so a newer decision
// replaces a queued one: when the target is slow, fewer and fresher records
// go out instead of a growing backlog, and Emit never blocks the handlers.
// Order per key holds because a key is in at most one batch at a time and a
// batch is retried until written or superseded before the next one starts.
// Keys are independent (the topic is compacted per key), so the order across
// keys is free.
//
// Nothing is lost if the process dies with checkpoints still queued: a
// restart replays the source commits and the checkpoints topic and decides
// them again.
type Outbox struct {
	pub      message.Publisher
	topic    string
	maxBatch int
	logger   *slog.Logger
	prop     propagation.TextMapPropagator // writes the send span's context into the record
	wake     chan struct{}
	backoff  time.Duration // first wait before a retry; it doubles up to maxOutboxBackoff

	// shards and fence, when set, keep a batch from being written unless
	// this instance still owns its groups' shards (WithOwnership).
	shards *Shards
	fence  Fence

	mu      sync.Mutex
	pending map[outboxKey]outboxEntry // by record key
	order   []outboxKey               // keys in pending, oldest first
	flying  int                       // checkpoints in the batch being written

	stats outboxCounters
}

// outboxKey is a checkpoint's record key, (group, downstream partition), as
// fields: no encoded key is kept for a queued checkpoint.
type outboxKey struct {
	group string
	tp    messages.TopicPartition
}

// outboxEntry is a queued checkpoint. It stays this small until its batch is
// taken, when it becomes a Watermill message: a first start queues one per
// (group, partition), 100,000 at 1k groups × 100 partitions, and messages
// would cost several times the memory.
type outboxEntry struct {
	upstream, downstream int64
	metadata             string
	committedAt          int64           // source commit time, Unix ms; 0 if unknown
	ctx                  context.Context // holds the send span; nil when not traced
	shard                int32           // with WithOwnership: the group's shard
	epoch                uint64          // and the assignment it was decided under
}

// outgoing is a checkpoint of the batch being written.
type outgoing struct {
	key   outboxKey
	entry outboxEntry
	msg   *message.Message
}

type outboxCounters struct {
	published, superseded, batches, failures, disowned atomic.Int64
}

// OutboxStats are the outbox's counters since it was made.
type OutboxStats struct {
	Queued     int   // decided and not yet written (pending and in flight)
	Published  int64 // checkpoint records acknowledged by the broker
	Superseded int64 // queued checkpoints replaced by a newer one of the same key
	Batches    int64 // publish calls that succeeded
	Failures   int64 // publish calls that failed (and were retried)
	Disowned   int64 // checkpoints dropped because their shard moved to another instance
}

// OutboxOption configures an Outbox.
type OutboxOption func(*Outbox)

// WithPropagator sets how a checkpoint record carries its trace context
// (W3C Trace Context when not given): the pipeline passes the one its tracing
// was set up with.
func WithPropagator(p propagation.TextMapPropagator) OutboxOption {
	return func(o *Outbox) {
		if p != nil {
			o.prop = p
		}
	}
}

// WithOwnership makes the outbox write a checkpoint only while this
// instance owns its group's shard under the assignment it was decided in
// (others are dropped: the shard's new owner decides them again), and only
// after fence confirmed the batch's shards: an instance that was paused
// while its shards moved on writes none of its stale decisions.
func WithOwnership(shards *Shards, fence Fence) OutboxOption {
	return func(o *Outbox) { o.shards, o.fence = shards, fence }
}

// NewOutbox makes an outbox for topic that publishes at most maxBatch
// checkpoints per call (DefaultOutboxBatch when maxBatch ≤ 0).
func NewOutbox(pub message.Publisher, topic string, maxBatch int, logger *slog.Logger, opts ...OutboxOption) *Outbox {
	if logger == nil {
		logger = slog.Default()
	}
	if maxBatch <= 0 {
		maxBatch = DefaultOutboxBatch
	}
	o := &Outbox{
		pub: pub, topic: topic, maxBatch: maxBatch, logger: logger, backoff: 100 * time.Millisecond,
		wake:    make(chan struct{}, 1),
		pending: make(map[outboxKey]outboxEntry),
		prop:    propagation.TraceContext{},
	}
	for _, opt := range opts {
		opt(o)
	}
	return o
}

// Emit queues a checkpoint, replacing one of the same key not yet written;
// it never blocks. The trace context of ctx travels with it, and so does
// committedAt, unless zero, in the envelope.HeaderCommitTime header.
//
// When ctx holds a span (the `process <topic>` span of the record that led to
// the checkpoint), Emit starts a PRODUCER `send <topic>` span as its child,
// from the same tracer provider, so a checkpoint is traced exactly when the
// record that caused it is. The record carries the send span's context, and
// the span ends when the broker acknowledges the write (or when a newer
// checkpoint of the key replaces it): it covers the wait in the queue, which
// is where a slow target shows.
func (o *Outbox) Emit(ctx context.Context, cp messages.Checkpoint, committedAt time.Time) {
	e := outboxEntry{upstream: cp.UpstreamOffset, downstream: cp.DownstreamOffset, metadata: cp.Metadata}
	if !committedAt.IsZero() {
		e.committedAt = committedAt.UnixMilli()
	}
	if ctx = o.startSend(ctx, cp, cp.ValueSize()); trace.SpanContextFromContext(ctx).IsValid() {
		e.ctx = context.WithoutCancel(ctx)
	}
	key := outboxKey{cp.Group, cp.TopicPartition}
	if o.shards != nil {
		e.shard, e.epoch, _ = o.shards.Owner(cp.Group)
	}

	o.mu.Lock()
	old, queued := o.pending[key]
	o.pending[key] = e
	if !queued {
		o.order = append(o.order, key)
	}
	o.mu.Unlock()
	if queued {
		o.supersede(old.ctx)
	}
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// message makes the record of the checkpoint queued under key: key and
// value as MM2 writes them, the commit time and the send span's trace
// context as headers.
func (e outboxEntry) message(key outboxKey, prop propagation.TextMapPropagator) *message.Message {
	cp := messages.Checkpoint{Group: key.group, TopicPartition: key.tp,
		UpstreamOffset: e.upstream, DownstreamOffset: e.downstream, Metadata: e.metadata}
	msg := message.NewMessage(cp.Group+"/"+cp.TopicPartition.String()+"/"+strconv.FormatInt(cp.UpstreamOffset, 10), cp.Value())
	msg.Metadata.Set(envelope.MetaKey, string(cp.Key()))
	if e.committedAt != 0 {
		msg.Metadata.Set(envelope.HeaderCommitTime, strconv.FormatInt(e.committedAt, 10))
	}
	if e.ctx != nil {
		prop.Inject(e.ctx, propagation.MapCarrier(msg.Metadata))
		msg.SetContext(e.ctx)
	}
	return msg
}

// supersede ends the send span (in ctx, if any) of a checkpoint that a newer
// one of its key replaced before it was written.
func (o *Outbox) supersede(ctx context.Context) {
	o.stats.superseded.Add(1)
	if ctx == nil {
		return
	}
	span := trace.SpanFromContext(ctx)
	if span.IsRecording() {
		span.AddEvent("superseded")
		span.SetAttributes(SupersededKey.Bool(true))
	}
	span.End()
}

// startSend starts the send span of cp under the span in ctx, if that span
// belongs to a real tracer. Attributes are set only on a recording span, so
// a trace that is not sampled costs one span start.
func (o *Outbox) startSend(ctx context.Context, cp messages.Checkpoint, size int) context.Context {
	parent := trace.SpanFromContext(ctx)
	if !parent.SpanContext().IsValid() {
		return ctx
	}
	ctx, span := parent.TracerProvider().Tracer(messages.TracerScope).Start(ctx, "send "+o.topic, trace.WithSpanKind(trace.SpanKindProducer))
	if span.IsRecording() {
		span.SetAttributes(
			semconv.MessagingSystemKafka,
			semconv.MessagingOperationTypeSend,
			semconv.MessagingOperationName("send"),
			semconv.MessagingDestinationName(o.topic),
			// The checkpoints topic has one partition (see kafkalog.CheckpointMarshaler).
			semconv.MessagingDestinationPartitionID("0"),
			semconv.MessagingMessageBodySize(size),
			GroupKey.String(cp.Group),
			DownstreamTopicKey.String(cp.TopicPartition.Topic),
			PartitionKey.Int(int(cp.TopicPartition.Partition)),
			UpstreamOffsetKey.Int64(cp.UpstreamOffset),
			DownstreamOffsetKey.Int64(cp.DownstreamOffset),
		)
	}
	return ctx
}

// Len is the number of checkpoints decided and not yet written.
func (o *Outbox) Len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.pending) + o.flying
}

// Stats returns the outbox's counters.
func (o *Outbox) Stats() OutboxStats {
	return OutboxStats{
		Queued:     o.Len(),
		Published:  o.stats.published.Load(),
		Superseded: o.stats.superseded.Load(),
		Batches:    o.stats.batches.Load(),
		Failures:   o.stats.failures.Load(),
		Disowned:   o.stats.disowned.Load(),
	}
}

// Run publishes until ctx is done, then gives what is still queued up to
// drain to be published, and returns.
func (o *Outbox) Run(ctx context.Context, drain time.Duration) error {
	for {
		if ctx.Err() != nil {
			return o.drain(drain)
		}
		if batch := o.take(); len(batch) > 0 {
			o.publish(ctx, batch)
			continue
		}
		select {
		case <-o.wake:
		case <-ctx.Done():
			return o.drain(drain)
		}
	}
}

// take removes up to maxBatch of the oldest queued checkpoints, marks them
// in flight and makes their messages.
// Forget drops the queued checkpoints of the groups drop reports and returns
// how many went: their shard moved to another instance, which decides them
// from now on, and a late record of the old owner could only be older than
// its new owner's. A batch already being written is not recalled.
func (o *Outbox) Forget(drop func(group string) bool) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	kept := o.order[:0]
	n := 0
	for _, key := range o.order {
		if drop(key.group) {
			delete(o.pending, key)
			n++
			continue
		}
		kept = append(kept, key)
	}
	clear(o.order[len(kept):])
	o.order = kept
	return n
}

func (o *Outbox) take() []outgoing {
	o.mu.Lock()
	n := min(len(o.order), o.maxBatch)
	if n == 0 {
		o.mu.Unlock()
		return nil
	}
	batch := make([]outgoing, n)
	for i, key := range o.order[:n] {
		batch[i] = outgoing{key: key, entry: o.pending[key]}
		delete(o.pending, key)
	}
	clear(o.order[:n]) // the backing array outlives the keys taken
	o.order = o.order[n:]
	if len(o.order) == 0 {
		o.order = nil // let the backing array go after a burst
	}
	o.flying = n
	o.mu.Unlock()
	for i := range batch {
		batch[i].msg = batch[i].entry.message(batch[i].key, o.prop)
	}
	return batch
}

func (o *Outbox) drain(d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for ctx.Err() == nil {
		batch := o.take()
		if len(batch) == 0 {
			return nil
		}
		o.publish(ctx, batch)
	}
	o.mu.Lock()
	left := make([]outboxEntry, 0, len(o.pending))
	for _, key := range o.order {
		left = append(left, o.pending[key])
	}
	o.pending, o.order = make(map[outboxKey]outboxEntry), nil
	o.mu.Unlock()
	if len(left) > 0 {
		o.logger.Warn("shutdown: checkpoints left unpublished; they are decided again on restart", "count", len(left))
		for _, e := range left {
			endSend(e.ctx, errUnpublished)
		}
	}
	return nil
}

var errUnpublished = errors.New("checkpoint not published before shutdown; decided again on restart")

// endSend ends the send span in ctx (a no-op without one), as failed when
// err is not nil.
func endSend(ctx context.Context, err error) {
	if ctx == nil {
		return
	}
	span := trace.SpanFromContext(ctx)
	if err != nil && span.IsRecording() {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(semconv.ErrorTypeKey.String("unpublished"))
	}
	span.End()
}

// publish writes a batch, retrying with backoff until it is written or ctx
// ends: skipping a checkpoint would leave a gap that only a later commit
// fills. Before each retry, checkpoints replaced by a newer decision in the
// meantime leave the batch; the newer ones go out in a later batch.
func (o *Outbox) publish(ctx context.Context, batch []outgoing) {
	// Jitter: instances that lost the same broker do not retry in step.
	bo := &backoff.ExponentialBackOff{InitialInterval: o.backoff, MaxInterval: maxOutboxBackoff,
		Multiplier: 2, RandomizationFactor: 0.2}
	msgs := make([]*message.Message, len(batch))
	for attempt := 1; ; attempt++ {
		if batch = o.dropDisowned(batch); len(batch) == 0 {
			o.landed()
			return
		}
		msgs = msgs[:len(batch)]
		for i := range batch {
			msgs[i] = batch[i].msg
		}
		err := o.confirmOwner(ctx, batch)
		wait := time.Duration(0)
		if err == nil {
			err = o.publishChecked(ctx, batch, msgs)
		}
		if errors.Is(err, errNotConfirmed) {
			wait = fenceRetry // a rebalance passes soon; the backoff is for brokers
		}
		if err == nil {
			if attempt > 1 {
				o.logger.Info("publishing checkpoints succeeded after retries", "topic", o.topic, "checkpoints", len(batch), "attempts", attempt)
			}
			o.stats.batches.Add(1)
			o.stats.published.Add(int64(len(batch)))
			o.landed()
			for _, out := range batch {
				endSend(out.entry.ctx, nil)
			}
			return
		}
		if wait == 0 { // a refused write; an unconfirmed shard is no failure of the target
			o.stats.failures.Add(1)
			// Only what did not land is written again, so each record is
			// written (and counted as published) once when it lands.
			batch = o.keepUnwritten(batch, err)
			if len(batch) == 0 {
				o.landed()
				return
			}
		}
		// The first failure and then attempts 2, 4, 8, ...: an outage of
		// minutes gives a handful of lines, not one per retry.
		if attempt&(attempt-1) == 0 {
			o.logger.Error("publishing checkpoints failed; retrying", "topic", o.topic, "checkpoints", len(batch), "attempt", attempt, "error", err)
		}
		for _, out := range batch {
			if out.entry.ctx != nil {
				trace.SpanFromContext(out.entry.ctx).AddEvent("retry",
					trace.WithAttributes(attribute.Int("attempt", attempt), attribute.String("error", err.Error())))
			}
		}
		if wait == 0 {
			wait = bo.NextBackOff()
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			o.giveBack(batch)
			return
		}
		if batch = o.dropSuperseded(batch); len(batch) == 0 {
			o.landed()
			return
		}
	}
}

// partialWrite is a publish error that says which messages were not
// acknowledged; the others were (kafkalog.PartialWriteError).
type partialWrite interface{ Unwritten() []*message.Message }

// keepUnwritten counts as published, and ends the spans of, the checkpoints
// of a failed batch that the error says did land, and returns the others.
// An error that does not say keeps them all.
func (o *Outbox) keepUnwritten(batch []outgoing, err error) []outgoing {
	var pw partialWrite
	if !errors.As(err, &pw) {
		return batch
	}
	failed := make(map[*message.Message]bool, len(pw.Unwritten()))
	for _, m := range pw.Unwritten() {
		failed[m] = true
	}
	keep := batch[:0]
	var landed int64
	for _, out := range batch {
		if failed[out.msg] {
			keep = append(keep, out)
			continue
		}
		landed++
		endSend(out.entry.ctx, nil)
	}
	o.stats.published.Add(landed)
	o.mu.Lock()
	o.flying = len(keep)
	o.mu.Unlock()
	return keep
}

// dropDisowned removes from a batch the checkpoints of groups whose shard
// this instance no longer owns under the assignment they were decided in.
func (o *Outbox) dropDisowned(batch []outgoing) []outgoing {
	if o.shards == nil {
		return batch
	}
	keep := batch[:0]
	for _, out := range batch {
		if !o.shards.Held(out.entry.shard, out.entry.epoch) {
			o.stats.disowned.Add(1)
			endSend(out.entry.ctx, errDisowned)
			continue
		}
		keep = append(keep, out)
	}
	o.mu.Lock()
	o.flying = len(keep)
	o.mu.Unlock()
	return keep
}

var errDisowned = errors.New("checkpoint dropped: its group's shard moved to another instance, which decides it again")

// errNotConfirmed marks a write refused because the batch's shards could
// not be confirmed as this instance's.
var errNotConfirmed = errors.New("not writing: ownership of the checkpoints' shards not confirmed")

// publishChecked publishes msgs with the ownership check asked again by the
// publisher right before the records leave (targetgroup.WithBeforeSend on
// the first message's context): a process paused between confirmOwner and
// the send (SIGSTOP, a frozen VM) finds its confirmation stale on resuming
// and asks again, instead of writing checkpoints decided before the pause
// over the new owner's. The check costs nothing while the confirmation is
// fresh.
func (o *Outbox) publishChecked(ctx context.Context, batch []outgoing, msgs []*message.Message) error {
	if o.fence == nil {
		return o.pub.Publish(o.topic, msgs...)
	}
	first := msgs[0]
	orig := first.Context()
	first.SetContext(targetgroup.WithBeforeSend(orig, func(context.Context) error { return o.confirmOwner(ctx, batch) }))
	defer first.SetContext(orig)
	return o.pub.Publish(o.topic, msgs...)
}

// confirmOwner asks the fence, with WithOwnership, whether the batch's
// shards are still this instance's.
func (o *Outbox) confirmOwner(ctx context.Context, batch []outgoing) error {
	if o.fence == nil {
		return nil
	}
	seen := make(map[int32]bool)
	var shards []int32
	for _, out := range batch {
		if !seen[out.entry.shard] {
			seen[out.entry.shard] = true
			shards = append(shards, out.entry.shard)
		}
	}
	if err := o.fence.Verify(ctx, shards); err != nil {
		return fmt.Errorf("%w: %w", errNotConfirmed, err)
	}
	return nil
}

// landed marks the batch in flight as done.
func (o *Outbox) landed() {
	o.mu.Lock()
	o.flying = 0
	o.mu.Unlock()
}

// dropSuperseded removes from a failed batch the checkpoints whose key has a
// newer one queued, and returns the rest.
func (o *Outbox) dropSuperseded(batch []outgoing) []outgoing {
	keep := batch[:0]
	var gone []context.Context
	o.mu.Lock()
	for _, out := range batch {
		if _, newer := o.pending[out.key]; newer {
			gone = append(gone, out.entry.ctx)
			continue
		}
		keep = append(keep, out)
	}
	o.flying = len(keep)
	o.mu.Unlock()
	for _, ctx := range gone {
		o.supersede(ctx)
	}
	return keep
}

// giveBack puts an unwritten batch back at the front of the queue, except
// where a newer checkpoint of the key is queued: the drain that follows a
// stop writes them, or ends their spans as unpublished.
func (o *Outbox) giveBack(batch []outgoing) {
	var gone []context.Context
	o.mu.Lock()
	o.flying = 0
	var keys []outboxKey
	for _, out := range batch {
		if _, newer := o.pending[out.key]; newer {
			gone = append(gone, out.entry.ctx)
			continue
		}
		o.pending[out.key] = out.entry
		keys = append(keys, out.key)
	}
	o.order = append(keys, o.order...)
	o.mu.Unlock()
	for _, ctx := range gone {
		o.supersede(ctx)
	}
}
