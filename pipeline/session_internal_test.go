package pipeline

import (
	"testing"
	"time"
)

// The groups that share shards heartbeat twenty times a session, never
// more often than every 100 ms.
func TestSessionOfHeartbeats(t *testing.T) {
	for _, tt := range []struct {
		timeout time.Duration
		want    groupSession
	}{
		{0, groupSession{}},
		{6 * time.Second, groupSession{timeout: 6 * time.Second, heartbeat: 300 * time.Millisecond}},
		{3 * time.Second, groupSession{timeout: 3 * time.Second, heartbeat: 150 * time.Millisecond}},
		{time.Second, groupSession{timeout: time.Second, heartbeat: 100 * time.Millisecond}},
	} {
		if got := sessionOf(tt.timeout); got != tt.want {
			t.Errorf("sessionOf(%s) = %+v, want %+v", tt.timeout, got, tt.want)
		}
	}
}
