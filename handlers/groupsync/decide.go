package groupsync

import (
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

// Input is everything Decide needs about one group.
type Input struct {
	// Checkpoints are the translated offsets, keyed by target partition.
	Checkpoints map[messages.TopicPartition]targetgroup.Checkpoint
	Target      targetgroup.Group
	// Current holds the group's committed offsets on the target. An absent or
	// negative entry means none (sarama and others reset offsets to -1;
	// MM2 overwrites those since KAFKA-15607, and so do we).
	Current map[messages.TopicPartition]int64
	// Existing holds the target partitions that exist. A partition absent
	// from it is treated as missing, so a forgotten lookup commits nothing.
	Existing map[messages.TopicPartition]bool
	// FollowRewinds lets a translated offset below the target's committed
	// one be written when that committed offset is the one checkpointd
	// itself last committed there (Ours) and the checkpoint translates an
	// earlier source commit than that one did: the source group went back,
	// and no consumer has moved the target group since. Off, a target group
	// is never lowered (MM2's rule).
	FollowRewinds bool
	// Ours holds, per target partition, what checkpointd last committed into
	// the group; absent means checkpointd has no record of committing there.
	Ours map[messages.TopicPartition]targetgroup.Checkpoint
}

// Plan is the decision for one group: every checkpointed partition is either
// in Commit or in Skipped with the reason.
type Plan struct {
	Commit  map[messages.TopicPartition]targetgroup.Checkpoint
	Skipped map[messages.TopicPartition]targetgroup.Reason
	// Rewinds are the partitions of Commit that move the group back.
	Rewinds map[messages.TopicPartition]bool
}

// Decide returns what to commit into the target group and why the rest is not.
func Decide(in Input) Plan {
	p := Plan{
		Commit:  make(map[messages.TopicPartition]targetgroup.Checkpoint),
		Skipped: make(map[messages.TopicPartition]targetgroup.Reason),
		Rewinds: make(map[messages.TopicPartition]bool),
	}
	if groupReason, skip := groupSkip(in.Target); skip {
		for tp := range in.Checkpoints {
			p.Skipped[tp] = groupReason
		}
		return p
	}
	for tp, cp := range in.Checkpoints {
		if r, skip := partitionSkip(tp, cp, in); skip {
			p.Skipped[tp] = r
			continue
		}
		p.Commit[tp] = cp
		if cur, ok := in.Current[tp]; ok && cur > cp.Downstream {
			p.Rewinds[tp] = true
		}
	}
	return p
}

func groupSkip(g targetgroup.Group) (targetgroup.Reason, bool) {
	switch {
	case g.DescribeErr != nil:
		// Not knowing is not "new": writing now could rewind an active group.
		return targetgroup.DescribeFailed, true
	case !g.Writable():
		return targetgroup.ActiveOnTarget, true
	}
	return "", false
}

func partitionSkip(tp messages.TopicPartition, cp targetgroup.Checkpoint, in Input) (targetgroup.Reason, bool) {
	switch {
	case cp.Downstream < 0:
		return targetgroup.InvalidCheckpoint, true
	case !in.Existing[tp]:
		return targetgroup.TargetTopicMissing, true
	}
	cur, ok := in.Current[tp]
	if !ok || cur < 0 || cur < cp.Downstream {
		return "", false
	}
	// The target is at or past the translation. Only the offset checkpointd
	// wrote itself is taken back: any other value came from a consumer or a
	// tool, and lowering it would replay what they processed.
	ours, known := in.Ours[tp]
	switch {
	case cur == cp.Downstream || !in.FollowRewinds:
		return targetgroup.TargetAhead, true
	case !known:
		return targetgroup.TargetAheadNotOurs, true
	case ours.Downstream != cur:
		return targetgroup.TargetAheadMovedByConsumer, true
	case ours.Upstream < 0 || cp.Upstream < 0 || cp.Upstream >= ours.Upstream:
		// Not a source rewind: a coarser translation of the same or a later
		// source commit (say, MM2 writing checkpoints for the group too).
		return targetgroup.TargetAhead, true
	}
	return "", false
}
