package events

import (
	"cmp"
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"go.opentelemetry.io/otel/trace"

	"github.com/checkpointd/checkpointd/handlers"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
	"github.com/checkpointd/checkpointd/messages/event"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

// Observer turns the handlers' observations into events on a bus. An event
// is built only when a handler takes its kind.
type Observer struct {
	handlers.NopObserver
	Bus *Bus
	// TargetGroup names the target group a source group's offsets go to
	// (a checkpoint policy's rename); nil keeps the name.
	TargetGroup func(source string) string
	// UpstreamTopic names a checkpoint's topic on the source (the
	// replication policy's UpstreamTopic); nil or "" keeps the target's name.
	UpstreamTopic func(downstream string) string
}

var _ handlers.Observer = (*Observer)(nil)

// SourceCommitRead implements handlers.Observer.
func (o *Observer) SourceCommitRead(ctx context.Context, rec messages.OffsetsRecord, at time.Time) {
	if !o.Bus.Wants(event.KindSourceCommitRead) {
		return
	}
	o.Bus.Publish(event.SourceCommitRead{Group: rec.Group, Topic: rec.Topic, Partition: rec.Partition,
		Offset: rec.Offset, Metadata: rec.Metadata, Deleted: rec.Tombstone, CommittedAt: at,
		Trace: trace.SpanContextFromContext(ctx)})
}

// OffsetSyncApplied implements handlers.Observer.
func (o *Observer) OffsetSyncApplied(ctx context.Context, s messages.OffsetSync) {
	if !o.Bus.Wants(event.KindOffsetSyncApplied) {
		return
	}
	o.Bus.Publish(event.OffsetSyncApplied{Topic: s.Topic, Partition: s.Partition, UpstreamOffset: s.UpstreamOffset,
		DownstreamOffset: s.DownstreamOffset, Trace: trace.SpanContextFromContext(ctx)})
}

// CheckpointEmitted implements handlers.Observer. The checkpoint names the
// downstream partition (same number upstream); UpstreamTopic names the topic.
func (o *Observer) CheckpointEmitted(ctx context.Context, cp messages.Checkpoint, committedAt time.Time) {
	if !o.Bus.Wants(event.KindCheckpointDecided) {
		return
	}
	upstream := cp.Topic
	if o.UpstreamTopic != nil {
		upstream = cmp.Or(o.UpstreamTopic(cp.Topic), cp.Topic)
	}
	o.Bus.Publish(event.CheckpointDecided{Group: cp.Group, Topic: upstream, Partition: cp.Partition, Emitted: true,
		UpstreamOffset: cp.UpstreamOffset, DownstreamTopic: cp.Topic, DownstreamOffset: cp.DownstreamOffset,
		Metadata: cp.Metadata, CommittedAt: committedAt, Trace: trace.SpanContextFromContext(ctx)})
}

// CheckpointSkipped implements handlers.Observer.
func (o *Observer) CheckpointSkipped(ctx context.Context, group string, tp messages.TopicPartition, upstream int64, reason messages.SkipReason) {
	if !o.Bus.Wants(event.KindCheckpointDecided) {
		return
	}
	o.Bus.Publish(event.CheckpointDecided{Group: group, Topic: tp.Topic, Partition: tp.Partition, Reason: reason,
		UpstreamOffset: upstream, DownstreamOffset: -1, Trace: trace.SpanContextFromContext(ctx)})
}

// TargetResult implements handlers.Observer.
func (o *Observer) TargetResult(ctx context.Context, group string, tp messages.TopicPartition, reason targetgroup.Reason, checkpointAt, committedAt time.Time) {
	if !o.Bus.Wants(event.KindTargetCommitResult) {
		return
	}
	target := group
	if o.TargetGroup != nil {
		target = o.TargetGroup(group)
	}
	o.Bus.Publish(event.TargetCommitResult{Group: group, TargetGroup: target, Topic: tp.Topic, Partition: tp.Partition,
		Reason: reason, CheckpointAt: checkpointAt, CommittedAt: committedAt, Trace: trace.SpanContextFromContext(ctx)})
}

// WrittenPublisher wraps the publisher of the checkpoints topic: once a
// Publish call returns without error, the target has acknowledged its
// checkpoints, and each becomes a CheckpointWritten event.
type WrittenPublisher struct {
	message.Publisher
	Bus *Bus
}

// Publish implements message.Publisher.
func (p WrittenPublisher) Publish(topic string, msgs ...*message.Message) error {
	err := p.Publisher.Publish(topic, msgs...)
	if err != nil {
		// Of a partly written call, the records that landed are written
		// (and are not sent again); of any other failure, none is known to be.
		var pw interface{ Unwritten() []*message.Message }
		if !errors.As(err, &pw) {
			return err
		}
		failed := make(map[*message.Message]bool, len(pw.Unwritten()))
		for _, m := range pw.Unwritten() {
			failed[m] = true
		}
		landed := make([]*message.Message, 0, len(msgs))
		for _, m := range msgs {
			if !failed[m] {
				landed = append(landed, m)
			}
		}
		msgs = landed
	}
	if !p.Bus.Wants(event.KindCheckpointWritten) {
		return err
	}
	for _, msg := range msgs {
		cp, err := messages.DecodeCheckpoint([]byte(msg.Metadata.Get(envelope.MetaKey)), msg.Payload)
		if err != nil {
			continue // not a checkpoint: nothing to report
		}
		e := event.CheckpointWritten{Group: cp.Group, Topic: cp.Topic, Partition: cp.Partition,
			UpstreamOffset: cp.UpstreamOffset, DownstreamOffset: cp.DownstreamOffset, Metadata: cp.Metadata,
			Trace: trace.SpanContextFromContext(msg.Context())}
		if ms, err := strconv.ParseInt(msg.Metadata.Get(envelope.HeaderCommitTime), 10, 64); err == nil {
			e.CommittedAt = time.UnixMilli(ms)
		}
		p.Bus.Publish(e)
	}
	return err
}
