package handlers

import (
	"time"

	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

// Observer hears about every decision the handlers make, for metrics, logs
// and the handlers users plug in: it is the one way to watch the pipeline.
// Embed NopObserver to implement only some methods. Implementations must be
// safe for concurrent use and cheap: they are called on the hot path, some
// under a decision lock.
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
	// TargetResult: the commit stage tried one (group, target partition).
	// checkpointAt is the checkpoint record's timestamp, committedAt when the
	// source commit behind it was written (its envelope.HeaderCommitTime
	// header; zero for checkpoints without it, such as MM2's).
	TargetResult(group string, tp messages.TopicPartition, reason targetgroup.Reason, checkpointAt, committedAt time.Time)
}

// NopObserver ignores everything.
type NopObserver struct{}

func (NopObserver) CheckpointEmitted(messages.Checkpoint, time.Time)          {}
func (NopObserver) CheckpointSkipped(string, messages.TopicPartition, string) {}
func (NopObserver) RecordMalformed(string, int32, int64, error)               {}
func (NopObserver) GateOpened()                                               {}
func (NopObserver) TargetResult(string, messages.TopicPartition, targetgroup.Reason, time.Time, time.Time) {
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

func (m observers) CheckpointEmitted(cp messages.Checkpoint, committedAt time.Time) {
	for _, o := range m {
		o.CheckpointEmitted(cp, committedAt)
	}
}

func (m observers) CheckpointSkipped(group string, tp messages.TopicPartition, reason string) {
	for _, o := range m {
		o.CheckpointSkipped(group, tp, reason)
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

func (m observers) TargetResult(group string, tp messages.TopicPartition, reason targetgroup.Reason, checkpointAt, committedAt time.Time) {
	for _, o := range m {
		o.TargetResult(group, tp, reason, checkpointAt, committedAt)
	}
}
