package translate

import (
	"sync"
	"unique"

	"github.com/checkpointd/checkpointd/messages"
)

// Checkpoint is the position last checkpointed for one (group, partition).
type Checkpoint struct {
	Upstream   int64 // the group's committed source offset
	Downstream int64 // its translation on the target
}

// Checkpoints remembers the last checkpoint emitted per (group, downstream
// partition) and applies MM2's monotonicity rule to new ones
// (MirrorCheckpointTask.checkpointIsMoreRecent).
// Keys use the renamed (target-side) partition, as MM2's CheckpointStore does.
// Entries are never dropped, as in MM2.
//
// It is safe for concurrent use. Decide checks and records in one step, but the
// order in which checkpoints reach the topic is the caller's: decide and
// publish one group's checkpoints from one goroutine at a time.
type Checkpoints struct {
	mu   sync.Mutex
	last map[checkpointKey]Checkpoint
}

type checkpointKey struct {
	group string
	tp    messages.TopicPartition
}

// interned returns k with its strings replaced by their canonical copies.
// A new key's strings come from a decoded record or a renamed topic, one
// allocation per record; interned, 100,000 pairs of 1,000 groups share
// 1,000 group names, instead of holding two strings each.
func (k checkpointKey) interned() checkpointKey {
	return checkpointKey{group: unique.Make(k.group).Value(),
		tp: messages.TopicPartition{Topic: unique.Make(k.tp.Topic).Value(), Partition: k.tp.Partition}}
}

// NewCheckpoints returns an empty checkpoint state.
func NewCheckpoints() *Checkpoints {
	return &Checkpoints{last: make(map[checkpointKey]Checkpoint)}
}

// Load restores a checkpoint read back from the checkpoints topic, as MM2's
// CheckpointStore does at task start: the later record for a (group,
// partition) overwrites the earlier, whatever its offsets, because the topic
// holds what was last emitted.
func (c *Checkpoints) Load(group string, tp messages.TopicPartition, upstream, downstream int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.set(checkpointKey{group, tp}, Checkpoint{Upstream: upstream, Downstream: downstream})
}

// set records cp under key, interning a key not seen before (an existing
// map key keeps the strings it was stored with).
func (c *Checkpoints) set(key checkpointKey, cp Checkpoint) {
	if _, ok := c.last[key]; !ok {
		key = key.interned()
	}
	c.last[key] = cp
}

// Decide reports whether the checkpoint (upstream → downstream) for group on
// the renamed partition tp is emitted, and if not, why. It is emitted when
//   - nothing was checkpointed for (group, tp) before;
//   - upstream is below the last checkpoint's: the source group rewound, so
//     the target offset may go back too;
//   - downstream is above the last checkpoint's.
//
// Otherwise it is skipped with ReasonNotNewer: a repeat, or a target offset that
// would go backwards without the group rewinding. A negative upstream is no
// commit (ReasonNoCommit) and a negative downstream is no translation
// (ReasonBehindOldestSync, MM2's −1); neither is emitted.
//
// An emitted checkpoint is recorded before Decide returns, as MM2 records it
// before producing it (MirrorCheckpointTask.sourceRecordsForGroup calls
// CheckpointStore.update first), so the next decision compares against it.
func (c *Checkpoints) Decide(group string, tp messages.TopicPartition, upstream, downstream int64) (emit bool, reason Reason) {
	switch {
	case upstream < 0:
		return false, ReasonNoCommit
	case downstream < 0:
		return false, ReasonBehindOldestSync
	}
	key := checkpointKey{group, tp}
	c.mu.Lock()
	defer c.mu.Unlock()
	last, ok := c.last[key]
	if ok && upstream >= last.Upstream && downstream <= last.Downstream {
		return false, ReasonNotNewer
	}
	if !ok {
		key = key.interned()
	}
	c.last[key] = Checkpoint{Upstream: upstream, Downstream: downstream}
	return true, ReasonNone
}

// Last returns the last checkpoint emitted or loaded for (group, tp).
func (c *Checkpoints) Last(group string, tp messages.TopicPartition) (Checkpoint, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cp, ok := c.last[checkpointKey{group, tp}]
	return cp, ok
}

// Len returns the number of (group, partition) pairs with a checkpoint.
func (c *Checkpoints) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.last)
}

// DeleteGroups forgets the checkpoints of every group drop reports, and
// returns how many pairs went: an instance that hands a shard of groups
// over keeps nothing of them.
func (c *Checkpoints) DeleteGroups(drop func(group string) bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k := range c.last {
		if drop(k.group) {
			delete(c.last, k)
			n++
		}
	}
	return n
}
