package handlers

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
)

// DefaultOutboxBatch is how many checkpoints one publish call carries at most.
const DefaultOutboxBatch = 2048

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
	wake     chan struct{}
	backoff  time.Duration // first wait before a retry; it doubles up to 10 s

	mu      sync.Mutex
	pending map[string]*message.Message // by record key
	order   []string                    // keys in pending, oldest first
	flying  int                         // checkpoints in the batch being written

	stats outboxCounters
}

type outboxCounters struct {
	published, superseded, batches, failures atomic.Int64
}

// OutboxStats are the outbox's counters since it was made.
type OutboxStats struct {
	Queued     int   // decided and not yet written (pending and in flight)
	Published  int64 // checkpoint records acknowledged by the broker
	Superseded int64 // queued checkpoints replaced by a newer one of the same key
	Batches    int64 // publish calls that succeeded
	Failures   int64 // publish calls that failed (and were retried)
}

// NewOutbox makes an outbox for topic that publishes at most maxBatch
// checkpoints per call (DefaultOutboxBatch when maxBatch ≤ 0).
func NewOutbox(pub message.Publisher, topic string, maxBatch int, logger *slog.Logger) *Outbox {
	if logger == nil {
		logger = slog.Default()
	}
	if maxBatch <= 0 {
		maxBatch = DefaultOutboxBatch
	}
	return &Outbox{
		pub: pub, topic: topic, maxBatch: maxBatch, logger: logger, backoff: 100 * time.Millisecond,
		wake:    make(chan struct{}, 1),
		pending: make(map[string]*message.Message),
	}
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
	key := string(cp.Key())
	msg := message.NewMessage(cp.Group+"/"+cp.TopicPartition.String()+"/"+strconv.FormatInt(cp.UpstreamOffset, 10), cp.Value())
	msg.Metadata.Set(envelope.MetaKey, key)
	if !committedAt.IsZero() {
		msg.Metadata.Set(envelope.HeaderCommitTime, strconv.FormatInt(committedAt.UnixMilli(), 10))
	}
	ctx = o.startSend(ctx, cp, len(msg.Payload))
	if trace.SpanContextFromContext(ctx).IsValid() {
		otel.GetTextMapPropagator().Inject(ctx, propagation.MapCarrier(msg.Metadata))
	}
	msg.SetContext(context.WithoutCancel(ctx))

	o.mu.Lock()
	old, queued := o.pending[key]
	o.pending[key] = msg
	if !queued {
		o.order = append(o.order, key)
	}
	o.mu.Unlock()
	if queued {
		o.supersede(old)
	}
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// supersede ends the send span of a checkpoint that a newer one of its key
// replaced before it was written.
func (o *Outbox) supersede(msg *message.Message) {
	o.stats.superseded.Add(1)
	span := trace.SpanFromContext(msg.Context())
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
	ctx, span := parent.TracerProvider().Tracer(TracerScope).Start(ctx, "send "+o.topic, trace.WithSpanKind(trace.SpanKindProducer))
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

// take removes up to maxBatch of the oldest queued checkpoints and marks them
// in flight.
func (o *Outbox) take() []*message.Message {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := min(len(o.order), o.maxBatch)
	if n == 0 {
		return nil
	}
	batch := make([]*message.Message, n)
	for i, key := range o.order[:n] {
		batch[i] = o.pending[key]
		delete(o.pending, key)
	}
	o.order = o.order[n:]
	if len(o.order) == 0 {
		o.order = nil // let the backing array go after a burst
	}
	o.flying = n
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
	left := make([]*message.Message, 0, len(o.pending))
	for _, key := range o.order {
		left = append(left, o.pending[key])
	}
	o.pending, o.order = make(map[string]*message.Message), nil
	o.mu.Unlock()
	if len(left) > 0 {
		o.logger.Warn("shutdown: checkpoints left unpublished; they are decided again on restart", "count", len(left))
		for _, msg := range left {
			endSend(msg, errUnpublished)
		}
	}
	return nil
}

var errUnpublished = errors.New("checkpoint not published before shutdown; decided again on restart")

// endSend ends the message's send span (a no-op without one), as failed when
// err is not nil.
func endSend(msg *message.Message, err error) {
	span := trace.SpanFromContext(msg.Context())
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
func (o *Outbox) publish(ctx context.Context, batch []*message.Message) {
	backoff := retryBackoff{next: o.backoff, max: 10 * time.Second}
	for attempt := 1; ; attempt++ {
		err := o.pub.Publish(o.topic, batch...)
		if err == nil {
			o.stats.batches.Add(1)
			o.stats.published.Add(int64(len(batch)))
			o.landed()
			for _, msg := range batch {
				endSend(msg, nil)
			}
			return
		}
		o.stats.failures.Add(1)
		o.logger.Error("publishing checkpoints failed; retrying", "topic", o.topic, "checkpoints", len(batch), "attempt", attempt, "error", err)
		for _, msg := range batch {
			trace.SpanFromContext(msg.Context()).AddEvent("retry",
				trace.WithAttributes(attribute.Int("attempt", attempt), attribute.String("error", err.Error())))
		}
		select {
		case <-time.After(backoff.step()):
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

// landed marks the batch in flight as done.
func (o *Outbox) landed() {
	o.mu.Lock()
	o.flying = 0
	o.mu.Unlock()
}

// dropSuperseded removes from a failed batch the checkpoints whose key has a
// newer one queued, and returns the rest.
func (o *Outbox) dropSuperseded(batch []*message.Message) []*message.Message {
	keep := batch[:0]
	var gone []*message.Message
	o.mu.Lock()
	for _, msg := range batch {
		if _, newer := o.pending[msg.Metadata.Get(envelope.MetaKey)]; newer {
			gone = append(gone, msg)
			continue
		}
		keep = append(keep, msg)
	}
	o.flying = len(keep)
	o.mu.Unlock()
	for _, msg := range gone {
		o.supersede(msg)
	}
	return keep
}

// giveBack puts an unwritten batch back at the front of the queue, except
// where a newer checkpoint of the key is queued: the drain that follows a
// stop writes them, or ends their spans as unpublished.
func (o *Outbox) giveBack(batch []*message.Message) {
	var gone []*message.Message
	o.mu.Lock()
	o.flying = 0
	var keys []string
	for _, msg := range batch {
		key := msg.Metadata.Get(envelope.MetaKey)
		if _, newer := o.pending[key]; newer {
			gone = append(gone, msg)
			continue
		}
		o.pending[key] = msg
		keys = append(keys, key)
	}
	o.order = append(keys, o.order...)
	o.mu.Unlock()
	for _, msg := range gone {
		o.supersede(msg)
	}
}

// retryBackoff doubles a wait up to a ceiling.
type retryBackoff struct{ next, max time.Duration }

func (b *retryBackoff) step() time.Duration {
	d := b.next
	b.next = min(b.next*2, b.max)
	return d
}
