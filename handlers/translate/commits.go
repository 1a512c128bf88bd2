package translate

import (
	"sync"
	"time"

	"github.com/checkpointd/checkpointd/messages"
)

// Commit is a group's latest committed position on one upstream partition.
type Commit struct {
	Offset   int64
	Metadata string    // copied into the checkpoint (MirrorCheckpointTask.checkpoint)
	Time     time.Time // when the source committed it, for latency metrics; kept to the millisecond
}

// Commits keeps the latest commit per (group, upstream partition), with a
// reverse view from partition to groups so that a new offset sync re-decides
// only the groups that have a commit on its partition.
//
// It is safe for concurrent use. The ForEach methods hold a read lock while
// they call fn: fn must be quick and must not call Commits' other methods.
type Commits struct {
	mu     sync.RWMutex
	groups map[string]*groupCommits
	parts  map[messages.TopicPartition]*partitionCommits
	pairs  int
}

// groupCommits lists the partitions a group has commits on. name is the
// group's one stored copy of its id; partitionCommits.groups reuses it.
type groupCommits struct {
	name  string
	parts map[messages.TopicPartition]struct{}
}

// partitionCommits holds the commits on one partition, by group. tp is the
// partition's one stored copy of its key; groupCommits.parts reuses it.
type partitionCommits struct {
	tp     messages.TopicPartition
	groups map[string]storedCommit
}

// storedCommit is a Commit with its time as Unix milliseconds (the
// precision of __consumer_offsets' commit timestamps): 32 bytes, not 48,
// for each of what can be 100,000 pairs and more.
type storedCommit struct {
	offset   int64
	metadata string
	ms       int64 // 0: no time
}

func store(cm Commit) storedCommit {
	sc := storedCommit{offset: cm.Offset, metadata: cm.Metadata}
	if !cm.Time.IsZero() {
		sc.ms = cm.Time.UnixMilli()
	}
	return sc
}

func (sc storedCommit) commit() Commit {
	cm := Commit{Offset: sc.offset, Metadata: sc.metadata}
	if sc.ms != 0 {
		cm.Time = time.UnixMilli(sc.ms)
	}
	return cm
}

// NewCommits returns an empty tracker.
func NewCommits() *Commits {
	return &Commits{
		groups: make(map[string]*groupCommits),
		parts:  make(map[messages.TopicPartition]*partitionCommits),
	}
}

// Set records group's latest commit on tp. A negative offset is how Kafka
// reports "no committed offset" (OffsetFetch answers -1, which
// Admin.listConsumerGroupOffsets turns into null), so it deletes the entry.
func (c *Commits) Set(group string, tp messages.TopicPartition, cm Commit) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cm.Offset < 0 {
		c.delete(group, tp)
		return
	}
	g := c.groups[group]
	if g == nil {
		g = &groupCommits{name: group, parts: make(map[messages.TopicPartition]struct{})}
		c.groups[group] = g
	}
	p := c.parts[tp]
	if p == nil {
		p = &partitionCommits{tp: tp, groups: make(map[string]storedCommit)}
		c.parts[tp] = p
	}
	if _, ok := p.groups[g.name]; !ok {
		c.pairs++
		g.parts[p.tp] = struct{}{}
	}
	p.groups[g.name] = store(cm)
}

// Delete forgets group's commit on tp, as a tombstone in __consumer_offsets says.
func (c *Commits) Delete(group string, tp messages.TopicPartition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.delete(group, tp)
}

func (c *Commits) delete(group string, tp messages.TopicPartition) {
	if g := c.groups[group]; g != nil {
		delete(g.parts, tp)
		if len(g.parts) == 0 {
			delete(c.groups, group)
		}
	}
	if p := c.parts[tp]; p != nil {
		if _, ok := p.groups[group]; ok {
			delete(p.groups, group)
			c.pairs--
		}
		if len(p.groups) == 0 {
			delete(c.parts, tp)
		}
	}
}

// DeleteGroup forgets every commit of group, e.g. when the group was deleted.
func (c *Commits) DeleteGroup(group string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[group]
	if g == nil {
		return
	}
	for tp := range g.parts {
		c.delete(group, tp)
	}
}

// Get returns group's commit on tp.
func (c *Commits) Get(group string, tp messages.TopicPartition) (Commit, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	p := c.parts[tp]
	if p == nil {
		return Commit{}, false
	}
	sc, ok := p.groups[group]
	return sc.commit(), ok
}

// ForEachGroupOn calls fn for every group with a commit on tp, in no set order.
func (c *Commits) ForEachGroupOn(tp messages.TopicPartition, fn func(group string, cm Commit)) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if p := c.parts[tp]; p != nil {
		for group, sc := range p.groups {
			fn(group, sc.commit())
		}
	}
}

// ForEachOf calls fn for every partition group has a commit on, in no set order.
func (c *Commits) ForEachOf(group string, fn func(tp messages.TopicPartition, cm Commit)) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if g := c.groups[group]; g != nil {
		for tp := range g.parts {
			fn(tp, c.parts[tp].groups[group].commit())
		}
	}
}

// Len returns the number of groups with commits and of (group, partition) pairs.
func (c *Commits) Len() (groups, pairs int) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.groups), c.pairs
}
