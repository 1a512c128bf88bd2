package translate

// slots is the size of MM2's per-partition sync array: one slot per bit of an
// int64 offset, slot i covering a span of roughly 2^i offsets.
const slots = 64

// history is one partition's sparse sync history (spec §4.2). It is immutable
// once published, which is what lets readers use it without locks.
//
// MM2 keeps an array of 64 references in which the same sync object fills a run
// of consecutive slots. history keeps the same information compactly: each
// distinct sync once in syncs, newest first, and for every slot the index of
// the sync it holds. Runs are always contiguous (an update only ever copies
// syncs forward, in order), so an index identifies a sync object: two syncs with
// equal offsets received separately stay two entries, as in MM2.
type history struct {
	slot  [slots]uint8
	syncs []Sync
}

// single returns the history that holds x in every slot: the first sync of a
// partition, and MM2's clearSyncArray.
func single(x Sync) *history {
	return &history{syncs: []Sync{x}}
}

// find returns the sync MM2 translates upstream against: the newest one at or
// before upstream, else the oldest one (spec §4.5). Scanning distinct syncs in
// order is the same as scanning the 64 slots.
func (h *history) find(upstream int64) Sync {
	for _, s := range h.syncs {
		if s.Upstream <= upstream {
			return s
		}
	}
	return h.syncs[len(h.syncs)-1]
}

// sameAs reports whether h and o give the same translation for every offset,
// i.e. hold the same syncs by value in the same order.
func (h *history) sameAs(o *history) bool {
	if len(h.syncs) != len(o.syncs) {
		return false
	}
	for i := range h.syncs {
		if h.syncs[i] != o.syncs[i] {
			return false
		}
	}
	return true
}

// ref names a sync object during an update: 0 is the incoming sync, k+1 is
// the previous history's syncs[k]. Comparing refs is MM2's reference equality.
type ref = uint8

// with returns the history after the incoming sync x, following MM2's
// updateSyncArray step by step (spec §4.3). The clearing cases are the caller's.
func (h *history) with(x Sync) *history {
	// up[r] is the upstream offset of ref r.
	var up [slots + 1]int64
	up[0] = x.Upstream
	for i, s := range h.syncs {
		up[i+1] = s.Upstream
	}
	// orig is MM2's original array, s its mutable copy.
	var orig, s [slots]ref
	for i, k := range h.slot {
		orig[i] = k + 1
	}
	s = orig

	s[0] = 0
	replacement := ref(0)
	r := 0 // cursor into orig: the next old sync considered for promotion
	for c := 1; c < slots; c++ {
		p := c - 1
		for {
			o := orig[r]
			isRecent := recent(&up, s[p], o, p, c)
			sepPrev := separated(&up, s[p], o, p)
			sepNext := c+1 >= slots || separated(&up, o, s[c+1], c)
			dup := r+1 < slots && orig[r+1] == o
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
		if recent(&up, s[p], s[c], p, c) {
			break // the rest of the array already satisfies invariant B
		}
		s[c] = replacement
	}
	return h.build(x, &s)
}

// build turns an array of refs into a compact history.
func (h *history) build(x Sync, s *[slots]ref) *history {
	n := 1
	for c := 1; c < slots; c++ {
		if s[c] != s[c-1] {
			n++
		}
	}
	out := &history{syncs: make([]Sync, n)}
	syncOf := func(r ref) Sync {
		if r == 0 {
			return x
		}
		return h.syncs[r-1]
	}
	k := 0
	out.syncs[0] = syncOf(s[0])
	for c := 1; c < slots; c++ {
		if s[c] != s[c-1] {
			k++
			out.syncs[k] = syncOf(s[c])
		}
		out.slot[c] = uint8(k)
	}
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
