package translate

import (
	"encoding/binary"
	"slices"
)

// slots is the size of MM2's per-partition sync array: one slot per bit of an
// int64 offset, slot i covering a span of roughly 2^i offsets.
const slots = 64

// history is one partition's sparse sync history (spec §4.2). It is immutable
// once published, which is what lets readers use it without locks.
//
// MM2 keeps an array of 64 references in which the same sync object fills a run
// of consecutive slots. history keeps the same information compactly: each
// distinct sync once, newest first, and for every slot the index of the sync it
// holds. Runs are always contiguous (an update only ever copies syncs forward,
// in order), so an index identifies a sync object: two syncs with equal offsets
// received separately stay two entries, as in MM2.
//
// A history of n distinct syncs is one pointer-free block of n+5 elements, in
// the order a lookup reads it:
//
//	h[0]         header: Upstream holds n
//	h[1 : n+1]   the distinct syncs, newest first
//	h[n+1 :]     the 64 slot indexes, one byte each, 16 to an element
//
// A lookup thus costs one cache miss, on a line holding the count and the
// newest syncs, and never touches the slot indexes; only updates read those.
// Being pointer-free, the block is never scanned by the garbage collector.
type history []Sync

// slotElems is the number of trailing elements that hold the slot indexes.
const slotElems = slots / 16

// newHistory returns a history of n syncs, all zero, with every slot holding
// the newest one.
func newHistory(n int) history {
	h := make(history, 1+n+slotElems)
	h[0].Upstream = int64(n)
	return h
}

// single returns the history that holds x in every slot: the first sync of a
// partition, and MM2's clearSyncArray.
func single(x Sync) history {
	h := newHistory(1)
	h[1] = x
	return h
}

// syncs returns the distinct syncs, newest first.
func (h history) syncs() []Sync { return h[1 : len(h)-slotElems] }

// slotsInto unpacks the slot indexes into s.
func (h history) slotsInto(s *[slots]uint8) {
	for i, e := range h[len(h)-slotElems:] {
		binary.LittleEndian.PutUint64(s[16*i:], uint64(e.Upstream))
		binary.LittleEndian.PutUint64(s[16*i+8:], uint64(e.Downstream))
	}
}

// setSlots packs the slot indexes s into h.
func (h history) setSlots(s *[slots]uint8) {
	tail := h[len(h)-slotElems:]
	for i := range tail {
		tail[i] = Sync{
			Upstream:   int64(binary.LittleEndian.Uint64(s[16*i:])),
			Downstream: int64(binary.LittleEndian.Uint64(s[16*i+8:])),
		}
	}
}

// find returns the sync MM2 translates upstream against: the newest one at or
// before upstream, else the oldest one (spec §4.5). Scanning distinct syncs in
// order is the same as scanning the 64 slots.
func (h history) find(upstream int64) Sync {
	syncs := h.syncs()
	for _, s := range syncs {
		if s.Upstream <= upstream {
			return s
		}
	}
	return syncs[len(syncs)-1]
}

// sameAs reports whether h and o hold the same syncs by value, in order, in
// which case every translation through them is the same.
func (h history) sameAs(o history) bool { return slices.Equal(h.syncs(), o.syncs()) }

// workspace is the scratch memory of an update, kept by the Index so that an
// update does not clear it each time: only the entries an update writes are
// ever read.
type workspace struct {
	up   [slots + 1]int64 // up[r] is the upstream offset of ref r
	slot [slots]uint8     // the previous history's slot indexes, unpacked
	head [slots]ref       // the repaired head of the copy
	out  [slots]uint8     // the new history's slot indexes, before packing
}

// ref names a sync object during an update: 0 is the incoming sync, k+1 is
// the previous history's syncs[k]. Comparing refs is MM2's reference equality.
type ref = uint8

// with returns the history after the incoming sync x, following MM2's
// updateSyncArray step by step (spec §4.3). The clearing cases are the caller's.
//
// MM2 copies the array and repairs the copy slot by slot. Here w.head holds
// the repaired head of the copy; at and after slot c the copy still equals the
// original, whose ref in slot i is w.slot[i]+1.
func (h history) with(x Sync, w *workspace) history {
	up := &w.up
	up[0] = x.Upstream
	for i, s := range h.syncs() {
		up[i+1] = s.Upstream
	}
	old := &w.slot
	h.slotsInto(old)

	s := &w.head
	s[0] = 0 // the new sync goes first
	replacement := ref(0)
	r := 0 // cursor into the original: the next old sync considered for promotion
	c := 1
	for ; c < slots; c++ {
		p := c - 1
		for {
			o := old[r] + 1
			isRecent := recent(up, s[p], o, p, c)
			sepPrev := separated(up, s[p], o, p)
			sepNext := c+1 >= slots || separated(up, o, old[c+1]+1, c)
			dup := r+1 < slots && old[r+1]+1 == o
			promote := isRecent && sepPrev && sepNext
			if promote {
				replacement = o
			}
			skip := dup || !sepPrev
			if promote || skip {
				r++
			}
			if r >= c || !skip {
				break
			}
		}
		if recent(up, s[p], old[c]+1, p, c) {
			break // the rest of the original already satisfies invariant B
		}
		s[c] = replacement
	}
	return h.build(x, w, c)
}

// build assembles the history whose slots hold w.head[:cut] followed by the
// original (unpacked in w.slot) from slot cut on.
func (h history) build(x Sync, w *workspace, cut int) history {
	s, old, slot := &w.head, &w.slot, &w.out
	syncs := h.syncs()
	n := 1
	for c := 1; c < cut; c++ {
		if s[c] != s[c-1] {
			n++
		}
	}
	tail := len(syncs) // first original sync that the tail adds
	if cut < slots {
		tail = int(old[cut])
		if s[cut-1] == old[cut]+1 {
			tail++ // the head's last run goes on into the tail
		}
		n += len(syncs) - tail
	}

	out := newHistory(n)
	outSyncs := out.syncs()
	outSyncs[0] = x
	slot[0] = 0
	k := 0
	for c := 1; c < cut; c++ {
		if s[c] != s[c-1] {
			k++
			outSyncs[k] = syncs[s[c]-1]
		}
		slot[c] = uint8(k)
	}
	if cut < slots {
		copy(outSyncs[k+1:], syncs[tail:])
		shift := uint8(k + 1 - tail) // modular: the tail may move either way
		for c := cut; c < slots; c++ {
			slot[c] = old[c] + shift
		}
	}
	out.setSlots(slot)
	return out
}

// recent is MM2's invariant B for ref a in slot i and ref b in slot j > i: a is
// at most 2^j − 2^i ahead of b. The bound is computed with int64 wraparound,
// and a wrapped (negative) bound always holds, as in Java.
func recent(up *[slots + 1]int64, a, b ref, i, j int) bool {
	if a == b {
		return true
	}
	bound := up[b] + int64(1)<<j - int64(1)<<i
	return bound < 0 || up[a] <= bound
}

// separated is MM2's invariant C for ref a in slot i and ref b after it: a is
// at least 2^max(i−2, 0) ahead of b. A wrapped bound never holds.
func separated(up *[slots + 1]int64, a, b ref, i int) bool {
	if a == b {
		return true
	}
	bound := up[b] + int64(1)<<max(i-2, 0)
	return bound >= 0 && up[a] >= bound
}
