package demo

import "time"

// timeline splits a run into phases. The producer stops first, the groups
// then commit up to the end of the logs, and the last stretch lets the
// checkpoints and target commits settle before the summary is taken.
type timeline struct {
	total      time.Duration
	produceFor time.Duration // the producer writes for this long
	commitFor  time.Duration // the groups commit for this long
}

func newTimeline(total time.Duration) timeline {
	settle := min(max(total/5, 2*time.Second), 5*time.Second)
	commitFor := max(total-settle, total/2)
	return timeline{
		total:      total,
		produceFor: commitFor - settle/2,
		commitFor:  commitFor,
	}
}

// phase names what the run is doing at elapsed.
func (t timeline) phase(elapsed time.Duration) string {
	switch {
	case elapsed < t.produceFor:
		return "producing"
	case elapsed < t.commitFor:
		return "consumers catching up"
	case elapsed < t.total:
		return "settling"
	default:
		return "done"
	}
}
