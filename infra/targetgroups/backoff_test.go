package targetgroups

import (
	"context"
	"testing"
	"time"
)

// Every extra attempt waits Admin.Retry.Backoff ±20 %; the first waits
// nothing, and neither does any when the backoff is zero.
func TestPauseKeepsTheAdminBackoffWithJitter(t *testing.T) {
	for _, tt := range []struct {
		name     string
		backoff  time.Duration
		attempt  int
		min, max time.Duration
	}{
		{"first attempt", 200 * time.Millisecond, 0, 0, 50 * time.Millisecond},
		{"no backoff", 0, 3, 0, 50 * time.Millisecond},
		{"second attempt", 200 * time.Millisecond, 1, 160 * time.Millisecond, 300 * time.Millisecond},
		{"fifth attempt, not doubled", 200 * time.Millisecond, 5, 160 * time.Millisecond, 300 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &Client{backoff: tt.backoff}
			bo := c.retryBackoff()
			for range tt.attempt - 1 { // the pauses before this attempt
				bo.NextBackOff()
			}
			start := time.Now()
			if err := c.pause(context.Background(), bo, tt.attempt); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d < tt.min || d > tt.max {
				t.Errorf("paused %v, want %v to %v", d, tt.min, tt.max)
			}
		})
	}
}

func TestPauseReturnsWhenContextEnds(t *testing.T) {
	c := &Client{backoff: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.pause(ctx, c.retryBackoff(), 1); err != context.Canceled {
		t.Fatalf("pause = %v, want context.Canceled", err)
	}
}
