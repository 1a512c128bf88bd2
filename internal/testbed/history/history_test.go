package history

import (
	"strings"
	"testing"
	"time"

	"github.com/checkpointd/checkpointd/messages"
)

var t0 = time.Unix(1_700_000_000, 0)

func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

// run is a clean synthetic history: group g commits 11, 21, ..., 101 on
// orders-0 every 100 ms, each checkpointed 20 ms later and on the target
// 50 ms later, identity replication (as the offset syncs say), 1 s bound.
func run() *History {
	h := &History{Replicated: Identity{}, Remote: func(s string) string { return "src." + s },
		Bound: time.Second, End: ms(5000), SyncsTarget: true}
	remote := messages.TopicPartition{Topic: "src.orders"}
	for i := 1; i <= 10; i++ {
		off := int64(i*10 + 1)
		at := i * 100
		h.Commits = append(h.Commits, Commit{Group: "g", TopicPartition: messages.TopicPartition{Topic: "orders"}, Offset: off, At: ms(at)})
		h.Syncs = append(h.Syncs, Sync{OffsetSync: messages.OffsetSync{TopicPartition: messages.TopicPartition{Topic: "orders"}, UpstreamOffset: off - 1, DownstreamOffset: off - 1}, At: ms(at - 5)})
		h.Checkpoints = append(h.Checkpoints, Checkpoint{Checkpoint: messages.Checkpoint{Group: "g", TopicPartition: remote, UpstreamOffset: off, DownstreamOffset: off}, At: ms(at + 20), Offset: int64(i - 1)})
		h.TargetWrites = append(h.TargetWrites, TargetWrite{Group: "g", TopicPartition: remote, Offset: off, At: ms(at + 50)})
	}
	return h
}

// The checker passes a clean run, allows what the rewind rule allows, and
// catches each planted bug with a message naming the group, the partition
// and the offsets.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plant func(h *History)
		want  []string // substrings of one violation each; none: clean
	}{
		{"clean", func(*History) {}, nil},
		{"a translation one record too high", func(h *History) {
			h.Checkpoints[4].DownstreamOffset++
			h.TargetWrites[4].Offset++
		}, []string{
			"skip: group g, partition src.orders-0: checkpoint at offset 4 translates source offset 51 to 52, beyond 51",
			"skip: group g, partition src.orders-0: target offset 52 written at",
		}},
		{"a lowered target offset", func(h *History) {
			h.TargetWrites[6].Offset = 41
		}, []string{"target-lowered: group g, partition src.orders-0: target offset lowered from 61"}},
		{"a lost commit", func(h *History) {
			// The last commit's checkpoint and target write never happen.
			h.Checkpoints = h.Checkpoints[:9]
			h.TargetWrites = h.TargetWrites[:9]
		}, []string{"late: group g, partition src.orders-0: source offset 101 committed at"}},
		{"a commit checkpointed but never on the target", func(h *History) {
			h.TargetWrites = h.TargetWrites[:9]
		}, []string{"late: group g, partition src.orders-0: source offset 101 committed at", "checkpointed as 101", "is not on the target by"}},
		{"a checkpoint back without a rewind", func(h *History) {
			h.Checkpoints[5].DownstreamOffset = 41
			h.Checkpoints[5].UpstreamOffset = 61
		}, []string{"checkpoint-back: group g, partition src.orders-0: checkpoint at offset 5 went back from 51 (source 51) to 41 (source 61)"}},
		{"a checkpoint of an offset never committed", func(h *History) {
			h.Checkpoints[2].UpstreamOffset = 25
			h.Checkpoints[2].DownstreamOffset = 25
		}, []string{"skip: group g, partition src.orders-0: checkpoint at offset 2 has source offset 25, which the group had not committed"}},
		{"a source rewind followed back is allowed", func(h *History) {
			h.Commits = append(h.Commits, Commit{Group: "g", TopicPartition: messages.TopicPartition{Topic: "orders"}, Offset: 31, At: ms(1100)})
			h.Checkpoints = append(h.Checkpoints, Checkpoint{Checkpoint: messages.Checkpoint{Group: "g", TopicPartition: messages.TopicPartition{Topic: "src.orders"}, UpstreamOffset: 31, DownstreamOffset: 31}, At: ms(1120), Offset: 10})
			h.TargetWrites = append(h.TargetWrites, TargetWrite{Group: "g", TopicPartition: messages.TopicPartition{Topic: "src.orders"}, Offset: 31, At: ms(1150)})
		}, nil},
		{"a source rewind not followed within the bound", func(h *History) {
			h.Commits = append(h.Commits, Commit{Group: "g", TopicPartition: messages.TopicPartition{Topic: "orders"}, Offset: 31, At: ms(1100)})
		}, []string{"late: group g, partition src.orders-0: source offset 31 committed at"}},
		{"late only after the bound past the heal", func(h *History) {
			h.Healed = ms(1000)
			h.Checkpoints[9].At = ms(1900) // within heal + 1 s
			h.TargetWrites[9].At = ms(1950)
		}, nil},
		{"late past the heal", func(h *History) {
			h.Healed = ms(1000)
			h.Checkpoints[9].At = ms(2100)
			h.TargetWrites[9].At = ms(2150)
		}, []string{"late: group g, partition src.orders-0: source offset 101 committed at"}},
		{"late only after the bound past the fault it was made in", func(h *History) {
			h.Faults = []Window{{From: ms(950), To: ms(1500)}}
			h.Checkpoints[9].At = ms(2400) // within 1.5 s + 1 s
			h.TargetWrites[9].At = ms(2450)
		}, nil},
		{"a fault that began within the bound of the commit counts too", func(h *History) {
			h.Faults = []Window{{From: ms(1800), To: ms(2200)}}
			h.Checkpoints[9].At = ms(3100) // commit at 1 s, fault from 1.8 s to 2.2 s
			h.TargetWrites[9].At = ms(3150)
		}, nil},
		{"late past the end of the fault", func(h *History) {
			h.Faults = []Window{{From: ms(950), To: ms(1500)}, {From: ms(4000), To: ms(4500)}}
			h.Checkpoints[9].At = ms(2600)
			h.TargetWrites[9].At = ms(2650)
		}, []string{"late: group g, partition src.orders-0: source offset 101 committed at"}},
		{"a commit that translates as the last checkpoint needs none", func(h *History) {
			// On orders-1, 15 is past the sync at 10 as 11 is: both
			// translate to 11, and only 11 is checkpointed.
			onePartition(h, 15)
		}, nil},
		{"a commit past a sync needs its own checkpoint", func(h *History) {
			// 20 is at the sync at 20: it translates to 20, not 11.
			onePartition(h, 20)
		}, []string{"late: group g, partition src.orders-1: source offset 20 committed at"}},
		{"an active group written", func(h *History) {
			h.Active = []Span{{Group: "g", From: ms(640), To: ms(700)}}
		}, []string{"active-written: group g, partition src.orders-0: target offset 61 written at"}},
		{"replication with gaps: positions from the records", func(h *History) {
			// Source offsets 0..200 landed at 1000+ (a topic created later
			// on the target); translations say so.
			rec := Records{}
			for u := int64(0); u <= 200; u++ {
				rec[messages.TopicPartition{Topic: "src.orders"}] = append(rec[messages.TopicPartition{Topic: "src.orders"}], [2]int64{u, 1000 + u})
			}
			h.Replicated = rec
			for i := range h.Checkpoints {
				h.Checkpoints[i].DownstreamOffset += 1000
				h.TargetWrites[i].Offset += 1000
			}
			h.Checkpoints[3].DownstreamOffset++ // one too high
		}, []string{"skip: group g, partition src.orders-0: checkpoint at offset 3 translates source offset 41 to 1042, beyond 1041"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := run()
			tc.plant(h)
			vs, st := h.Check()
			if st.Judged == 0 {
				t.Errorf("no commit judged: %+v", st)
			}
			var got []string
			for _, v := range vs {
				got = append(got, v.String())
			}
			if tc.name == "clean" && (st.WorstLag != 50*time.Millisecond || st.WorstCatchUp != 50*time.Millisecond) {
				t.Errorf("WorstLag, WorstCatchUp = %v, %v; want the 50ms from each commit to its target write", st.WorstLag, st.WorstCatchUp)
			}
			if tc.name == "late only after the bound past the fault it was made in" && st.WorstCatchUp != 950*time.Millisecond {
				t.Errorf("WorstCatchUp = %v, want 950ms from the end of the fault to the target write", st.WorstCatchUp)
			}
			if len(tc.want) == 0 && len(got) > 0 {
				t.Fatalf("violations in a run without any:\n%s", strings.Join(got, "\n"))
			}
			if len(tc.want) > 0 && len(got) == 0 {
				t.Fatalf("no violation, want %q", tc.want)
			}
			for _, w := range tc.want {
				found := false
				for _, g := range got {
					if strings.Contains(g, w) {
						found = true
					}
				}
				if !found {
					t.Errorf("no violation contains %q; got:\n%s", w, strings.Join(got, "\n"))
				}
			}
			t.Logf("%d violations: %s", len(got), strings.Join(got, " | "))
		})
	}
}

// onePartition adds orders-1 to h: syncs at 10 and 20, commits of 11
// (checkpointed and on the target) and then of next, neither.
func onePartition(h *History, next int64) {
	src := messages.TopicPartition{Topic: "orders", Partition: 1}
	remote := messages.TopicPartition{Topic: "src.orders", Partition: 1}
	for _, u := range []int64{10, 20} {
		h.Syncs = append(h.Syncs, Sync{OffsetSync: messages.OffsetSync{TopicPartition: src, UpstreamOffset: u, DownstreamOffset: u}, At: ms(50)})
	}
	h.Commits = append(h.Commits,
		Commit{Group: "g", TopicPartition: src, Offset: 11, At: ms(100)},
		Commit{Group: "g", TopicPartition: src, Offset: next, At: ms(200)})
	h.Checkpoints = append(h.Checkpoints, Checkpoint{Checkpoint: messages.Checkpoint{Group: "g", TopicPartition: remote, UpstreamOffset: 11, DownstreamOffset: 11}, At: ms(120), Offset: 100})
	h.TargetWrites = append(h.TargetWrites, TargetWrite{Group: "g", TopicPartition: remote, Offset: 11, At: ms(150)})
}

func TestRecordsPosition(t *testing.T) {
	tp := messages.TopicPartition{Topic: "src.orders"}
	r := Records{tp: {{5, 0}, {6, 1}, {9, 2}}} // 7 and 8 not replicated (say, aborted)
	for _, tc := range []struct{ u, want int64 }{{0, 0}, {5, 0}, {6, 1}, {7, 2}, {9, 2}, {10, 3}, {100, 3}} {
		if got := r.Position(tp, tc.u); got != tc.want {
			t.Errorf("Position(%d) = %d, want %d", tc.u, got, tc.want)
		}
	}
	if got := r.Position(messages.TopicPartition{Topic: "other"}, 7); got != 0 {
		t.Errorf("Position of a partition with nothing replicated = %d, want 0", got)
	}
}
