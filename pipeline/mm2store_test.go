package pipeline_test

import (
	"slices"
	"testing"
)

// mm2Store is the test's own model of MM2's OffsetSyncStore for one
// partition, written from OffsetSyncStore's updateSyncArray and
// translateDownstream independently of handlers/translate: 64 slots of sync
// references, slot 0 the newest, updated as MirrorMaker 2.8+ does after its
// start-up read (mustReadToEnd false, so no clearing but on an upstream
// rewind). It is the oracle for "the checkpoint MM2 would write for these
// syncs".
type mm2Store struct {
	slots *[64]*mm2Sync
}

// mm2Sync is compared by pointer, as Java compares references.
type mm2Sync struct{ u, d int64 }

// apply adds a sync read from the offset-syncs topic
// (OffsetSyncStore.updateSyncArray).
func (st *mm2Store) apply(u, d int64) {
	x := &mm2Sync{u, d}
	orig := st.slots
	if orig == nil || x.u < orig[0].u {
		var s [64]*mm2Sync
		for i := range s {
			s[i] = x
		}
		st.slots = &s
		return
	}
	s := *orig
	s[0] = x
	replacement := x
	r := 0
	for c := 1; c < 64; c++ {
		p := c - 1
		for {
			o := orig[r]
			recent := recencyOK(s[p], o, p, c)
			sepPrev := spacingOK(s[p], o, p)
			sepNext := c == 63 || spacingOK(o, s[c+1], c)
			dup := r+1 < 64 && orig[r+1] == o
			promoted := recent && sepPrev && sepNext
			if promoted {
				replacement = o
			}
			skip := dup || !sepPrev
			if promoted || skip {
				r++
			}
			if !(r < c && skip) {
				break
			}
		}
		if recencyOK(s[p], s[c], p, c) {
			break
		}
		s[c] = replacement
	}
	st.slots = &s
}

// recencyOK is invariant B for x in slot i and y in slot j > i, with Java's
// wrapping long arithmetic.
func recencyOK(x, y *mm2Sync, i, j int) bool {
	if x == y {
		return true
	}
	bound := y.u + int64(1)<<j - int64(1)<<i
	return bound < 0 || x.u <= bound
}

// spacingOK is invariant C for x in slot i and y after it.
func spacingOK(x, y *mm2Sync, i int) bool {
	if x == y {
		return true
	}
	bound := y.u + int64(1)<<max(i-2, 0)
	return bound >= 0 && x.u >= bound
}

// translate is OffsetSyncStore.translateDownstream: ok is false when there is no
// sync at all; -1 means g is older than every usable sync.
func (st *mm2Store) translate(g int64) (int64, bool) {
	if st.slots == nil {
		return 0, false
	}
	s := st.slots[63]
	for _, x := range st.slots {
		if x.u <= g {
			s = x
			break
		}
	}
	switch {
	case s.u > g:
		return -1, true
	case s.u == g:
		return s.d, true
	default:
		return s.d + 1, true
	}
}

// stored returns the distinct upstream offsets held, newest first.
func (st *mm2Store) stored() []int64 {
	var out []int64
	for i, x := range st.slots {
		if i == 0 || x != st.slots[i-1] {
			out = append(out, x.u)
		}
	}
	return out
}

// TestMM2StoreModel checks the oracle against the vectors of MM2's
// OffsetSyncStoreTest.
func TestMM2StoreModel(t *testing.T) {
	var st mm2Store
	for u := int64(0); u <= 1000; u += 10 {
		st.apply(u, u)
	}
	if got, want := st.stored(), []int64{1000, 990, 960, 900, 840, 720, 480, 0}; !slices.Equal(got, want) {
		t.Errorf("after syncs 0..1000: stored %v, want %v", got, want)
	}
	for u := int64(1010); u <= 10000; u += 10 {
		st.apply(u, u)
	}
	if got, want := st.stored(), []int64{10000, 9990, 9960, 9900, 9840, 9600, 9120, 8640, 7680, 3840, 0}; !slices.Equal(got, want) {
		t.Errorf("after syncs 0..10000: stored %v, want %v", got, want)
	}

	// OffsetSyncStoreTest.testPastOffsetTranslation: after a clearing start-up
	// only 1000 is left.
	var cleared mm2Store
	cleared.apply(1000, 1000)
	for u := int64(1010); u <= 10000; u += 10 {
		cleared.apply(u, u)
	}
	if got, want := cleared.stored(), []int64{10000, 9990, 9970, 9940, 9880, 9640, 9160, 8680, 6760, 4840, 1000}; !slices.Equal(got, want) {
		t.Errorf("cleared start, then 1010..10000: stored %v, want %v", got, want)
	}
	for g, want := range map[int64]int64{999: -1, 4839: 1001, 4840: 4840, 9999: 9991} {
		if got, _ := cleared.translate(g); got != want {
			t.Errorf("cleared: translate(%d) = %d, want %d", g, got, want)
		}
	}
	cleared.apply(1500, 11000) // upstream rewind: clears
	for g, want := range map[int64]int64{1499: -1, 1500: 11000, 2000: 11001} {
		if got, _ := cleared.translate(g); got != want {
			t.Errorf("after the rewind: translate(%d) = %d, want %d", g, got, want)
		}
	}

	var evo mm2Store
	want := map[int64][]int64{
		0: {0}, 101: {101, 0}, 202: {202, 101, 0}, 303: {303, 202, 0}, 404: {404, 303, 202, 0},
		505: {505, 404, 202, 0}, 808: {808, 707, 606, 404, 0}, 1010: {1010, 909, 808, 404, 0},
	}
	for u := int64(0); u <= 1010; u += 101 {
		evo.apply(u, u+5)
		if w, ok := want[u]; ok && !slices.Equal(evo.stored(), w) {
			t.Errorf("evolution after %d: stored %v, want %v", u, evo.stored(), w)
		}
	}

	var basic mm2Store
	check := func(g, want int64) {
		t.Helper()
		if got, ok := basic.translate(g); !ok || got != want {
			t.Errorf("translate(%d) = %d, %v; want %d", g, got, ok, want)
		}
	}
	basic.apply(100, 200)
	check(150, 201)
	basic.apply(150, 251)
	check(150, 251)
	check(5, -1)
	basic.apply(200, 10)
	check(200, 10)
	basic.apply(20, 20)
	check(20, 20)
}
