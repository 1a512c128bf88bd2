package translate

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/checkpointd/checkpointd/messages"
)

// expirations feeds the index syncs (u, u) at first and then at each step, as
// MM2's assertSyncSpacingHasBoundedExpirations does, checking invariants A and
// D after each one. It returns the most syncs one update expired and the
// offset of the sync that did it.
func expirations(t *testing.T, first int64, steps func(yield func(int64) bool)) (worst int, at int64) {
	t.Helper()
	ix := NewIndex(Options{CheckpointsLoaded: true})
	ix.OpenGate()
	tp := messages.TopicPartition{Topic: "topic1", Partition: 2}
	ix.Apply(tp, first, first)
	offset, last := first, 1
	for step := range steps {
		offset += step
		if offset < 0 {
			t.Fatalf("test is invalid: offset overflowed")
		}
		ix.Apply(tp, offset, offset)
		syncs := ix.Syncs(tp)
		if syncs[0].Upstream != offset {
			t.Fatalf("invariant A: newest stored sync %d, want %d", syncs[0].Upstream, offset)
		}
		if oldest := syncs[len(syncs)-1].Upstream; oldest != first {
			t.Fatalf("invariant D: oldest stored sync %d, want %d", oldest, first)
		}
		// One sync was added, so an unchanged count means one expired.
		if expired := last - len(syncs) + 1; expired > worst {
			worst, at = expired, offset
		}
		last = len(syncs)
	}
	return worst, at
}

func repeat(step int64, n int) func(func(int64) bool) {
	return func(yield func(int64) bool) {
		for range n {
			if !yield(step) {
				return
			}
		}
	}
}

func javaLongs(r *javaRandom, n int, origin, bound int64) func(func(int64) bool) {
	return func(yield func(int64) bool) {
		for range n {
			if !yield(r.boundedLong(origin, bound)) {
				return
			}
		}
	}
}

func digits(s string) func(func(int64) bool) {
	return func(yield func(int64) bool) {
		for _, c := range s {
			if !yield(int64(c - '0')) {
				return
			}
		}
	}
}

// MM2's testConsistentlySpacedSyncs: evenly spaced syncs (any offset.lag.max)
// expire at most one stored sync per update.
func TestExpiryConsistentlySpacedSyncs(t *testing.T) {
	const iterations = 100
	for step := int64(1); step < math.MaxInt64/iterations; step = step*2 + 1 {
		for first := int64(0); first < 30; first++ {
			if worst, at := expirations(t, first, repeat(step, iterations)); worst > 1 {
				t.Fatalf("step %d from %d: %d syncs expired at %d, want at most 1", step, first, worst, at)
			}
		}
	}
}

// MM2's testRandomlySpacedSyncs, on the very sequences its new Random(0L)
// draws: gaps varying by less than 2^n expire at most n+2 syncs per update.
func TestExpiryRandomlySpacedSyncs(t *testing.T) {
	const iterationBits = 10
	r := newJavaRandom(0)
	for n := 1; n < 64-iterationBits; n++ {
		maxDiff := int64(1) << n
		const lagMax = 1 << 16
		for _, origin := range []int64{0, lagMax} {
			if worst, at := expirations(t, 0, javaLongs(r, 1<<iterationBits, origin, origin+maxDiff)); worst > n+2 {
				t.Fatalf("n=%d origin=%d: %d syncs expired at %d, want at most %d", n, origin, worst, at, n+2)
			}
		}
	}
}

// MM2's testDroppedSyncsSpacing: gaps of offset.lag.max or twice that, as if
// every other sync were lost, expire at most 2 syncs per update.
func TestExpiryDroppedSyncsSpacing(t *testing.T) {
	r := newJavaRandom(0)
	const lagMax = 100
	steps := func(yield func(int64) bool) {
		for range 10000 {
			step := int64(lagMax)
			if r.nextDouble() < 0.5 {
				step = 2 * lagMax
			}
			if !yield(step) {
				return
			}
		}
	}
	worst, at := expirations(t, 0, steps)
	if worst > 2 {
		t.Fatalf("%d syncs expired at %d, want at most 2", worst, at)
	}
}

// The n+2 bound is a property of the sequences MM2's test happens to draw, not
// of every sequence with that spread. A search over other random sequences of
// the same shape found these; the algorithm follows MM2's updateSyncArray
// exactly (the reference port agrees step by step), so they are recorded, not
// "fixed".
//
// Counterexample 1, steps uniform in [0, 4) (n = 2, bound 4): before the last
// sync the store holds one sync per slot, 262 261 260 257 249 242 213 182 69 0;
// sync 265 leaves 265 262 260 249 213 0, expiring five (261, 257, 242, 182, 69).
// About 0.5% of random 400-step sequences of this shape break the bound.
//
// Counterexample 2, steps in {1, 2} (n = 1, bound 3): the last sync expires four.
func TestExpiryBoundCounterexamples(t *testing.T) {
	tests := []struct {
		name    string
		steps   string
		bound   int
		expired int
		at      int64
	}{
		{"steps 0..3", "013033010322130323023302002030003223311203301333002320030202023333332113023021113112033322202033113330002223111313131120030120232011102302020221232330211122332301103", 4, 5, 265},
		{"steps 1..2", "21121222212222211211221121211221221221212121121221222121222212212122222222212122212121111222222112112212212121222211212212112211211222222222112211221111221122122222222212", 3, 4, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			worst, at := expirations(t, 0, digits(tt.steps))
			if worst != tt.expired || worst <= tt.bound || (tt.at >= 0 && at != tt.at) {
				t.Fatalf("worst expiry %d at %d; the recorded counterexample expires %d (> %d) at %d", worst, at, tt.expired, tt.bound, tt.at)
			}
			// The exact port of updateSyncArray does the same.
			ix := NewIndex(Options{CheckpointsLoaded: true})
			ix.OpenGate()
			ref := &refStore{readToEnd: true}
			offset := int64(0)
			ix.Apply(tp0, 0, 0)
			ref.apply(0, 0)
			for step := range digits(tt.steps) {
				offset += step
				ix.Apply(tp0, offset, offset)
				ref.apply(offset, offset)
				if got, want := ix.Syncs(tp0), ref.distinct(); !slices.Equal(got, want) {
					t.Fatalf("at %d: index %v, reference %v", offset, got, want)
				}
			}
		})
	}
}

func ExampleIndex_Syncs() {
	ix := NewIndex(Options{})
	ix.OpenGate()
	tp := messages.TopicPartition{Topic: "orders", Partition: 0}
	for u := int64(0); u <= 1010; u += 101 {
		ix.Apply(tp, u, u+5)
	}
	fmt.Println(ix.Syncs(tp))
	fmt.Println(ix.Translate(tp, 850).Downstream)
	// Output:
	// [{1010 1015} {909 914} {808 813} {404 409} {0 5}]
	// 814
}
