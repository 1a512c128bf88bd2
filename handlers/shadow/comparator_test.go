package shadow

import (
	"testing"
	"time"

	"github.com/checkpointd/checkpointd/messages"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func cp(group string, partition int32, up, down int64) messages.Checkpoint {
	return messages.Checkpoint{Group: group, TopicPartition: messages.TopicPartition{Topic: "src.orders", Partition: partition},
		UpstreamOffset: up, DownstreamOffset: down}
}

type freshness []time.Duration

func (f *freshness) FreshnessGained(d time.Duration) { *f = append(*f, d) }

// TestReport feeds one pair through each scenario and checks its row.
func TestReport(t *testing.T) {
	upstream := messages.TopicPartition{Topic: "orders", Partition: 0}
	rename := func(topic string) string { return "src." + topic }
	for _, tc := range []struct {
		name        string
		feed        func(c *Comparator)
		status      Status
		reason      string
		unexplained bool
		aheadBy     int64
		earlier     time.Duration // 0: none
		target      int64
	}{
		{name: "restored and nothing newer: equal", status: Equal, target: -1, feed: func(c *Comparator) {
			c.Restored(cp("g", 0, 10, 10), t0)
			c.Skipped("g", upstream, 10, messages.SkipNotNewer)
		}},
		{name: "decided what MM2 later wrote: equal, earlier", status: Equal, target: 20, earlier: 40 * time.Second, feed: func(c *Comparator) {
			c.Decided(cp("g", 0, 20, 20), t0)
			c.MM2(cp("g", 0, 20, 20), t0.Add(40*time.Second))
			c.Target("g", map[messages.TopicPartition]int64{{Topic: "src.orders", Partition: 0}: 20})
		}},
		{name: "ahead: records and seconds", status: Ahead, aheadBy: 30, earlier: 25 * time.Second, target: -1, feed: func(c *Comparator) {
			c.Decided(cp("g", 0, 10, 10), t0)
			c.Decided(cp("g", 0, 20, 20), t0.Add(5*time.Second))
			c.Decided(cp("g", 0, 50, 50), t0.Add(50*time.Second))
			c.MM2(cp("g", 0, 20, 20), t0.Add(30*time.Second))
		}},
		{name: "mm2 missing", status: MM2Missing, target: -1, feed: func(c *Comparator) {
			c.Decided(cp("g", 0, 10, 10), t0)
		}},
		{name: "planted: MM2 higher for the same commit", status: Behind, reason: ReasonLowerTranslation, unexplained: true, target: -1, feed: func(c *Comparator) {
			c.Decided(cp("g", 0, 20, 20), t0)
			c.MM2(cp("g", 0, 20, 25), t0.Add(time.Second))
		}},
		{name: "restored, MM2 translated higher, checkpointd not newer", status: Behind, reason: ReasonLowerTranslation, unexplained: true, target: -1, feed: func(c *Comparator) {
			c.Restored(cp("g", 0, 10, 10), t0)
			c.Skipped("g", upstream, 20, messages.SkipNotNewer)
			c.MM2(cp("g", 0, 20, 20), t0.Add(time.Second))
		}},
		{name: "behind because the source rewound", status: Behind, reason: ReasonSourceRewind, target: -1, feed: func(c *Comparator) {
			c.Decided(cp("g", 0, 50, 50), t0)
			c.MM2(cp("g", 0, 50, 50), t0.Add(time.Second))
			c.Decided(cp("g", 0, 5, 5), t0.Add(2*time.Second))
		}},
		{name: "behind: MM2 saw a commit checkpointd did not", status: Behind, reason: ReasonCommitNotSeen, unexplained: true, target: -1, feed: func(c *Comparator) {
			c.Decided(cp("g", 0, 10, 10), t0)
			c.MM2(cp("g", 0, 30, 30), t0.Add(time.Second))
		}},
		{name: "behind with a rule: no translation", status: Behind, reason: "behind_oldest_sync", target: -1, feed: func(c *Comparator) {
			c.Decided(cp("g", 0, 10, 10), t0)
			c.Skipped("g", upstream, 30, messages.SkipBehindOldestSync)
			c.MM2(cp("g", 0, 30, 30), t0.Add(time.Second))
		}},
		{name: "checkpointd missing, vetoed", status: CheckpointdMissing, reason: "vetoed", target: -1, feed: func(c *Comparator) {
			c.Skipped("g", upstream, 30, messages.SkipVetoed)
			c.MM2(cp("g", 0, 30, 30), t0)
		}},
		{name: "checkpointd missing, filtered group", status: CheckpointdMissing, reason: ReasonFilteredGroup, target: -1, feed: func(c *Comparator) {
			c.MM2(cp("other", 0, 30, 30), t0)
		}},
		{name: "checkpointd missing, nothing said", status: CheckpointdMissing, reason: ReasonNoDecision, unexplained: true, target: -1, feed: func(c *Comparator) {
			c.MM2(cp("g", 0, 30, 30), t0)
		}},
		{name: "gate closed is no verdict", status: CheckpointdMissing, reason: ReasonNoDecision, unexplained: true, target: -1, feed: func(c *Comparator) {
			c.Skipped("g", upstream, 30, messages.SkipGateClosed)
			c.MM2(cp("g", 0, 30, 30), t0)
		}},
		{name: "a rewind forgets the offsets above it", status: Equal, target: -1, earlier: time.Second, feed: func(c *Comparator) {
			c.Decided(cp("g", 0, 40, 40), t0)
			c.Decided(cp("g", 0, 10, 10), t0.Add(time.Second))
			c.Decided(cp("g", 0, 30, 30), t0.Add(5*time.Second))
			c.MM2(cp("g", 0, 30, 30), t0.Add(6*time.Second))
		}},
		{name: "MM2 first: nothing earlier", status: Equal, target: -1, feed: func(c *Comparator) {
			c.MM2(cp("g", 0, 30, 30), t0)
			c.Decided(cp("g", 0, 30, 30), t0.Add(time.Second))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fresh freshness
			c := New(Config{Rename: rename, Groups: func(g string) bool { return g == "g" }, Observer: &fresh})
			tc.feed(c)
			rows := c.Report(nil)
			if len(rows) != 1 {
				t.Fatalf("rows = %+v, want one", rows)
			}
			r := rows[0]
			if r.Status != tc.status || r.Reason != tc.reason || r.Unexplained != tc.unexplained || r.AheadBy != tc.aheadBy || r.Target != tc.target {
				t.Errorf("row = %+v\nwant status %s reason %q unexplained %v ahead by %d target %d", r, tc.status, tc.reason, tc.unexplained, tc.aheadBy, tc.target)
			}
			switch {
			case tc.earlier == 0 && r.EarlierSeconds != nil:
				t.Errorf("earlier = %v s, want none", *r.EarlierSeconds)
			case tc.earlier != 0 && (r.EarlierSeconds == nil || *r.EarlierSeconds != tc.earlier.Seconds()):
				t.Errorf("earlier = %v, want %v", r.EarlierSeconds, tc.earlier)
			case tc.earlier != 0 && (len(fresh) != 1 || fresh[0] != tc.earlier):
				t.Errorf("freshness observed %v, want [%v]", fresh, tc.earlier)
			}
		})
	}
}

// TestReportFreshnessOnEqual: MM2 catching up to checkpointd is freshness
// gained even though the row is equal once it has.
func TestReportFreshnessOnEqual(t *testing.T) {
	var fresh freshness
	c := New(Config{Observer: &fresh})
	c.Decided(cp("g", 0, 20, 20), t0)
	c.MM2(cp("g", 0, 20, 20), t0.Add(40*time.Second))
	if len(fresh) != 1 || fresh[0] != 40*time.Second {
		t.Fatalf("freshness %v, want [40s]", fresh)
	}
	c.Decided(cp("g", 1, 20, 20), t0.Add(time.Minute))
	c.MM2(cp("g", 1, 20, 20), t0.Add(30*time.Second)) // MM2 first: nothing gained
	if len(fresh) != 1 {
		t.Fatalf("freshness %v after MM2 was first", fresh)
	}
	counts := Count(c.Report(nil))
	if counts.ByStatus[Equal] != 2 || counts.Unexplained != 0 {
		t.Fatalf("counts %+v", counts)
	}
}

// TestMarksBounded: a pair keeps at most maxMarks decisions; the oldest go.
func TestMarksBounded(t *testing.T) {
	c := New(Config{})
	for i := range int64(3 * maxMarks) {
		c.Decided(cp("g", 0, i, i), t0.Add(time.Duration(i)*time.Second))
	}
	p := c.pairs[key{"g", messages.TopicPartition{Topic: "src.orders", Partition: 0}}]
	if len(p.marks) != maxMarks || p.marks[0].offset != 2*maxMarks {
		t.Fatalf("%d marks from %d", len(p.marks), p.marks[0].offset)
	}
}

// TestTargetAndGroups: the target's offsets land on the group's pairs, a
// partition it has no offset for is -1, and Report keeps only what keep
// accepts.
func TestTargetAndGroups(t *testing.T) {
	c := New(Config{})
	c.Decided(cp("a", 0, 1, 1), t0)
	c.Decided(cp("a", 1, 1, 1), t0)
	c.Decided(cp("b", 0, 1, 1), t0)
	c.Decided(cp("a", 1, 12, 12), t0)
	c.Target("a", map[messages.TopicPartition]int64{{Topic: "src.orders", Partition: 0}: 7, {Topic: "src.orders", Partition: 1}: 10})
	c.Target("a", map[messages.TopicPartition]int64{{Topic: "src.orders", Partition: 1}: 10}) // partition 0's offset gone
	rows := c.Report(func(g string) bool { return g == "a" })
	if len(rows) != 2 || rows[0].Target != -1 || rows[1].Target != 10 || rows[1].TargetBehindBy != 2 || rows[0].TargetBehindBy != 0 {
		t.Fatalf("rows %+v", rows)
	}
	if g := c.Groups(); len(g) != 2 || g[0] != "a" || g[1] != "b" {
		t.Fatalf("groups %v", g)
	}
}
