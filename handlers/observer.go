package handlers

import (
	"time"

	"github.com/checkpointd/checkpointd/messages"
)

// Observer hears about every decision the handlers make, for metrics and
// logs. Implementations must be safe for concurrent use and cheap: they are
// called on the hot path, under the decision lock.
type Observer interface {
	// CheckpointEmitted: a checkpoint was decided and queued for the target.
	// committedAt is when the source commit that led to it was written.
	CheckpointEmitted(cp messages.Checkpoint, committedAt time.Time)
	// CheckpointSkipped: a (group, partition) was evaluated and gave no checkpoint.
	CheckpointSkipped(group string, tp messages.TopicPartition, reason string)
	// RecordMalformed: a record could not be decoded and was passed over.
	RecordMalformed(topic string, partition int32, offset int64, err error)
	// GateOpened: the offset syncs and the checkpoints were read to their end.
	GateOpened()
}

// NopObserver ignores everything.
type NopObserver struct{}

func (NopObserver) CheckpointEmitted(messages.Checkpoint, time.Time)          {}
func (NopObserver) CheckpointSkipped(string, messages.TopicPartition, string) {}
func (NopObserver) RecordMalformed(string, int32, int64, error)               {}
func (NopObserver) GateOpened()                                               {}
