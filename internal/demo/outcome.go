package demo

import "time"

// summary turns the final snapshot into the run's Summary.
func (r *rig) summary(s snapshot, interrupted bool) *Summary {
	sum := &Summary{
		Elapsed:     s.elapsed,
		Interrupted: interrupted,
		Produced:    s.produced,
		Mirrored:    s.mirrored,
		Filtered:    s.filtered,
		OffsetSyncs: s.syncs,
		Checkpoints: s.emitted,
		Delays:      r.delays(),
	}
	for _, row := range s.rows {
		sum.Partitions = append(sum.Partitions, PartitionResult{
			Group:        row.group,
			Partition:    row.tp.String(),
			SourceOffset: row.committed,
			TargetOffset: row.target,
			ExactTarget:  row.exact,
			Checkpoints:  row.checkpoints,
		})
	}
	return sum
}

// delays times each change of a target group's offset back to the source
// commit whose checkpoint first carried that offset.
func (r *rig) delays() []time.Duration {
	var out []time.Duration
	for gp, seen := range r.watcher.seen.all() {
		for _, t := range seen {
			upstream, ok := r.checkpoints.upstreamOf(gp, t.offset)
			if !ok {
				continue
			}
			if committedAt, ok := r.commits.firstAt(gp, upstream); ok {
				out = append(out, t.at.Sub(committedAt))
			}
		}
	}
	return out
}
