package translate

import (
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/checkpointd/checkpointd/messages"
)

// Options configure an Index.
type Options struct {
	// CheckpointsLoaded says the previous checkpoints were read back from the
	// checkpoints topic at start (MM2's CheckpointStore, KAFKA-15905). Only
	// then may the index keep the sparse history read at start-up, because the
	// checkpoint rules can then keep checkpoints monotonic across the restart.
	//
	// When false (MM2's mustReadToEnd = true), every sync applied before
	// OpenGate clears its partition's history, so each partition starts with
	// only its latest sync (KAFKA-15905). Upstream rewinds clear in both modes.
	CheckpointsLoaded bool
}

// Index is the translation index: per upstream topic-partition, MM2's sparse
// history of offset syncs, and the read-to-end gate in front of it.
//
// Apply is meant for the one goroutine that reads the offset-sync topic;
// concurrent calls are serialised. Translate, Syncs, Partitions and Stats are
// safe from any number of goroutines at once and never wait for Apply: each
// partition's history is copied on write and published atomically, and the
// partition table is read without locks.
type Index struct {
	keepStartup bool
	gate        atomic.Bool
	parts       atomic.Pointer[table]
	partitions  atomic.Int64
	stored      atomic.Int64 // distinct syncs held, over all partitions

	mu sync.Mutex // serialises writers
	ws workspace  // the writer's scratch, guarded by mu
}

// NewIndex returns an empty index with its gate closed.
func NewIndex(opts Options) *Index {
	ix := &Index{keepStartup: opts.CheckpointsLoaded}
	ix.parts.Store(newTable(maphash.MakeSeed(), minTableSize, new(sync.Map)))
	return ix
}

// Apply records the offset sync (upstream → downstream) for tp, as read from
// the offset-sync topic, in topic order.
//
// It reports whether Translate's answers for tp may have changed, so the caller
// knows to re-decide the groups with commits on tp. While the gate is closed
// every answer is NoResult, so Apply reports false; the caller re-decides all
// groups when it opens the gate.
func (ix *Index) Apply(tp messages.TopicPartition, upstream, downstream int64) bool {
	x := Sync{Upstream: upstream, Downstream: downstream}

	ix.mu.Lock()
	defer ix.mu.Unlock()

	t := ix.parts.Load()
	e, grown := t.entryFor(tp)
	if grown != t {
		ix.parts.Store(grown)
	}
	if e.hist.Load() == nil {
		e.store(single(x))
		ix.partitions.Add(1)
		ix.stored.Add(1)
		return ix.gate.Load()
	}

	prev := e.load()
	var next history
	// The clearing cases of OffsetSyncStore.updateSyncArray: syncs read at
	// start-up when the previous checkpoints are unknown, and an upstream rewind
	// (e.g. a recreated topic).
	if (!ix.gate.Load() && !ix.keepStartup) || upstream < prev.syncs()[0].Upstream {
		next = single(x)
	} else {
		next = prev.with(x, &ix.ws)
	}
	e.store(next)
	ix.stored.Add(int64(len(next) - len(prev)))
	return ix.gate.Load() && !next.sameAs(prev)
}

// OpenGate allows translation. Call it once the offset-sync topic has been read
// up to the end offsets it had at start (OffsetSyncStore's readToEnd,
// KAFKA-13659); it cannot be closed again.
func (ix *Index) OpenGate() { ix.gate.Store(true) }

// GateOpen reports whether OpenGate has been called.
func (ix *Index) GateOpen() bool { return ix.gate.Load() }

// Translate maps a group's committed upstream offset on tp to a target offset
// (OffsetSyncStore.translateDownstream). It neither allocates nor waits for
// Apply.
func (ix *Index) Translate(tp messages.TopicPartition, upstream int64) Translation {
	if !ix.gate.Load() {
		return Translation{Outcome: NoResult, Downstream: -1, Reason: ReasonGateClosed}
	}
	e := ix.parts.Load().find(tp)
	if e == nil {
		return Translation{Outcome: NoResult, Downstream: -1, Reason: ReasonNoSyncYet}
	}
	return translateWith(e.load().find(upstream), upstream)
}

// Syncs returns the distinct syncs stored for tp, newest first, or nil. It is
// meant for inspection and tests; it ignores the gate.
func (ix *Index) Syncs(tp messages.TopicPartition) []Sync {
	e := ix.parts.Load().find(tp)
	if e == nil {
		return nil
	}
	return append([]Sync(nil), e.load().syncs()...)
}

// Partitions returns the number of partitions with at least one sync.
func (ix *Index) Partitions() int { return int(ix.partitions.Load()) }

// Stats is a snapshot of the index's size, for metrics.
type Stats struct {
	Partitions int   // partitions with at least one sync
	Syncs      int64 // distinct syncs stored over all partitions
	GateOpen   bool
}

// Stats returns the index's current size.
func (ix *Index) Stats() Stats {
	return Stats{Partitions: ix.Partitions(), Syncs: ix.stored.Load(), GateOpen: ix.GateOpen()}
}
