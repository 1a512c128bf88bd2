package translate

import (
	"fmt"
	"maps"
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

// Four workers, one group each, share one partition (and pairs share two
// more) in Commits and Checkpoints. Different groups' operations commute, so
// whatever the interleaving, the final state must equal a sequential model's:
// a lost update or a miscounted pair fails this without the race detector.
func TestCheckpointsAndCommitsConcurrentUse(t *testing.T) {
	const workers = 4
	live := &realState{commits: NewCommits(), cps: NewCheckpoints()}
	var emitted [workers]int
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { emitted[w] = runScript(t, w, live) })
	}
	wg.Wait()

	model := &modelState{commits: map[string]map[messages.TopicPartition]int64{}, cps: map[checkpointKey]Checkpoint{}}
	for w := range workers {
		if want := runScript(t, w, model); emitted[w] != want {
			t.Errorf("g%d: Decide emitted %d checkpoints, the model %d", w, emitted[w], want)
		}
	}

	wantPairs := 0
	for group, want := range model.commits {
		wantPairs += len(want)
		got := map[messages.TopicPartition]int64{}
		live.commits.ForEachOf(group, func(tp messages.TopicPartition, cm Commit) { got[tp] = cm.Offset })
		if !maps.Equal(got, want) {
			t.Errorf("%s: commits %v, the model %v", group, got, want)
		}
	}
	if groups, pairs := live.commits.Len(); groups != len(model.commits) || pairs != wantPairs {
		t.Errorf("Commits.Len = %d groups, %d pairs; the model %d, %d", groups, pairs, len(model.commits), wantPairs)
	}
	for k, want := range model.cps {
		if got, ok := live.cps.Last(k.group, k.tp); !ok || got != want {
			t.Errorf("%s on %v: last checkpoint %+v (found %v), the model %+v", k.group, k.tp, got, ok, want)
		}
	}
	if got := live.cps.Len(); got != len(model.cps) {
		t.Errorf("Checkpoints.Len = %d, the model %d", got, len(model.cps))
	}
}

// runScript plays worker w's group on s and returns how many checkpoints
// were emitted. The upstream offset rewinds every 700 steps and the
// downstream one repeats, so Decide both emits and skips.
func runScript(t *testing.T, w int, s concurrentState) (emitted int) {
	group := fmt.Sprintf("g%d", w)
	shared := messages.TopicPartition{Topic: "orders", Partition: 0}
	own := messages.TopicPartition{Topic: "orders", Partition: int32(1 + w%2)}
	for i := range int64(20000) {
		s.set(group, shared, i)
		s.set(group, own, 2*i)
		if got := s.committed(group, shared); got != i {
			t.Errorf("%s step %d: reads its commit back as %d", group, i, got)
		}
		up, down := i%700, i/2
		if s.decide(group, shared, up, down) {
			emitted++
		}
		if i%250 == 0 {
			s.load(group, shared, up, down-10)
		}
		if i%100 == 50 {
			s.deleteGroup(group)
		}
	}
	return emitted
}

// concurrentState is what runScript drives: the real types or the model.
type concurrentState interface {
	set(group string, tp messages.TopicPartition, offset int64)
	committed(group string, tp messages.TopicPartition) int64 // -1: none
	deleteGroup(group string)
	decide(group string, tp messages.TopicPartition, up, down int64) bool
	load(group string, tp messages.TopicPartition, up, down int64)
}

type realState struct {
	commits *Commits
	cps     *Checkpoints
}

func (s *realState) set(group string, tp messages.TopicPartition, offset int64) {
	s.commits.Set(group, tp, Commit{Offset: offset})
}

// committed reads through the reverse view, which other groups' commits on
// tp share.
func (s *realState) committed(group string, tp messages.TopicPartition) int64 {
	offset := int64(-1)
	s.commits.ForEachGroupOn(tp, func(g string, cm Commit) {
		if g == group {
			offset = cm.Offset
		}
	})
	return offset
}

func (s *realState) deleteGroup(group string) { s.commits.DeleteGroup(group) }

func (s *realState) decide(group string, tp messages.TopicPartition, up, down int64) bool {
	emit, _ := s.cps.Decide(group, tp, up, down)
	return emit
}

func (s *realState) load(group string, tp messages.TopicPartition, up, down int64) {
	s.cps.Load(group, tp, up, down)
}

// modelState is plain maps and MM2's monotonicity rule written out again.
type modelState struct {
	commits map[string]map[messages.TopicPartition]int64
	cps     map[checkpointKey]Checkpoint
}

func (m *modelState) set(group string, tp messages.TopicPartition, offset int64) {
	if m.commits[group] == nil {
		m.commits[group] = map[messages.TopicPartition]int64{}
	}
	m.commits[group][tp] = offset
}

func (m *modelState) committed(group string, tp messages.TopicPartition) int64 {
	if offset, ok := m.commits[group][tp]; ok {
		return offset
	}
	return -1
}

func (m *modelState) deleteGroup(group string) { delete(m.commits, group) }

func (m *modelState) decide(group string, tp messages.TopicPartition, up, down int64) bool {
	k := checkpointKey{group, tp}
	if last, ok := m.cps[k]; ok && up >= last.Upstream && down <= last.Downstream {
		return false
	}
	m.cps[k] = Checkpoint{Upstream: up, Downstream: down}
	return true
}

func (m *modelState) load(group string, tp messages.TopicPartition, up, down int64) {
	m.cps[checkpointKey{group, tp}] = Checkpoint{Upstream: up, Downstream: down}
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
