package translate

import (
	"hash/maphash"
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/checkpointd/checkpointd/messages"
)

// table maps an upstream topic-partition to the entry that holds its history,
// for one writer and many lock-free readers.
//
// It has two levels because Kafka numbers a topic's partitions from 0: an
// open-addressing hash table of topic names, each with a dense array of
// entries indexed by partition. A lookup hashes only the topic name, and the
// entries of one topic's partitions sit side by side, so the commits of a
// group, which cover a topic's partitions in turn, read memory in order
// instead of at random. Partition numbers a dense array should not hold
// (negative, or maxDense and above) go to a map aside.
//
// A reader loads the table, probes linearly and stops at the first empty
// slot. The writer sets a slot's topic before publishing its entries with an
// atomic store, so a reader that sees the entries also sees the topic. To
// grow the table or a topic's array, the writer builds a larger copy and
// publishes it; readers still holding the old one see at worst the state from
// just before the switch. Nothing is ever removed, as MM2 never forgets a
// partition.
type table struct {
	seed  maphash.Seed
	shift uint8 // 64 − log2(len(slots))
	used  int   // written by the writer only
	slots []topicSlot
	odd   *sync.Map // messages.TopicPartition → *entry; shared by every size
}

type topicSlot struct {
	topic string
	parts atomic.Pointer[[]entry] // indexed by partition
}

// maxDense bounds the dense arrays: a bogus partition number must not make
// the index allocate for every number below it.
const maxDense = 1 << 16

// entry is one partition's place in the table.
type entry struct {
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

func newTable(seed maphash.Seed, size int, odd *sync.Map) *table {
	return &table{
		seed:  seed,
		shift: uint8(64 - bits.TrailingZeros(uint(size))),
		slots: make([]topicSlot, size),
		odd:   odd,
	}
}

// home returns the first slot to probe for topic.
func (t *table) home(topic string) int {
	// Fibonacci hashing: the top bits of the product mix every bit of the hash.
	return int((maphash.String(t.seed, topic) * 0x9e3779b97f4a7c15) >> t.shift)
}

// topic returns topic's slot, or nil. Safe for concurrent readers.
func (t *table) topic(topic string) *topicSlot {
	mask := len(t.slots) - 1
	for i := t.home(topic); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.parts.Load() == nil {
			return nil
		}
		if s.topic == topic {
			return s
		}
	}
}

// find returns tp's entry if it holds a history, else nil. Safe for
// concurrent readers.
func (t *table) find(tp messages.TopicPartition) *entry {
	var e *entry
	if dense(tp.Partition) {
		s := t.topic(tp.Topic)
		if s == nil {
			return nil
		}
		parts := *s.parts.Load()
		if int(tp.Partition) >= len(parts) {
			return nil
		}
		e = &parts[tp.Partition]
	} else {
		v, ok := t.odd.Load(tp)
		if !ok {
			return nil
		}
		e = v.(*entry)
	}
	if e.hist.Load() == nil {
		return nil
	}
	return e
}

func dense(partition int32) bool { return partition >= 0 && partition < maxDense }

// entryFor returns tp's entry, empty if tp is new, adding room for it as
// needed. It returns the table to use from now on: t, or a larger copy that
// the caller must publish. Writer only.
func (t *table) entryFor(tp messages.TopicPartition) (*entry, *table) {
	if !dense(tp.Partition) {
		v, _ := t.odd.LoadOrStore(tp, new(entry))
		return v.(*entry), t
	}
	s := t.topic(tp.Topic)
	if s == nil {
		if t.full() {
			t = t.grown()
		}
		s = t.insert(tp.Topic, &[]entry{})
	}
	parts := *s.parts.Load()
	if int(tp.Partition) >= len(parts) {
		// Twice the size, so a topic whose partitions arrive one by one is
		// copied a logarithmic number of times.
		n := max(int(tp.Partition)+1, 2*len(parts))
		n = min(n, maxDense)
		grown := make([]entry, n)
		for i := range parts {
			grown[i].hist.Store(parts[i].hist.Load())
		}
		s.parts.Store(&grown)
		parts = grown
	}
	return &parts[tp.Partition], t
}

// insert publishes topic with its array of entries and returns its slot. The
// caller has checked that topic is absent and that the table has room.
func (t *table) insert(topic string, parts *[]entry) *topicSlot {
	mask := len(t.slots) - 1
	i := t.home(topic)
	for t.slots[i].parts.Load() != nil {
		i = (i + 1) & mask
	}
	s := &t.slots[i]
	s.topic = topic
	s.parts.Store(parts)
	t.used++
	return s
}

// full reports whether one more topic would pass the 3/4 load factor.
func (t *table) full() bool { return (t.used+1)*4 > len(t.slots)*3 }

// grown returns a table twice the size holding the same topics and sharing
// their arrays.
func (t *table) grown() *table {
	g := newTable(t.seed, 2*len(t.slots), t.odd)
	for i := range t.slots {
		if parts := t.slots[i].parts.Load(); parts != nil {
			g.insert(t.slots[i].topic, parts)
		}
	}
	return g
}
