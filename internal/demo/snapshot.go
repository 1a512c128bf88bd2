package demo

import (
	"fmt"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/messages"
)

// snapshot is the state of a demo run at one moment.
type snapshot struct {
	elapsed  time.Duration
	total    time.Duration
	phase    string
	produced int64
	mirrored int64
	filtered int64
	syncs    int64
	emitted  int // checkpoints read back from the target
	rows     []partitionRow
}

// partitionRow is one group's progress on one source partition.
type partitionRow struct {
	groupPartition
	end         int64 // the source partition's log end offset
	committed   int64 // the group's committed offset on the source; -1 if none
	target      int64 // the group's committed offset on the target; -1 if none
	exact       int64 // where the group must resume on the target to miss nothing and repeat nothing; -1 if nothing committed
	exactKnown  bool  // false: the mirror is behind and exact is a lower bound
	checkpoints int
}

// lag is how far the group is behind the end of the source partition.
func (r partitionRow) lag() int64 {
	if r.committed < 0 {
		return r.end
	}
	return r.end - r.committed
}

// reread is how many records the group would read again if it failed over
// to the target now; negative would mean records skipped.
func (r partitionRow) reread() int64 { return r.exact - r.target }

// snapshot collects the state of every part of the run.
func (r *rig) snapshot() (snapshot, error) {
	s := snapshot{
		elapsed:  time.Since(r.started).Round(100 * time.Millisecond),
		total:    r.timeline.total,
		phase:    r.timeline.phase(time.Since(r.started)),
		produced: r.producer.written.Load(),
		syncs:    r.mirror.syncsWritten.Load(),
	}
	s.mirrored, s.filtered = r.mirror.positions.totals()
	s.emitted, _ = r.checkpoints.totals()

	ends := make(map[messages.TopicPartition]int64)
	for _, g := range r.scene.groups {
		for _, tp := range r.scene.partitions(g.topics...) {
			end, ok := ends[tp]
			if !ok {
				var err error
				if end, err = r.source.client.GetOffset(tp.Topic, tp.Partition, sarama.OffsetNewest); err != nil {
					return snapshot{}, fmt.Errorf("end offset of %s on source cluster: %w", tp, err)
				}
				ends[tp] = end
			}
			gp := groupPartition{g.name, tp}
			row := partitionRow{groupPartition: gp, end: end, committed: -1, target: -1, exact: -1, checkpoints: r.checkpoints.emitted(gp)}
			if c, ok := r.commits.latest(gp); ok {
				row.committed = c
				row.exact, row.exactKnown = r.mirror.positions.targetPosition(tp, c)
			}
			if t, ok := r.watcher.seen.latest(gp); ok {
				row.target = t
			}
			s.rows = append(s.rows, row)
		}
	}
	return s, nil
}
