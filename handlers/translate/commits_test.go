package translate

import (
	"maps"
	"testing"
	"time"

	"github.com/checkpointd/checkpointd/messages"
)

func groupsOn(c *Commits, tp messages.TopicPartition) map[string]int64 {
	out := map[string]int64{}
	c.ForEachGroupOn(tp, func(group string, cm Commit) { out[group] = cm.Offset })
	return out
}

func TestCommits(t *testing.T) {
	a := messages.TopicPartition{Topic: "orders", Partition: 0}
	b := messages.TopicPartition{Topic: "orders", Partition: 1}
	c := NewCommits()
	c.Set("g1", a, Commit{Offset: 10, Metadata: "m"})
	c.Set("g1", b, Commit{Offset: 20})
	c.Set("g2", a, Commit{Offset: 30})
	c.Set("g2", a, Commit{Offset: 31}) // latest wins

	if got, want := groupsOn(c, a), map[string]int64{"g1": 10, "g2": 31}; !maps.Equal(got, want) {
		t.Fatalf("groups on a = %v, want %v", got, want)
	}
	if cm, ok := c.Get("g1", a); !ok || cm.Offset != 10 || cm.Metadata != "m" {
		t.Fatalf("Get(g1, a) = %+v, %v", cm, ok)
	}
	if g, p := c.Len(); g != 2 || p != 3 {
		t.Fatalf("Len = %d groups, %d pairs; want 2, 3", g, p)
	}

	c.Delete("g2", a) // tombstone
	if got, want := groupsOn(c, a), map[string]int64{"g1": 10}; !maps.Equal(got, want) {
		t.Fatalf("after delete, groups on a = %v, want %v", got, want)
	}
	c.Set("g1", b, Commit{Offset: -1}) // "no offset" deletes
	if _, ok := c.Get("g1", b); ok {
		t.Fatal("negative offset kept as a commit")
	}
	c.Set("g3", b, Commit{Offset: 5})
	c.DeleteGroup("g1")
	if got := groupsOn(c, a); len(got) != 0 {
		t.Fatalf("after group deletion, groups on a = %v", got)
	}
	var of []messages.TopicPartition
	c.ForEachOf("g3", func(tp messages.TopicPartition, cm Commit) { of = append(of, tp) })
	if len(of) != 1 || of[0] != b {
		t.Fatalf("partitions of g3 = %v", of)
	}
	if g, p := c.Len(); g != 1 || p != 1 {
		t.Fatalf("Len = %d groups, %d pairs; want 1, 1", g, p)
	}
	c.Delete("nobody", a) // no-op
	c.DeleteGroup("nobody")
}

func TestCommitsSetExistingDoesNotAllocate(t *testing.T) {
	c := NewCommits()
	tp := messages.TopicPartition{Topic: "orders", Partition: 3}
	c.Set("g", tp, Commit{Offset: 1})
	offset := int64(1)
	allocs := testing.AllocsPerRun(1000, func() {
		offset++
		c.Set("g", tp, Commit{Offset: offset})
		c.ForEachGroupOn(tp, func(string, Commit) {})
	})
	if allocs != 0 {
		t.Fatalf("Set and ForEachGroupOn of an existing pair allocate %.1f times", allocs)
	}
}

func TestCommitsKeepTimeToTheMillisecond(t *testing.T) {
	tp := messages.TopicPartition{Topic: "orders", Partition: 0}
	at := time.Date(2026, 12, 3, 21, 0, 0, 123_456_789, time.UTC)
	tests := []struct {
		name string
		in   time.Time
		want time.Time
	}{
		{"no time", time.Time{}, time.Time{}},
		{"nanoseconds dropped", at, at.Truncate(time.Millisecond)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCommits()
			c.Set("g", tp, Commit{Offset: 5, Metadata: "m", Time: tt.in})
			got, ok := c.Get("g", tp)
			if !ok || got.Offset != 5 || got.Metadata != "m" || !got.Time.Equal(tt.want) || got.Time.IsZero() != tt.want.IsZero() {
				t.Fatalf("Get = %+v, %v; want offset 5, metadata m, time %v", got, ok, tt.want)
			}
			c.ForEachOf("g", func(_ messages.TopicPartition, cm Commit) {
				if cm != got {
					t.Errorf("ForEachOf gives %+v, Get %+v", cm, got)
				}
			})
		})
	}
}
