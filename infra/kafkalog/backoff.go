package kafkalog

import (
	"context"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// newBackoff paces retries after a failure to reach the cluster, the topic
// or a partition: from min, doubling up to max, with ±20 % jitter so that
// many instances hitting the same broker error do not retry in step. Reset
// it after a success.
func newBackoff(min, max time.Duration) *backoff.ExponentialBackOff {
	return &backoff.ExponentialBackOff{InitialInterval: min, MaxInterval: max, Multiplier: 2, RandomizationFactor: 0.2}
}

// pause sleeps for the next pause of bo. It returns false if ctx ended first.
func pause(ctx context.Context, bo backoff.BackOff) bool {
	return sleep(ctx, bo.NextBackOff())
}

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
