package translate

import (
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/checkpointd/checkpointd/messages"
)

var scenarios = flag.Int("translate.scenarios", 0,
	"mirror scenarios run by TestTranslationNeverSkipsARecord (0: 100000, or 5000 with -short or -race)")

// Where a simulated group's committed offset is drawn from.
const (
	anywhere   = iota // uniform over the source log
	nearMirror        // around the last record mirrored
	atSync            // at or next to an offset sync
	nearHead          // at the source log end: the group is caught up
	categories
)

var traceScenario = flag.Int64("translate.trace", -1,
	"log the events of this scenario of TestTranslationNeverSkipsARecord")

var categoryNames = [categories]string{"anywhere", "near mirror", "at a sync", "at source end"}

type oracleStats struct {
	outcomes        [3]int
	replays         [categories][]int32
	settled         [categories][]int32 // replays once the mirror and index are idle and caught up
	byLag           map[int64][]int32   // replays by offset.lag.max
	truncationSkips int                 // translations past a record that target truncation explains
	failures        []string
}

func (s *oracleStats) merge(o *oracleStats) {
	for i := range s.outcomes {
		s.outcomes[i] += o.outcomes[i]
	}
	for c := range s.replays {
		s.replays[c] = append(s.replays[c], o.replays[c]...)
		s.settled[c] = append(s.settled[c], o.settled[c]...)
	}
	for lag, r := range o.byLag {
		if s.byLag == nil {
			s.byLag = make(map[int64][]int32)
		}
		s.byLag[lag] = append(s.byLag[lag], r...)
	}
	s.truncationSkips += o.truncationSkips
	s.failures = append(s.failures, o.failures...)
}

// TestTranslationNeverSkipsARecord checks the first invariant of DESIGN.md on
// simulated mirrors: a translated offset is never past the true target
// position of the first record at or after the committed source offset. It
// also measures how many records a consumer resuming there reads again.
//
// Each scenario mirrors one partition with random compaction holes,
// transaction markers, SMT-filtered records, source-task restarts, target
// truncation, topic recreation, sync batching (offset.lag.max, delayed syncs,
// the in-flight cap), an index that lags the sync topic and is sometimes
// rebuilt from a compacted topic in either start-up mode, and checks random
// group commits against the true target log.
//
// Target truncation is the one way to skip: a sync naming a record the target
// later lost still maps offsets after it, and after a task restart the lost
// copy may have been the only one after the sync. MM2 does the same (it
// clears only on an upstream rewind); such cases are counted and reported,
// not failed.
func TestTranslationNeverSkipsARecord(t *testing.T) {
	n := *scenarios
	if n == 0 {
		n = 100_000
		if testing.Short() || raceEnabled {
			n = 5_000
		}
	}
	workers := runtime.GOMAXPROCS(0)
	partial := make([]oracleStats, workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				runScenario(uint64(i), &partial[w], nil)
			}
		})
	}
	wg.Wait()
	if *traceScenario >= 0 {
		runScenario(uint64(*traceScenario), &oracleStats{}, t.Logf)
	}

	var total oracleStats
	for i := range partial {
		total.merge(&partial[i])
	}
	for i, f := range total.failures {
		if i == 10 {
			t.Errorf("... and %d more", len(total.failures)-10)
			break
		}
		t.Error(f)
	}
	t.Logf("%d scenarios: %d translated, %d behind oldest sync, %d no result; %d skips explained by target truncation",
		n, total.outcomes[Translated], total.outcomes[BehindOldestSync], total.outcomes[NoResult], total.truncationSkips)
	var all []int32
	for c := range total.replays {
		all = append(all, total.replays[c]...)
		t.Logf("replayed records, group %-13s %s", categoryNames[c]+":", distribution(total.replays[c]))
	}
	t.Logf("replayed records, all groups:        %s", distribution(all))
	for c := range total.settled {
		t.Logf("settled mirror, group %-13s %s", categoryNames[c]+":", distribution(total.settled[c]))
	}
	for _, lag := range slices.Sorted(maps.Keys(total.byLag)) {
		t.Logf("replayed records, offset.lag.max=%-4d %s", lag, distribution(total.byLag[lag]))
	}
	if total.outcomes[Translated] == 0 {
		t.Fatal("no translation was checked")
	}
}

func distribution(v []int32) string {
	if len(v) == 0 {
		return "none"
	}
	slices.Sort(v)
	q := func(p float64) int32 { return v[int(p*float64(len(v)-1))] }
	exact := 0
	for _, x := range v {
		if x == 0 {
			exact++
		}
	}
	return fmt.Sprintf("n=%d exact=%.1f%% median=%d p90=%d p99=%d max=%d",
		len(v), 100*float64(exact)/float64(len(v)), q(0.5), q(0.9), q(0.99), v[len(v)-1])
}

func runScenario(seed uint64, stats *oracleStats, trace func(string, ...any)) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	p := randomSimParams(rng)
	m := newMirror(p, rng)
	m.trace = trace
	tp := messages.TopicPartition{Topic: "orders", Partition: 0}

	ix := NewIndex(Options{CheckpointsLoaded: rng.IntN(2) == 0})
	ix.OpenGate()
	applied := 0 // syncs of m.syncs the index has read

	// check translates a few group commits against the truth. settled means
	// the mirror has flushed its syncs and the index has read them all.
	check := func(settled bool) {
		if !settled && rng.IntN(10) == 0 {
			// checkpointd restarts: it reads the compacted sync topic, where
			// only the latest of the older syncs survives, then the head.
			ix = NewIndex(Options{CheckpointsLoaded: rng.IntN(2) == 0})
			if c := rng.IntN(applied + 1); c > 0 {
				ix.Apply(tp, m.syncs[c-1].Upstream, m.syncs[c-1].Downstream)
				for _, s := range m.syncs[c:applied] {
					ix.Apply(tp, s.Upstream, s.Downstream)
				}
			}
			ix.OpenGate()
		}
		m.logf("index rebuilt or reading")
		// The index reads the sync topic with some lag.
		upTo := applied + rng.IntN(len(m.syncs)-applied+1)
		if settled {
			upTo = len(m.syncs)
		}
		for _, s := range m.syncs[applied:upTo] {
			ix.Apply(tp, s.Upstream, s.Downstream)
		}
		applied = upTo

		for c := range categories {
			g, ok := pickCommit(rng, m, c, applied)
			if !ok {
				continue
			}
			tr := ix.Translate(tp, g)
			safe, witness := m.safePosition(g)
			if trace != nil {
				trace("group at %d -> %+v (true position %d)", g, tr, safe)
			}
			stats.outcomes[tr.Outcome]++
			if tr.Outcome != Translated {
				continue
			}
			if tr.Downstream <= safe {
				n := int32(m.replayed(tr.Downstream, g))
				stats.replays[c] = append(stats.replays[c], n)
				if settled {
					stats.settled[c] = append(stats.settled[c], n)
				}
				if stats.byLag == nil {
					stats.byLag = make(map[int64][]int32)
				}
				stats.byLag[p.lagMax] = append(stats.byLag[p.lagMax], n)
				continue
			}
			// Target truncation: the sync names a record the target lost, or
			// the record skipped lost its later copy and only an older
			// duplicate (from a task restart) is left before the sync.
			if m.stale(tr.Sync) || m.lost[witness] {
				stats.truncationSkips++
				continue
			}
			stats.failures = append(stats.failures, fmt.Sprintf(
				"scenario %d (%+v) at ack %d: group at %d translated to %d via %+v, past the true position %d",
				seed, p, m.tick, g, tr.Downstream, tr.Sync, safe))
		}
	}
	for m.tick < p.records {
		m.step()
		if rng.IntN(p.records/10+1) == 0 {
			check(false)
		}
	}
	m.inFlight = nil // every send completed
	m.commit()       // the last delayed sync goes out
	check(true)
}

// pickCommit draws a committed source offset of the given category.
func pickCommit(rng *rand.Rand, m *mirror, category, applied int) (int64, bool) {
	switch category {
	case anywhere:
		return rng.Int64N(m.head + 1), true
	case nearMirror:
		if m.pos == 0 {
			return 0, false
		}
		return max(0, m.source[m.pos-1].u+rng.Int64N(7)-3), true
	case atSync:
		if applied == 0 {
			return 0, false
		}
		return max(0, m.syncs[rng.IntN(applied)].Upstream+rng.Int64N(3)-1), true
	default:
		return max(0, m.head-rng.Int64N(3)), true
	}
}
