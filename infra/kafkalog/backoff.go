package kafkalog

import (
	"context"
	"math/rand/v2"
	"time"
)

// backoff is an exponential pause between retries, with jitter so that many
// instances hitting the same broker error do not retry in step.
type backoff struct {
	min, max time.Duration
	next     time.Duration
}

func newBackoff(min, max time.Duration) *backoff {
	return &backoff{min: min, max: max, next: min}
}

// wait sleeps for the current pause and doubles it. It returns false if ctx
// ended first.
func (b *backoff) wait(ctx context.Context) bool {
	d := b.next
	b.next = min(2*b.next, b.max)
	// ±20 % jitter.
	d += time.Duration((rand.Float64()*0.4 - 0.2) * float64(d))
	return sleep(ctx, d)
}

// reset starts the pauses again from the shortest, after a success.
func (b *backoff) reset() { b.next = b.min }

// sleep pauses for d; it returns false if ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
