package translate

import (
	"encoding/binary"
	"math/bits"
	"slices"
)

// slots is the size of MM2's per-partition sync array: one slot per bit of an
// int64 offset, slot i covering a span of roughly 2^i offsets.
const slots = 64

// history is one partition's sparse sync history (OffsetSyncStore's array of
// 64 syncs). It is immutable once published, which is what lets readers use it
// without locks.
//
// MM2 keeps an array of 64 references in which the same sync object fills a run
// of consecutive slots. history keeps the same information compactly: each
// distinct sync once, newest first, and for every slot the index of the sync it
// holds. Runs are always contiguous (an update only ever copies syncs forward,
// in order), so an index identifies a sync object: two syncs with equal offsets
// received separately stay two entries, as in MM2.
//
// The slot indexes are non-decreasing from 0, rising by one at each slot
// whose sync differs from the previous slot's, so one 64-bit mask of those run
// starts holds them all: 8 bytes where a byte per slot would take 64.
//
// A history of n distinct syncs is one pointer-free block of n+1 elements:
//
//	h[0]         header: Upstream holds n, Downstream the run-start mask
//	h[1 : n+1]   the distinct syncs, newest first
//
// Being pointer-free, the block is never scanned by the garbage collector.
type history []Sync

// newHistory returns a history of n syncs, all zero, with every slot holding
// the newest one.
func newHistory(n int) history {
	h := make(history, 1+n)
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
func (h history) syncs() []Sync { return h[1:] }

// starts returns the run-start mask: bit c is set when slot c holds a
// different sync from slot c−1.
func (h history) starts() uint64 { return uint64(h[0].Downstream) }

// slotsInto unpacks the slot indexes into s, eight slots at a time: an update
// does this on every call, and a bit-by-bit loop was a tenth of its cost.
func (h history) slotsInto(s *[slots]uint8) {
	const ones = 0x0101010101010101
	starts := h.starts()
	base := uint64(0) // the slot index reached before the current eight
	for i := 0; i < slots; i += 8 {
		b := starts >> i & 0xff
		// Byte j of x gets bit j of b, as 0 or 1.
		x := b * ones & 0x8040201008040201
		x = (x + 0x7f*ones) >> 7 & ones
		// Multiplying by ones sums each byte with all below it (no sum
		// exceeds 8, so bytes never carry), and base is added to every byte.
		x = x*ones + base*ones
		binary.LittleEndian.PutUint64(s[i:], x)
		base = x >> 56
	}
}

// find returns the sync MM2 translates upstream against: the newest one at or
// before upstream, else the oldest one (OffsetSyncStore.lookupLatestSync).
// Scanning distinct syncs in order is the same as scanning the 64 slots.
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
}

// ref names a sync object during an update: 0 is the incoming sync, k+1 is
// the previous history's syncs[k]. Comparing refs is MM2's reference equality.
type ref = uint8

// with returns the history after the incoming sync x, following MM2's
// OffsetSyncStore.updateSyncArray step by step. The clearing cases are the
// caller's.
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
	s, old := &w.head, &w.slot
	syncs := h.syncs()
	var starts uint64
	for c := 1; c < cut; c++ {
		if s[c] != s[c-1] {
			starts |= 1 << c
		}
	}
	tail := len(syncs) // first original sync that the tail adds
	if cut < slots {
		tail = int(old[cut])
		if s[cut-1] == old[cut]+1 {
			tail++ // the head's last run goes on into the tail
		} else {
			starts |= 1 << cut
		}
		// Past the cut, runs start where they did in the original.
		starts |= h.starts() &^ (2<<cut - 1)
	}

	out := newHistory(1 + bits.OnesCount64(starts))
	out[0].Downstream = int64(starts)
	outSyncs := out.syncs()
	outSyncs[0] = x
	k := 0
	for c := 1; c < cut; c++ {
		if s[c] != s[c-1] {
			k++
			outSyncs[k] = syncs[s[c]-1]
		}
	}
	copy(outSyncs[k+1:], syncs[tail:])
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
