package groupsync

import "github.com/checkpointd/checkpointd/messages"

// Group states that matter to the decision. Other states (Stable,
// PreparingRebalance, Assigning, Reconciling, Dead, ...) all mean "leave it".
const (
	StateEmpty    = "Empty"
	StateNotFound = "NotFound"
)

// Checkpoint is a group's translated position on one target partition.
type Checkpoint struct {
	Downstream int64  // the offset to commit on the target
	Metadata   string // the source commit's metadata, copied as MM2 does
}

// TargetGroup is what was learnt about the group on the target.
type TargetGroup struct {
	State       string // StateEmpty, StateNotFound, or any other broker state
	Members     int
	DescribeErr error // non-nil: the describe failed and State means nothing
}

// Writable reports whether offsets may be committed into the group: it was
// described, has no members, and is Empty or does not exist yet.
func (g TargetGroup) Writable() bool {
	return g.DescribeErr == nil && g.Members == 0 && (g.State == StateEmpty || g.State == StateNotFound)
}

// Input is everything Decide needs about one group.
type Input struct {
	// Checkpoints are the translated offsets, keyed by target partition.
	Checkpoints map[messages.TopicPartition]Checkpoint
	Target      TargetGroup
	// Current holds the group's committed offsets on the target. An absent or
	// negative entry means none (sarama and others reset offsets to -1;
	// MM2 overwrites those since KAFKA-15607, and so do we).
	Current map[messages.TopicPartition]int64
	// Existing holds the target partitions that exist. A partition absent
	// from it is treated as missing, so a forgotten lookup commits nothing.
	Existing map[messages.TopicPartition]bool
}

// Plan is the decision for one group: every checkpointed partition is either
// in Commit or in Skipped with the reason.
type Plan struct {
	Commit  map[messages.TopicPartition]Checkpoint
	Skipped map[messages.TopicPartition]Reason
}

// Decide returns what to commit into the target group and why the rest is not.
func Decide(in Input) Plan {
	p := Plan{
		Commit:  make(map[messages.TopicPartition]Checkpoint),
		Skipped: make(map[messages.TopicPartition]Reason),
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
	}
	return p
}

func groupSkip(g TargetGroup) (Reason, bool) {
	switch {
	case g.DescribeErr != nil:
		// Not knowing is not "new": writing now could rewind an active group.
		return DescribeFailed, true
	case !g.Writable():
		return ActiveOnTarget, true
	}
	return "", false
}

func partitionSkip(tp messages.TopicPartition, cp Checkpoint, in Input) (Reason, bool) {
	switch {
	case cp.Downstream < 0:
		return InvalidCheckpoint, true
	case !in.Existing[tp]:
		return TargetTopicMissing, true
	}
	if cur, ok := in.Current[tp]; ok && cur >= 0 && cur >= cp.Downstream {
		return TargetAhead, true
	}
	return "", false
}
