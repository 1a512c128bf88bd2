package translate

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/checkpointd/checkpointd/messages"
)

var tp0 = messages.TopicPartition{Topic: "topic1", Partition: 2}

func upstreams(ix *Index, tp messages.TopicPartition) []int64 {
	var out []int64
	for _, s := range ix.Syncs(tp) {
		out = append(out, s.Upstream)
	}
	return out
}

type probe struct {
	upstream int64
	want     int64 // −1 means BehindOldestSync
}

func checkProbes(t *testing.T, ix *Index, probes []probe) {
	t.Helper()
	for _, p := range probes {
		got := ix.Translate(tp0, p.upstream)
		if p.want == -1 {
			if got.Outcome != BehindOldestSync || got.Reason != ReasonBehindOldestSync || got.Downstream != -1 {
				t.Errorf("Translate(%d) = %+v, want behind_oldest_sync", p.upstream, got)
			}
			continue
		}
		if got.Outcome != Translated || got.Downstream != p.want || got.Reason != ReasonNone {
			t.Errorf("Translate(%d) = %+v, want %d", p.upstream, got, p.want)
		}
	}
}

// sparseProbes is MM2's assertSparseSync: around a stored sync at u the
// translation steps from the previous stored sync (+1) to u itself.
func sparseProbes(u, previous int64) []probe {
	before := int64(-1)
	if previous != -1 {
		before = previous + 1
	}
	return []probe{{u - 1, before}, {u, u}, {u + 1, u + 1}, {u + 2, u + 1}}
}

// MM2's OffsetSyncStoreTest.testPastOffsetTranslation: start-up without
// loaded checkpoints keeps only the latest start-up sync.
func TestIndexStartupClearsWithoutCheckpoints(t *testing.T) {
	ix := NewIndex(Options{CheckpointsLoaded: false})
	offset := int64(0)
	for ; offset <= 1000; offset += 10 {
		if ix.Apply(tp0, offset, offset) {
			t.Fatalf("Apply(%d) before the gate opened reported a change", offset)
		}
	}
	ix.OpenGate()
	if got := upstreams(ix, tp0); !slices.Equal(got, []int64{1000}) {
		t.Fatalf("after start-up stored %v, want [1000]", got)
	}
	checkProbes(t, ix, []probe{{999, -1}, {1000, 1000}, {1001, 1001}})

	for ; offset <= 10000; offset += 10 {
		if !ix.Apply(tp0, offset, offset) {
			t.Fatalf("Apply(%d) with the gate open reported no change", offset)
		}
	}
	want := []int64{10000, 9990, 9970, 9940, 9880, 9640, 9160, 8680, 6760, 4840, 1000}
	if got := upstreams(ix, tp0); !slices.Equal(got, want) {
		t.Fatalf("after live syncs stored %v, want %v", got, want)
	}
	// Invariant D: the last start-up sync is still the oldest.
	checkProbes(t, ix, sparseProbes(1000, -1))
	for i := len(want) - 2; i >= 0; i-- {
		checkProbes(t, ix, sparseProbes(want[i], want[i+1]))
	}
	checkProbes(t, ix, []probe{{4839, 1001}, {4840, 4840}, {9999, 9991}})

	// An upstream rewind clears the history.
	ix.Apply(tp0, 1500, 11000)
	if got := upstreams(ix, tp0); !slices.Equal(got, []int64{1500}) {
		t.Fatalf("after rewind stored %v, want [1500]", got)
	}
	checkProbes(t, ix, []probe{{1499, -1}, {1500, 11000}, {2000, 11001}})
}

// MM2's OffsetSyncStoreTest.testPastOffsetTranslationWithoutInitializationReadToEnd:
// with the checkpoints loaded, start-up keeps history.
func TestIndexStartupKeepsHistoryWithCheckpoints(t *testing.T) {
	ix := NewIndex(Options{CheckpointsLoaded: true})
	offset := int64(0)
	for ; offset <= 1000; offset += 10 {
		ix.Apply(tp0, offset, offset)
	}
	ix.OpenGate()
	if got, want := upstreams(ix, tp0), []int64{1000, 990, 960, 900, 840, 720, 480, 0}; !slices.Equal(got, want) {
		t.Fatalf("after start-up stored %v, want %v", got, want)
	}
	for ; offset <= 10000; offset += 10 {
		ix.Apply(tp0, offset, offset)
	}
	want := []int64{10000, 9990, 9960, 9900, 9840, 9600, 9120, 8640, 7680, 3840, 0}
	if got := upstreams(ix, tp0); !slices.Equal(got, want) {
		t.Fatalf("after live syncs stored %v, want %v", got, want)
	}
	for i := len(want) - 2; i >= 0; i-- {
		checkProbes(t, ix, sparseProbes(want[i], want[i+1]))
	}
	checkProbes(t, ix, []probe{{-1, -1}, {0, 0}})
}

// MM2's OffsetSyncStoreTest.testOffsetTranslation.
func TestIndexBasicExample(t *testing.T) {
	ix := NewIndex(Options{})
	ix.OpenGate()
	steps := []struct {
		u, d   int64
		probes []probe
	}{
		{100, 200, []probe{{150, 201}}},
		{150, 251, []probe{{150, 251}, {5, -1}}},
		{200, 10, []probe{{200, 10}}}, // downstream reset
		{20, 20, []probe{{20, 20}}},   // upstream reset
	}
	for _, s := range steps {
		ix.Apply(tp0, s.u, s.d)
		checkProbes(t, ix, s.probes)
	}
}

// The slot evolution under updateSyncArray, computed with a port of
// OffsetSyncStore: syncs every 101 with d = u + 5.
func TestIndexSmallEvolution(t *testing.T) {
	want := map[int64][]int64{
		0:    {0},
		101:  {101, 0},
		202:  {202, 101, 0},
		303:  {303, 202, 0},
		404:  {404, 303, 202, 0},
		505:  {505, 404, 202, 0},
		808:  {808, 707, 606, 404, 0},
		1010: {1010, 909, 808, 404, 0},
	}
	ix := NewIndex(Options{})
	ix.OpenGate()
	for u := int64(0); u <= 1010; u += 101 {
		ix.Apply(tp0, u, u+5)
		if w, ok := want[u]; ok {
			if got := upstreams(ix, tp0); !slices.Equal(got, w) {
				t.Errorf("after sync %d stored %v, want %v", u, got, w)
			}
		}
	}
}

// MM2's testNoTranslationIfStoreNotStarted and testNoTranslationIfNoOffsetSync.
func TestIndexGateAndMissingPartition(t *testing.T) {
	ix := NewIndex(Options{})
	for _, g := range []int64{0, 100, 200} {
		if got := ix.Translate(tp0, g); got.Outcome != NoResult || got.Reason != ReasonGateClosed || got.Downstream != -1 {
			t.Errorf("empty, gate closed: Translate(%d) = %+v", g, got)
		}
	}
	ix.Apply(tp0, 100, 200)
	for _, g := range []int64{0, 100, 200} {
		if got := ix.Translate(tp0, g); got.Outcome != NoResult || got.Reason != ReasonGateClosed {
			t.Errorf("gate closed: Translate(%d) = %+v", g, got)
		}
	}
	if ix.GateOpen() {
		t.Fatal("gate open before OpenGate")
	}
	ix.OpenGate()
	checkProbes(t, ix, []probe{{0, -1}, {100, 200}, {200, 201}})

	other := messages.TopicPartition{Topic: "topic1", Partition: 3}
	if got := ix.Translate(other, 0); got.Outcome != NoResult || got.Reason != ReasonNoSyncYet || got.Downstream != -1 {
		t.Errorf("no sync: Translate = %+v", got)
	}
	if got := ix.Stats(); got != (Stats{Partitions: 1, Syncs: 1, GateOpen: true}) {
		t.Errorf("Stats = %+v", got)
	}
}

func TestIndexTranslationCarriesSync(t *testing.T) {
	ix := NewIndex(Options{})
	ix.OpenGate()
	ix.Apply(tp0, 10, 110)
	ix.Apply(tp0, 20, 130)
	tests := []struct {
		g    int64
		want Translation
	}{
		{5, Translation{Outcome: BehindOldestSync, Downstream: -1, Reason: ReasonBehindOldestSync, Sync: Sync{10, 110}}},
		{10, Translation{Outcome: Translated, Downstream: 110, Sync: Sync{10, 110}}},
		{15, Translation{Outcome: Translated, Downstream: 111, Sync: Sync{10, 110}}},
		{20, Translation{Outcome: Translated, Downstream: 130, Sync: Sync{20, 130}}},
		{1 << 40, Translation{Outcome: Translated, Downstream: 131, Sync: Sync{20, 130}}},
	}
	for _, tt := range tests {
		if got := ix.Translate(tp0, tt.g); got != tt.want {
			t.Errorf("Translate(%d) = %+v, want %+v", tt.g, got, tt.want)
		}
	}
}

func TestIndexApplyReportsChange(t *testing.T) {
	ix := NewIndex(Options{})
	if ix.Apply(tp0, 0, 0) {
		t.Error("first sync with the gate closed reported a change")
	}
	ix.OpenGate()
	other := messages.TopicPartition{Topic: "t", Partition: 0}
	if !ix.Apply(other, 5, 5) {
		t.Error("first sync of a partition with the gate open reported no change")
	}
	if !ix.Apply(tp0, 10, 10) {
		t.Error("new sync reported no change")
	}
	if !ix.Apply(tp0, 3, 3) {
		t.Error("rewind reported no change")
	}
}

// Equal offsets received twice are two syncs, as two Java objects would be:
// MM2's array then holds both, and so must the index. An implementation that
// compared values would merge them and fail the rows marked below.
func TestIndexIdentityNotValue(t *testing.T) {
	steps := []struct {
		u    int64
		want []int64
	}{
		{100, []int64{100}},
		{100, []int64{100, 100}}, // value-equal, still two syncs
		{100, []int64{100, 100}},
		{101, []int64{101, 100}},
		{101, []int64{101, 100}},
		{104, []int64{104, 100}},
		{104, []int64{104, 104, 100}}, // value-equal, still two syncs
		{104, []int64{104, 104, 100}},
		{120, []int64{120, 100}},
	}
	ix := NewIndex(Options{})
	ix.OpenGate()
	ref := &refStore{readToEnd: true}
	for i, s := range steps {
		ix.Apply(tp0, s.u, s.u)
		ref.apply(s.u, s.u)
		if got := upstreams(ix, tp0); !slices.Equal(got, s.want) {
			t.Fatalf("step %d (sync %d): stored %v, want %v", i, s.u, got, s.want)
		}
		if got, want := ix.Syncs(tp0), ref.distinct(); !slices.Equal(got, want) {
			t.Fatalf("step %d (sync %d): stored %v, reference %v", i, s.u, got, want)
		}
	}
}

// Every partition number keeps its own history, whether it goes to a topic's
// dense array (in any order, growing it) or aside (negative, maxDense and
// above), and the table grows past many topics without losing one.
func TestIndexPartitionNumbers(t *testing.T) {
	ix := NewIndex(Options{CheckpointsLoaded: true})
	ix.OpenGate()
	parts := []int32{5_000, 0, 1, maxDense - 1, maxDense, -1, math.MaxInt32, math.MinInt32, 7, 3}
	var tps []messages.TopicPartition
	for k := range 200 { // 200 topics: the topic table grows several times
		for _, p := range parts {
			tps = append(tps, messages.TopicPartition{Topic: fmt.Sprintf("t%d", k), Partition: p})
		}
	}
	// Each tp gets a sync whose offsets say which tp it is.
	for i, tp := range tps {
		ix.Apply(tp, int64(i)*10, int64(i)*10+1)
	}
	for i, tp := range tps {
		got := ix.Syncs(tp)
		if len(got) != 1 || got[0] != (Sync{Upstream: int64(i) * 10, Downstream: int64(i)*10 + 1}) {
			t.Fatalf("%v: syncs %v, want the one applied to it", tp, got)
		}
		if tr := ix.Translate(tp, int64(i)*10); tr.Outcome != Translated || tr.Downstream != int64(i)*10+1 {
			t.Fatalf("%v: %+v", tp, tr)
		}
	}
	if ix.Partitions() != len(tps) {
		t.Errorf("Partitions() = %d, want %d", ix.Partitions(), len(tps))
	}
	for _, tp := range []messages.TopicPartition{{Topic: "t0", Partition: 2}, {Topic: "t0", Partition: 5_001}, {Topic: "t0", Partition: -2}, {Topic: "nope", Partition: 0}} {
		if tr := ix.Translate(tp, 0); tr.Outcome != NoResult || tr.Reason != ReasonNoSyncYet {
			t.Errorf("%v (no sync): %+v", tp, tr)
		}
	}
}
