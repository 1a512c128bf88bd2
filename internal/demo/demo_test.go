package demo

import (
	"context"
	"log/slog"
	"testing"
	"time"
)

// TestDemoSyncsEveryGroupWithoutSkipping runs the whole demo briefly and
// checks its outcome independently of Summary.Verify.
func TestDemoSyncsEveryGroupWithoutSkipping(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two embedded clusters for several seconds")
	}
	checkOutcome(t, runDemo(t, 6*time.Second))
}

// TestDemoShort is the same end-to-end run at the shortest duration the demo
// allows, so that `go test -short` also drives the real pipeline against two
// clusters: source commits, checkpoints, target group commits.
func TestDemoShort(t *testing.T) {
	checkOutcome(t, runDemo(t, MinDuration))
}

func runDemo(t *testing.T, d time.Duration) *Summary {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))

	summary, err := Run(ctx, Options{Duration: d, Logger: logger})
	if err != nil {
		t.Fatalf("demo did not run: %v", err)
	}
	return summary
}

// checkOutcome fails unless every group committed on the source and got
// offsets on the target, none past the exact position, and Verify agrees.
func checkOutcome(t *testing.T, summary *Summary) {
	t.Helper()
	committed, synced := map[string]bool{}, map[string]bool{}
	for _, p := range summary.Partitions {
		if p.SourceOffset > 0 {
			committed[p.Group] = true
		}
		if p.TargetOffset > 0 {
			synced[p.Group] = true
		}
		if p.TargetOffset > p.ExactTarget {
			t.Errorf("group %s on %s: target offset %d is past the exact position %d (source offset %d): records skipped",
				p.Group, p.Partition, p.TargetOffset, p.ExactTarget, p.SourceOffset)
		}
	}
	for _, g := range defaultScenario().groups {
		switch {
		case !committed[g.name]:
			t.Errorf("group %s never committed on the source", g.name)
		case !synced[g.name]:
			t.Errorf("group %s committed on the source but has no offsets on the target", g.name)
		}
	}
	if summary.Checkpoints == 0 || summary.OffsetSyncs == 0 || summary.Mirrored == 0 {
		t.Errorf("nothing flowed: %d records mirrored, %d offset syncs, %d checkpoints",
			summary.Mirrored, summary.OffsetSyncs, summary.Checkpoints)
	}
	if err := summary.Verify(); err != nil {
		t.Errorf("Verify: %v", err)
	}
	if t.Failed() {
		_ = summary.Print(t.Output())
	}
}
