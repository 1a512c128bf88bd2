package handlers

import (
	"context"
	"time"

	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

// Observer hears about every decision the handlers make, for metrics, logs
// and the handlers users plug in: it is the one way to watch the pipeline.
// Embed NopObserver to implement only some methods. Implementations must be
// safe for concurrent use and cheap: they are called on the hot path, some
// under a decision lock, and must not block.
//
// ctx carries the trace context of the hop (the span of the record that led
// to it); it is not for cancellation.
type Observer interface {
	// SourceCommitRead: a commit (or deletion) of a group the group filter
	// accepts was read from a shard this instance owns, replays included.
	SourceCommitRead(ctx context.Context, rec messages.OffsetsRecord, at time.Time)
	// OffsetSyncApplied: an offset sync was read and given to the index.
	OffsetSyncApplied(ctx context.Context, s messages.OffsetSync)
	// CheckpointEmitted: a checkpoint was decided and queued for the target.
	// committedAt is when the source commit that led to it was written.
	CheckpointEmitted(ctx context.Context, cp messages.Checkpoint, committedAt time.Time)
	// CheckpointSkipped: a (group, partition) was evaluated and gave no
	// checkpoint; upstream is the group's committed offset, -1 if none.
	CheckpointSkipped(ctx context.Context, group string, tp messages.TopicPartition, upstream int64, reason messages.SkipReason)
	// RecordMalformed: a record could not be decoded and was passed over.
	RecordMalformed(topic string, partition int32, offset int64, err error)
	// GateOpened: the offset syncs and the checkpoints were read to their end.
	GateOpened()
	// TargetResult: the commit stage tried one (group, target partition).
	// checkpointAt is the checkpoint record's timestamp, committedAt when the
	// source commit behind it was written (its envelope.HeaderCommitTime
	// header; zero for checkpoints without it, such as MM2's).
	TargetResult(ctx context.Context, group string, tp messages.TopicPartition, reason targetgroup.Reason, checkpointAt, committedAt time.Time)
}

// NopObserver ignores everything.
type NopObserver struct{}

func (NopObserver) SourceCommitRead(context.Context, messages.OffsetsRecord, time.Time) {}
func (NopObserver) OffsetSyncApplied(context.Context, messages.OffsetSync)              {}
func (NopObserver) CheckpointEmitted(context.Context, messages.Checkpoint, time.Time)   {}
func (NopObserver) RecordMalformed(string, int32, int64, error)                         {}
func (NopObserver) GateOpened()                                                         {}
func (NopObserver) CheckpointSkipped(context.Context, string, messages.TopicPartition, int64, messages.SkipReason) {
}
func (NopObserver) TargetResult(context.Context, string, messages.TopicPartition, targetgroup.Reason, time.Time, time.Time) {
}

// JoinObservers makes one Observer of several; nil ones are left out.
func JoinObservers(obs ...Observer) Observer {
	var list observers
	for _, o := range obs {
		if o != nil {
			list = append(list, o)
		}
	}
	switch len(list) {
	case 0:
		return NopObserver{}
	case 1:
		return list[0]
	}
	return list
}

type observers []Observer

func (m observers) SourceCommitRead(ctx context.Context, rec messages.OffsetsRecord, at time.Time) {
	for _, o := range m {
		o.SourceCommitRead(ctx, rec, at)
	}
}

func (m observers) OffsetSyncApplied(ctx context.Context, s messages.OffsetSync) {
	for _, o := range m {
		o.OffsetSyncApplied(ctx, s)
	}
}

func (m observers) CheckpointEmitted(ctx context.Context, cp messages.Checkpoint, committedAt time.Time) {
	for _, o := range m {
		o.CheckpointEmitted(ctx, cp, committedAt)
	}
}

func (m observers) CheckpointSkipped(ctx context.Context, group string, tp messages.TopicPartition, upstream int64, reason messages.SkipReason) {
	for _, o := range m {
		o.CheckpointSkipped(ctx, group, tp, upstream, reason)
	}
}

func (m observers) RecordMalformed(topic string, partition int32, offset int64, err error) {
	for _, o := range m {
		o.RecordMalformed(topic, partition, offset, err)
	}
}

func (m observers) GateOpened() {
	for _, o := range m {
		o.GateOpened()
	}
}

func (m observers) TargetResult(ctx context.Context, group string, tp messages.TopicPartition, reason targetgroup.Reason, checkpointAt, committedAt time.Time) {
	for _, o := range m {
		o.TargetResult(ctx, group, tp, reason, checkpointAt, committedAt)
	}
}
