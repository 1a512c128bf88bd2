package translate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// runsOf returns, per slot, the index of the distinct sync the slot holds in
// the index's history of tp0.
func runsOf(ix *Index) [slots]uint8 {
	var out [slots]uint8
	ix.parts.Load().find(tp0).load().slotsInto(&out)
	return out
}

// slotUpstreams returns the upstream offset each slot of tp0 holds.
func slotUpstreams(ix *Index) [slots]int64 {
	h := ix.parts.Load().find(tp0).load()
	var runs [slots]uint8
	h.slotsInto(&runs)
	var out [slots]int64
	for c, k := range runs {
		out[c] = h.syncs()[k].Upstream
	}
	return out
}

// refRuns is runsOf for the reference: the run number of each slot.
func refRuns(st *refStore) [slots]uint8 {
	var out [slots]uint8
	for i := 1; i < slots; i++ {
		out[i] = out[i-1]
		if st.syncs[i] != st.syncs[i-1] {
			out[i]++
		}
	}
	return out
}

// sparseInvariant is MM2's assertSparseSyncInvariant (B and C for every pair
// of slots holding different upstream offsets), on the slots' offsets.
func sparseInvariant(up [slots]int64) error {
	for j := range slots {
		for i := range j {
			if up[i] == up[j] {
				continue
			}
			lower := up[j] + int64(1)<<max(i-2, 0)
			if lower < 0 {
				continue
			}
			if up[i] < lower {
				return fmt.Errorf("invariant C(%d,%d): %d at slot %d should be at least %d", i, j, up[i], i, lower)
			}
			upper := up[j] + int64(1)<<j - int64(1)<<i
			if upper < 0 {
				continue
			}
			if up[i] > upper {
				return fmt.Errorf("invariant B(%d,%d): %d at slot %d should be at most %d", i, j, up[i], i, upper)
			}
		}
	}
	return nil
}

// op is one step of a generated sequence.
type op struct {
	openGate bool
	u, d     int64
}

// replay applies ops to an index and to the reference port side by side and
// reports the first difference in stored syncs, slot layout or translation.
func replay(keepStartup bool, ops []op, probes []int64) error {
	ix := NewIndex(Options{CheckpointsLoaded: keepStartup})
	ref := &refStore{keepStartup: keepStartup}
	for i, o := range ops {
		if o.openGate {
			ix.OpenGate()
			ref.readToEnd = true
			continue
		}
		ix.Apply(tp0, o.u, o.d)
		ref.apply(o.u, o.d)
		if got, want := ix.Syncs(tp0), ref.distinct(); !slices.Equal(got, want) {
			return fmt.Errorf("op %d %+v: stored %v, reference %v", i, o, got, want)
		}
		if got, want := runsOf(ix), refRuns(ref); got != want {
			return fmt.Errorf("op %d %+v: slots %v, reference %v", i, o, got, want)
		}
		if err := sparseInvariant(slotUpstreams(ix)); err != nil {
			return fmt.Errorf("op %d %+v: %v", i, o, err)
		}
		if !ix.GateOpen() {
			continue
		}
		for _, g := range probes {
			want, _ := ref.translate(g)
			got := ix.Translate(tp0, g)
			if (want == -1) != (got.Outcome == BehindOldestSync) || (want != -1 && got.Downstream != want) {
				return fmt.Errorf("op %d: Translate(%d) = %+v, reference %d", i, g, got, want)
			}
		}
	}
	return nil
}

// randomOps draws a sequence mixing the step shapes that matter: repeats,
// unit and small steps, exponential ones, rewinds and offsets near the int64
// limit, where the invariant bounds wrap.
func randomOps(rng *rand.Rand, n int) []op {
	ops := make([]op, 0, n+1)
	u := rng.Int64N(1000)
	if rng.IntN(8) == 0 {
		u = math.MaxInt64 - rng.Int64N(1<<20)
	}
	gateAt := rng.IntN(n + 1)
	for i := range n {
		if i == gateAt {
			ops = append(ops, op{openGate: true})
		}
		switch k := rng.IntN(20); {
		case k < 2: // repeat
		case k < 8:
			u += 1 + rng.Int64N(4)
		case k < 14:
			u += rng.Int64N(200)
		case k < 17:
			u += int64(1) << rng.IntN(62)
		case k < 18:
			u -= rng.Int64N(max(u, 1)) // rewind
		default:
			u += rng.Int64N(1 << 40)
		}
		if u < 0 {
			u = math.MaxInt64 - rng.Int64N(1<<10)
		}
		ops = append(ops, op{u: u, d: rng.Int64N(1 << 50)})
	}
	if gateAt == n {
		ops = append(ops, op{openGate: true})
	}
	return ops
}

// The compact index matches the pointer-identity port of MM2 slot for slot,
// keeps MM2's sparse invariants B and C, and translates the same.
func TestIndexMatchesReference(t *testing.T) {
	sequences := 3000
	if testing.Short() || raceEnabled {
		sequences = 300
	}
	for seed := range uint64(sequences) {
		rng := rand.New(rand.NewPCG(seed, 1))
		ops := randomOps(rng, 200)
		probes := []int64{0, 1, 100, 1 << 20, 1 << 40, math.MaxInt64 - 1, math.MaxInt64}
		for range 8 {
			probes = append(probes, ops[rng.IntN(len(ops))].u+rng.Int64N(5)-2)
		}
		if err := replay(seed%2 == 0, ops, probes); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

// FuzzIndex decodes arbitrary bytes into sync sequences and checks the index
// against the reference port and MM2's invariants A, B, C and D. Seeds cover
// repeats, small and exponential steps, wraparound and rewinds; run it longer
// with go test -fuzz FuzzIndex ./handlers/translate/.
func FuzzIndex(f *testing.F) {
	f.Add([]byte{0, 10, 10, 10, 10, 200, 3, 3, 3})
	f.Add([]byte{1, 0, 0, 0, 255, 255, 255, 128, 7})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		keepStartup := data[0]&1 == 1
		var ops []op
		u := int64(data[0]>>1) * 1000
		for _, b := range data[1:] {
			switch {
			case b == 0xff:
				ops = append(ops, op{openGate: true})
				continue
			case b >= 0xf0:
				u -= int64(b&0x0f) * 37 // rewind, maybe below zero
			case b >= 0xc0:
				u += int64(1) << (b & 0x3f) // exponential step; may wrap
			default:
				u += int64(b)
			}
			ops = append(ops, op{u: u, d: int64(b)})
		}
		probes := []int64{-1, 0, u - 1, u, u + 1, math.MaxInt64}
		if err := replay(keepStartup, ops, probes); err != nil {
			t.Fatal(err)
		}
		// Invariants on the final state, where the gate rules allow them.
		ix := NewIndex(Options{CheckpointsLoaded: keepStartup})
		ix.OpenGate()
		first := int64(math.MinInt64)
		for _, o := range ops {
			if o.openGate {
				continue
			}
			if first == math.MinInt64 || o.u < ix.Syncs(tp0)[0].Upstream {
				first = o.u // a rewind clears: the clearing sync is the oldest
			}
			ix.Apply(tp0, o.u, o.d)
			syncs := ix.Syncs(tp0)
			if syncs[0] != (Sync{o.u, o.d}) {
				t.Fatalf("invariant A: newest %v after applying %+v", syncs[0], o)
			}
			if syncs[len(syncs)-1].Upstream != first {
				t.Fatalf("invariant D: oldest %v, want upstream %d", syncs[len(syncs)-1], first)
			}
		}
	})
}
