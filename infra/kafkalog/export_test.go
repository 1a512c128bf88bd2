package kafkalog

import (
	"time"

	"github.com/IBM/sarama"
)

// KeepMember returns a function that puts back, as r's current session, the
// session r has now, with client instead of the session's own: after r has
// left its group, Verify then answers as a zombie instance would (one that
// was paused while the group moved on), asking with its old member id.
func KeepMember(r *ShardedReader, client sarama.Client) (zombie func()) {
	m := r.member.Load()
	return func() {
		if m == nil {
			return
		}
		old := *m
		old.client = client
		r.member.Store(&old)
	}
}

// SetPartitionCountsRecheck shortens the pause between two lookups of a topic.
func SetPartitionCountsRecheck(c *PartitionCounts, d time.Duration) { c.recheck = d }
