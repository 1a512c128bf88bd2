package handlers

import (
	"context"
	"testing"
	"time"

	"github.com/checkpointd/checkpointd/messages"
)

// TestIdleCommitsAndEmitExact: idle commits off a sync are listed with
// their last checkpoint; an exact translation of one is emitted as an
// ordinary checkpoint when it is newer, and refused when the commit moved
// meanwhile or the translation is not newer; MM2's rule does not take it
// back afterwards.
func TestIdleCommitsAndEmitExact(t *testing.T) {
	ctx := context.Background()
	c, rec := newTestCheckpointer(t, ".*", ".*")
	openGate(c)
	old, now := time.Unix(1000, 0), time.Unix(2000, 0)
	c.ApplySync(ctx, syncOf(orders0, 100, 90))
	c.SourceCommit(ctx, 0, commitRec("idle", orders0, 150), old)
	c.SourceCommit(ctx, 0, commitRec("at-sync", orders0, 100), old)
	c.SourceCommit(ctx, 0, commitRec("busy", orders0, 160), now)
	rec.take()

	idle := c.IdleCommits(now.Add(-time.Second))
	if len(idle) != 1 {
		t.Fatalf("IdleCommits = %+v, want only group idle", idle)
	}
	want := IdleCommit{Group: "idle", Upstream: orders0, Target: messages.TopicPartition{Topic: "source.orders"}, Offset: 150, Checkpointed: 91}
	if idle[0] != want {
		t.Fatalf("IdleCommits = %+v, want %+v", idle[0], want)
	}

	tests := []struct {
		name       string
		offset     int64
		downstream int64
		emit       bool
	}{
		{"the commit moved since", 149, 140, false},
		{"not newer than MM2's", 150, 91, false},
		{"exact and newer", 150, 140, true},
		{"again: not newer", 150, 140, false},
	}
	for _, tc := range tests {
		if got := c.EmitExact(ctx, "idle", orders0, tc.offset, tc.downstream); got != tc.emit {
			t.Fatalf("%s: EmitExact = %v, want %v", tc.name, got, tc.emit)
		}
	}
	wantCheckpoints(t, rec.take(), cp("idle", 150, 140))
	// A new sync re-decides the group by MM2's rule: 151 is not newer.
	c.ApplySync(ctx, syncOf(orders0, 120, 110))
	for _, got := range rec.take() {
		if got.Group == "idle" {
			t.Fatalf("MM2's rule after the exact checkpoint emitted %+v", got)
		}
	}
	if idle := c.IdleCommits(now.Add(-time.Second)); len(idle) != 1 || idle[0].Checkpointed != 140 {
		t.Fatalf("IdleCommits after the exact checkpoint = %+v", idle)
	}
	c.ShardRevoked(0)
	if c.EmitExact(ctx, "idle", orders0, 150, 145) || len(c.IdleCommits(now)) != 0 {
		t.Fatal("emitted or listed a group of a revoked shard")
	}
}
