package translate

import (
	"math"
	"testing"
)

// javaRandom reproduces java.util.Random, so the property tests replay the
// exact sequences MM2's OffsetSyncStoreTest draws from new Random(0L).
type javaRandom struct{ seed int64 }

const (
	javaMultiplier = 0x5DEECE66D
	javaAddend     = 0xB
	javaMask       = 1<<48 - 1
)

func newJavaRandom(seed int64) *javaRandom {
	return &javaRandom{seed: (seed ^ javaMultiplier) & javaMask}
}

func (r *javaRandom) next(bits int) int32 {
	r.seed = (r.seed*javaMultiplier + javaAddend) & javaMask
	return int32(r.seed >> (48 - bits))
}

func (r *javaRandom) nextLong() int64 {
	hi := int64(r.next(32)) << 32
	return hi + int64(r.next(32))
}

func (r *javaRandom) nextDouble() float64 {
	return float64(int64(r.next(26))<<27+int64(r.next(27))) * 0x1.0p-53
}

// boundedLong is one element of Random.longs(n, origin, bound).
func (r *javaRandom) boundedLong(origin, bound int64) int64 {
	v := r.nextLong()
	n := bound - origin
	m := n - 1
	switch {
	case n&m == 0:
		return v&m + origin
	case n > 0:
		u := int64(uint64(v) >> 1)
		for {
			v = u % n
			if u+m-v >= 0 {
				return v + origin
			}
			u = int64(uint64(r.nextLong()) >> 1)
		}
	default:
		for v < origin || v >= bound {
			v = r.nextLong()
		}
		return v
	}
}

// The expected values were printed by OpenJDK 17's java.util.Random.
func TestJavaRandomMatchesJDK(t *testing.T) {
	r := newJavaRandom(0)
	var got []int64
	got = append(got, r.nextLong(), int64(r.next(32)))
	for range 3 {
		got = append(got, r.boundedLong(0, 1<<5))
	}
	for range 3 {
		got = append(got, r.boundedLong(1<<16, 1<<16+1<<40))
	}
	for range 3 {
		got = append(got, r.boundedLong(7, 1000))
	}
	d := newJavaRandom(0)
	for range 3 {
		got = append(got, int64(math.Float64bits(d.nextDouble())))
	}
	want := []int64{
		-4962768465676381896, 1033096058,
		22, 23, 30,
		469582662955, 323776987683, 330647442223,
		914, 393, 774,
		4604759192054975113, 4597834257986432532, 4603916565303848833,
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("value %d = %d, want %d (all: %v)", i, got[i], want[i], got)
		}
	}
}
