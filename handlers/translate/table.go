package translate

import (
	"hash/maphash"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/checkpointd/checkpointd/messages"
)

// table is a grow-only open-addressing hash table from topic-partition to
// history, built for one writer and many lock-free readers.
//
// A reader loads the table, probes linearly and stops at the first empty slot.
// The writer fills a slot's tp before publishing its history with an atomic
// store, so a reader that sees a history also sees the tp. To grow, the writer
// builds a larger table and publishes it; readers still holding the old one see
// at worst the state from just before the switch. Entries are never removed,
// as MM2 never forgets a partition.
type table struct {
	seed  maphash.Seed
	shift uint8 // 64 − log2(len(slots))
	used  int   // written by the writer only
	slots []entry
}

type entry struct {
	tp   messages.TopicPartition
	hist atomic.Pointer[Sync] // the first element of a published history
}

// load returns the entry's history, or nil. A history's first element holds
// its count of syncs and so its length, which is all it takes to rebuild the
// slice from the pointer: storing the bare pointer keeps a lookup to a single
// dependent load.
func (e *entry) load() history {
	p := e.hist.Load()
	if p == nil {
		return nil
	}
	return unsafe.Slice(p, 1+int(p.Upstream))
}

// store publishes h, which must not change afterwards.
func (e *entry) store(h history) { e.hist.Store(&h[0]) }

const minTableSize = 16

func newTable(seed maphash.Seed, size int) *table {
	return &table{
		seed:  seed,
		shift: uint8(64 - bits.TrailingZeros(uint(size))),
		slots: make([]entry, size),
	}
}

// home returns the first slot to probe for tp.
func (t *table) home(tp messages.TopicPartition) int {
	h := maphash.String(t.seed, tp.Topic) + uint64(uint32(tp.Partition))
	// Fibonacci hashing spreads consecutive partition numbers of one topic.
	return int((h * 0x9e3779b97f4a7c15) >> t.shift)
}

// find returns tp's entry, or nil. Safe for concurrent readers.
func (t *table) find(tp messages.TopicPartition) *entry {
	mask := len(t.slots) - 1
	for i := t.home(tp); ; i = (i + 1) & mask {
		e := &t.slots[i]
		if e.hist.Load() == nil {
			return nil
		}
		if e.tp == tp {
			return e
		}
	}
}

// insert publishes a new partition with its first history. The caller is the
// single writer and has checked that tp is absent and that the table has room.
func (t *table) insert(tp messages.TopicPartition, h history) {
	mask := len(t.slots) - 1
	i := t.home(tp)
	for t.slots[i].hist.Load() != nil {
		i = (i + 1) & mask
	}
	t.slots[i].tp = tp
	t.slots[i].store(h)
	t.used++
}

// full reports whether one more entry would pass the 3/4 load factor.
func (t *table) full() bool { return (t.used+1)*4 > len(t.slots)*3 }

// grown returns a table twice the size holding the same entries.
func (t *table) grown() *table {
	g := newTable(t.seed, 2*len(t.slots))
	for i := range t.slots {
		if h := t.slots[i].load(); h != nil {
			g.insert(t.slots[i].tp, h)
		}
	}
	return g
}
