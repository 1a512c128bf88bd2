package handlers

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

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
func (o *Outbox) Emit(ctx context.Context, cp messages.Checkpoint, committedAt time.Time) {
	msg := message.NewMessage(cp.Group+"/"+cp.TopicPartition.String()+"/"+strconv.FormatInt(cp.UpstreamOffset, 10), cp.Value())
	msg.Metadata.Set(envelope.MetaKey, string(cp.Key()))
	if !committedAt.IsZero() {
		msg.Metadata.Set(envelope.HeaderCommitTime, strconv.FormatInt(committedAt.UnixMilli(), 10))
	}
	otel.GetTextMapPropagator().Inject(ctx, propagation.MapCarrier(msg.Metadata))
	msg.SetContext(context.WithoutCancel(ctx))
	o.queue <- msg
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
			}
			return nil
		}
	}
}

// publish retries with backoff until the checkpoint is written or ctx ends:
// skipping one would leave a gap that only a later commit fills.
func (o *Outbox) publish(ctx context.Context, msg *message.Message) {
	backoff := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := o.pub.Publish(o.topic, msg)
		if o.OnPublished != nil {
			o.OnPublished(msg, err)
		}
		if err == nil {
			return
		}
		o.logger.Error("publishing checkpoint failed; retrying", "topic", o.topic, "attempt", attempt, "error", err)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}
