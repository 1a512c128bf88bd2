package translate

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/checkpointd/checkpointd/messages"
)

// Readers translate while one writer applies syncs to existing partitions and
// adds new ones, growing the table. Run with -race. Each answer must be one
// some published history could give: syncs are (u, u+7) every 101 offsets
// from 0, so a translation is exact at a sync and never past g+7.
func TestIndexConcurrentTranslateAndApply(t *testing.T) {
	const partitions, rounds = 300, 60
	tps := partitionsOf(partitions)
	ix := NewIndex(Options{CheckpointsLoaded: true})
	ix.OpenGate()

	var done atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for r := range 4 {
		wg.Go(func() {
			for i := r; !done.Load(); i++ {
				tp := tps[i%partitions]
				g := int64(i*37) % (rounds * syncStep)
				tr := ix.Translate(tp, g)
				var err error
				switch tr.Outcome {
				case NoResult:
					if tr.Reason != ReasonNoSyncYet {
						err = fmt.Errorf("%v at %d: %+v", tp, g, tr)
					}
				case Translated:
					if tr.Downstream > g+7 || (g == tr.Sync.Upstream && tr.Downstream != g+7) {
						err = fmt.Errorf("%v at %d: %+v", tp, g, tr)
					}
				default:
					err = fmt.Errorf("%v at %d: %+v (the oldest sync is at 0)", tp, g, tr)
				}
				if err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
			}
		})
	}
	for k := range rounds {
		u := int64(k) * syncStep
		// Partitions join over time, so the table grows under the readers.
		for _, tp := range tps[:partitions*(k+1)/rounds] {
			if ix.Syncs(tp) == nil {
				ix.Apply(tp, 0, 7)
			}
			ix.Apply(tp, u, u+7)
		}
	}
	done.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := ix.Partitions(); got != partitions {
		t.Errorf("Partitions = %d, want %d", got, partitions)
	}
}

func TestCheckpointsAndCommitsConcurrentUse(t *testing.T) {
	cps := NewCheckpoints()
	commits := NewCommits()
	tp := messages.TopicPartition{Topic: "orders", Partition: 0}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			group := fmt.Sprintf("g%d", w%2)
			for i := range int64(2000) {
				commits.Set(group, tp, Commit{Offset: i})
				commits.ForEachGroupOn(tp, func(string, Commit) {})
				cps.Decide(group, tp, i, i)
				cps.Load(group, tp, i, i)
				cps.Last(group, tp)
				if i%100 == 0 {
					commits.DeleteGroup(group)
				}
			}
		})
	}
	wg.Wait()
}

func TestTranslateDoesNotAllocate(t *testing.T) {
	ix := buildIndex(partitionsOf(100), 50)
	tp := partitionsOf(100)[42]
	missing := messages.TopicPartition{Topic: "elsewhere", Partition: 1}
	allocs := testing.AllocsPerRun(1000, func() {
		ix.Translate(tp, 1234)
		ix.Translate(tp, -5)
		ix.Translate(missing, 10)
	})
	if allocs != 0 {
		t.Fatalf("Translate allocates %.1f times per call", allocs)
	}
}
