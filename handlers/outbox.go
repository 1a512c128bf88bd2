package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
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

// Outbox publishes checkpoints in the order they were decided. Handlers run
// concurrently, so letting each publish its own output could land a lower
// checkpoint after a higher one for the same partition; one ordered queue
// drained by one goroutine cannot.
//
// Nothing is lost if the process dies with checkpoints still queued: a
// restart replays the source commits and the checkpoints topic and decides
// them again.
type Outbox struct {
	pub    message.Publisher
	topic  string
	queue  chan *message.Message
	logger *slog.Logger
	// OnPublished, if set, is called after each checkpoint is acknowledged.
	OnPublished func(msg *message.Message, err error)
}

// NewOutbox makes an outbox for topic holding at most size queued checkpoints;
// Emit blocks when it is full, which slows the handlers down to what the
// target accepts.
func NewOutbox(pub message.Publisher, topic string, size int, logger *slog.Logger) *Outbox {
	if logger == nil {
		logger = slog.Default()
	}
	return &Outbox{pub: pub, topic: topic, queue: make(chan *message.Message, size), logger: logger}
}

// Emit queues a checkpoint. The trace context of ctx travels with it, and so
// does committedAt, unless zero, in the envelope.HeaderCommitTime header.
//
// When ctx holds a span (the `process <topic>` span of the record that led to
// the checkpoint), Emit starts a PRODUCER `send <topic>` span as its child,
// from the same tracer provider, so a checkpoint is traced exactly when the
// record that caused it is. The record carries the send span's context, and
// the span ends when the broker acknowledges the write: it covers the wait in
// the queue, which is where a slow target shows.
func (o *Outbox) Emit(ctx context.Context, cp messages.Checkpoint, committedAt time.Time) {
	msg := message.NewMessage(cp.Group+"/"+cp.TopicPartition.String()+"/"+strconv.FormatInt(cp.UpstreamOffset, 10), cp.Value())
	msg.Metadata.Set(envelope.MetaKey, string(cp.Key()))
	if !committedAt.IsZero() {
		msg.Metadata.Set(envelope.HeaderCommitTime, strconv.FormatInt(committedAt.UnixMilli(), 10))
	}
	ctx = o.startSend(ctx, cp, len(msg.Payload))
	otel.GetTextMapPropagator().Inject(ctx, propagation.MapCarrier(msg.Metadata))
	msg.SetContext(context.WithoutCancel(ctx))
	o.queue <- msg
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

// Len is the number of checkpoints waiting to be published.
func (o *Outbox) Len() int { return len(o.queue) }

// Run publishes until ctx is done, then gives what is still queued up to
// drain to be published, and returns.
func (o *Outbox) Run(ctx context.Context, drain time.Duration) error {
	for {
		select {
		case msg := <-o.queue:
			o.publish(ctx, msg)
		case <-ctx.Done():
			return o.drain(drain)
		}
	}
}

func (o *Outbox) drain(d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		select {
		case msg := <-o.queue:
			o.publish(ctx, msg)
		default:
			return nil
		}
		if ctx.Err() != nil {
			if n := len(o.queue); n > 0 {
				o.logger.Warn("shutdown: checkpoints left unpublished; they are decided again on restart", "count", n)
				for range n {
					endSend(<-o.queue, errUnpublished)
				}
			}
			return nil
		}
	}
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

// publish retries with backoff until the checkpoint is written or ctx ends:
// skipping one would leave a gap that only a later commit fills.
func (o *Outbox) publish(ctx context.Context, msg *message.Message) {
	span := trace.SpanFromContext(msg.Context())
	backoff := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := o.pub.Publish(o.topic, msg)
		if o.OnPublished != nil {
			o.OnPublished(msg, err)
		}
		if err == nil {
			endSend(msg, nil)
			return
		}
		o.logger.Error("publishing checkpoint failed; retrying", "topic", o.topic, "attempt", attempt, "error", err)
		span.AddEvent("retry", trace.WithAttributes(attribute.Int("attempt", attempt), attribute.String("error", err.Error())))
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			endSend(msg, fmt.Errorf("%w: %w", errUnpublished, err))
			return
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}
