package kafkalog

import (
	"context"
	"testing"
	"time"
)

// The pauses double from the first to the ceiling, each within ±20 % of its
// nominal value, and Reset starts again from the first.
func TestBackoffDoublesWithJitterAndResets(t *testing.T) {
	const first, ceiling = 50 * time.Millisecond, 400 * time.Millisecond
	for range 50 { // the jitter is random: look at many sequences
		bo := newBackoff(first, ceiling)
		check := func(nominalMs ...time.Duration) {
			t.Helper()
			for i, ms := range nominalMs {
				n, d := ms*time.Millisecond, bo.NextBackOff()
				if lo, hi := n*8/10, n*12/10+1; d < lo || d > hi {
					t.Fatalf("pause %d = %v, want %v ±20 %%", i+1, d, n)
				}
			}
		}
		check(50, 100, 200, 400, 400, 400)
		bo.Reset()
		check(50, 100)
	}
}

func TestPauseStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if pause(ctx, newBackoff(time.Hour, time.Hour)) {
		t.Fatal("pause returned true after ctx ended")
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("pause took %v after ctx ended", d)
	}
}
