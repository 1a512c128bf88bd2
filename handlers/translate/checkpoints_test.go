package translate

import (
	"math/rand/v2"
	"testing"

	"github.com/checkpointd/checkpointd/messages"
)

func TestCheckpointsDecide(t *testing.T) {
	renamed := messages.TopicPartition{Topic: "src.orders", Partition: 0}
	type step struct {
		name       string
		load       *Checkpoint // restore this before deciding
		upstream   int64
		downstream int64
		emit       bool
		reason     Reason
		last       Checkpoint // state afterwards
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"first checkpoint", []step{
			{name: "nothing before", upstream: 100, downstream: 90, emit: true, last: Checkpoint{100, 90}},
		}},
		{"repeat", []step{
			{name: "first", upstream: 100, downstream: 90, emit: true, last: Checkpoint{100, 90}},
			{name: "same again", upstream: 100, downstream: 90, reason: ReasonNotNewer, last: Checkpoint{100, 90}},
			{name: "group moved, same sync", upstream: 150, downstream: 90, reason: ReasonNotNewer, last: Checkpoint{100, 90}},
		}},
		{"downstream rise", []step{
			{name: "first", upstream: 100, downstream: 90, emit: true, last: Checkpoint{100, 90}},
			{name: "rise", upstream: 200, downstream: 190, emit: true, last: Checkpoint{200, 190}},
			{name: "rise, same upstream", upstream: 200, downstream: 191, emit: true, last: Checkpoint{200, 191}},
		}},
		{"upstream rewind", []step{
			{name: "first", upstream: 500, downstream: 400, emit: true, last: Checkpoint{500, 400}},
			{name: "group rewound: target may go back", upstream: 100, downstream: 50, emit: true, last: Checkpoint{100, 50}},
			{name: "rewound, target up", upstream: 90, downstream: 60, emit: true, last: Checkpoint{90, 60}},
		}},
		{"downstream would rewind", []step{
			{name: "first", upstream: 500, downstream: 400, emit: true, last: Checkpoint{500, 400}},
			// A sparser sync (e.g. after an upstream-rewind clear) translates lower.
			{name: "lower target, group not rewound", upstream: 600, downstream: 300, reason: ReasonNotNewer, last: Checkpoint{500, 400}},
		}},
		{"restart with loaded history", []step{
			{name: "loaded", load: &Checkpoint{6250, 5820}, upstream: 6250, downstream: 5000, reason: ReasonNotNewer, last: Checkpoint{6250, 5820}},
			{name: "older sync after restart", upstream: 7000, downstream: 5821, emit: true, last: Checkpoint{7000, 5821}},
			{name: "reload overwrites even backwards", load: &Checkpoint{10, 10}, upstream: 20, downstream: 11, emit: true, last: Checkpoint{20, 11}},
		}},
		{"no commit and no translation", []step{
			{name: "negative upstream", upstream: -1, downstream: 5, reason: ReasonNoCommit},
			{name: "negative downstream", upstream: 5, downstream: -1, reason: ReasonBehindOldestSync},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCheckpoints()
			for _, s := range tt.steps {
				if s.load != nil {
					c.Load("g", renamed, s.load.Upstream, s.load.Downstream)
				}
				emit, reason := c.Decide("g", renamed, s.upstream, s.downstream)
				if emit != s.emit || reason != s.reason {
					t.Fatalf("%s: Decide(%d, %d) = %v, %v; want %v, %v", s.name, s.upstream, s.downstream, emit, reason, s.emit, s.reason)
				}
				last, ok := c.Last("g", renamed)
				if want := s.last != (Checkpoint{}); ok != want || last != s.last {
					t.Fatalf("%s: Last = %+v, %v; want %+v", s.name, last, ok, s.last)
				}
			}
		})
	}
}

// Keys are (group, renamed partition): other groups and partitions are apart.
func TestCheckpointsKeys(t *testing.T) {
	c := NewCheckpoints()
	a := messages.TopicPartition{Topic: "src.orders", Partition: 0}
	b := messages.TopicPartition{Topic: "src.orders", Partition: 1}
	for _, k := range []struct {
		group string
		tp    messages.TopicPartition
	}{{"g1", a}, {"g1", b}, {"g2", a}} {
		if emit, _ := c.Decide(k.group, k.tp, 10, 10); !emit {
			t.Errorf("first checkpoint for %s %v not emitted", k.group, k.tp)
		}
	}
	if c.Len() != 3 {
		t.Errorf("Len = %d, want 3", c.Len())
	}
}

func TestReasonStrings(t *testing.T) {
	want := map[Reason]string{
		ReasonNone:             "none",
		ReasonNoSyncYet:        "no_sync_yet",
		ReasonBehindOldestSync: "behind_oldest_sync",
		ReasonFilteredTopic:    "filtered_topic",
		ReasonNoCommit:         "no_commit",
		ReasonNotNewer:         "not_newer",
		ReasonGateClosed:       "gate_closed",
	}
	for r, s := range want {
		if r.String() != s {
			t.Errorf("%d.String() = %q, want %q", r, r.String(), s)
		}
		if b, _ := r.MarshalText(); string(b) != s {
			t.Errorf("%d.MarshalText() = %q, want %q", r, b, s)
		}
	}
	if got := Reason(200).String(); got != "unknown" {
		t.Errorf("out of range reason = %q", got)
	}
}

// Whatever sequence of candidates arrives, the emitted checkpoints of a
// (group, partition) move the target offset back only when the source group
// rewound, and a skipped candidate is never newer than the last emitted one.
func TestCheckpointsNeverRewindWithoutSourceRewind(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	tp := messages.TopicPartition{Topic: "src.orders", Partition: 0}
	for run := range 2000 {
		c := NewCheckpoints()
		var last *Checkpoint
		for range 50 {
			u, d := rng.Int64N(100), rng.Int64N(100)
			emit, reason := c.Decide("g", tp, u, d)
			switch {
			case emit && last != nil && d < last.Downstream && u >= last.Upstream:
				t.Fatalf("run %d: emitted %d->%d after %+v: target went back without a rewind", run, u, d, *last)
			case !emit && (last == nil || u < last.Upstream || d > last.Downstream):
				t.Fatalf("run %d: skipped %d->%d (%v) after %v", run, u, d, reason, last)
			case emit:
				last = &Checkpoint{Upstream: u, Downstream: d}
			}
		}
	}
}

func TestCheckpointsDeleteGroups(t *testing.T) {
	c := NewCheckpoints()
	tp := messages.TopicPartition{Topic: "t", Partition: 0}
	for _, g := range []string{"a", "b", "c"} {
		c.Load(g, tp, 10, 5)
		c.Load(g, messages.TopicPartition{Topic: "t", Partition: 1}, 10, 5)
	}
	if n := c.DeleteGroups(func(g string) bool { return g != "b" }); n != 4 {
		t.Fatalf("DeleteGroups removed %d pairs, want 4", n)
	}
	if _, ok := c.Last("a", tp); ok {
		t.Fatal("group a still has a checkpoint")
	}
	if cp, ok := c.Last("b", tp); !ok || cp.Downstream != 5 {
		t.Fatalf("group b lost its checkpoint: %+v %v", cp, ok)
	}
	if c.Len() != 2 {
		t.Fatalf("Len = %d, want 2", c.Len())
	}
}
