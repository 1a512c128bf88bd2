package groupsync

import (
	"cmp"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

var (
	orders0 = messages.TopicPartition{Topic: "src.orders", Partition: 0}
	orders1 = messages.TopicPartition{Topic: "src.orders", Partition: 1}
	orders2 = messages.TopicPartition{Topic: "src.orders", Partition: 2}
	gone0   = messages.TopicPartition{Topic: "src.gone", Partition: 0}
)

type tps = map[messages.TopicPartition]targetgroup.Checkpoint
type reasons = map[messages.TopicPartition]targetgroup.Reason

func exists(ps ...messages.TopicPartition) map[messages.TopicPartition]bool {
	m := make(map[messages.TopicPartition]bool, len(ps))
	for _, p := range ps {
		m[p] = true
	}
	return m
}

func TestDecide(t *testing.T) {
	empty := targetgroup.Group{State: targetgroup.StateEmpty}
	notFound := targetgroup.Group{State: targetgroup.StateNotFound}
	two := tps{orders0: {Downstream: 100, Metadata: "m0"}, orders1: {Downstream: 200, Metadata: "m1"}}
	both := exists(orders0, orders1)

	tests := []struct {
		name        string
		in          Input
		wantCommit  tps
		wantSkipped reasons
		wantRewinds []messages.TopicPartition
	}{
		{
			name:       "new group gets every translated offset",
			in:         Input{Checkpoints: two, Target: notFound, Existing: both},
			wantCommit: two,
		},
		{
			name: "offset zero is committed (KAFKA-10048)",
			in: Input{Checkpoints: tps{orders0: {Downstream: 0}}, Target: notFound,
				Existing: exists(orders0)},
			wantCommit: tps{orders0: {Downstream: 0}},
		},
		{
			name: "empty group behind the translation moves forward",
			in: Input{Checkpoints: two, Target: empty, Existing: both,
				Current: map[messages.TopicPartition]int64{orders0: 50, orders1: 199}},
			wantCommit: two,
		},
		{
			name: "target equal to translation is not rewritten",
			in: Input{Checkpoints: two, Target: empty, Existing: both,
				Current: map[messages.TopicPartition]int64{orders0: 100, orders1: 10}},
			wantCommit:  tps{orders1: two[orders1]},
			wantSkipped: reasons{orders0: targetgroup.TargetAhead},
		},
		{
			name: "target ahead is never lowered, even after a source rewind",
			in: Input{Checkpoints: two, Target: empty, Existing: both,
				Current: map[messages.TopicPartition]int64{orders0: 5000, orders1: 201}},
			wantSkipped: reasons{orders0: targetgroup.TargetAhead, orders1: targetgroup.TargetAhead},
		},
		{
			name: "with rewinds followed, a target still at checkpointd's own offset goes back",
			in: Input{Checkpoints: two, Target: empty, Existing: both, FollowRewinds: true,
				Current: map[messages.TopicPartition]int64{orders0: 5000, orders1: 201},
				Ours:    map[messages.TopicPartition]targetgroup.Checkpoint{orders0: {Downstream: 5000, Upstream: 9000}, orders1: {Downstream: 201, Upstream: 300}}},
			wantCommit:  two,
			wantRewinds: []messages.TopicPartition{orders0, orders1},
		},
		{
			name: "with rewinds followed, a target a consumer moved is never lowered",
			in: Input{Checkpoints: two, Target: empty, Existing: both, FollowRewinds: true,
				Current: map[messages.TopicPartition]int64{orders0: 5001, orders1: 199},
				Ours:    map[messages.TopicPartition]targetgroup.Checkpoint{orders0: {Downstream: 5000, Upstream: 9000}, orders1: {Downstream: 150, Upstream: 160}}},
			wantCommit:  tps{orders1: two[orders1]},
			wantSkipped: reasons{orders0: targetgroup.TargetAheadMovedByConsumer},
		},
		{
			name: "with rewinds followed, a target checkpointd never wrote is never lowered",
			in: Input{Checkpoints: two, Target: empty, Existing: both, FollowRewinds: true,
				Current: map[messages.TopicPartition]int64{orders0: 5000, orders1: 200},
				Ours:    map[messages.TopicPartition]targetgroup.Checkpoint{orders1: {Downstream: 200, Upstream: 210}}},
			wantSkipped: reasons{orders0: targetgroup.TargetAheadNotOurs, orders1: targetgroup.TargetAhead},
		},
		{
			name: "with rewinds followed, an active group is still left alone",
			in: Input{Checkpoints: two, Target: targetgroup.Group{State: "Stable", Members: 1}, Existing: both, FollowRewinds: true,
				Current: map[messages.TopicPartition]int64{orders0: 5000, orders1: 201},
				Ours:    map[messages.TopicPartition]targetgroup.Checkpoint{orders0: {Downstream: 5000, Upstream: 9000}, orders1: {Downstream: 201, Upstream: 300}}},
			wantSkipped: reasons{orders0: targetgroup.ActiveOnTarget, orders1: targetgroup.ActiveOnTarget},
		},
		{
			name: "with rewinds followed, a coarser translation of the same source commit is no rewind",
			in: Input{Checkpoints: tps{orders0: {Downstream: 90, Upstream: 9000}, orders1: {Downstream: 95, Upstream: 9500}},
				Target: empty, Existing: both, FollowRewinds: true,
				Current: map[messages.TopicPartition]int64{orders0: 100, orders1: 100},
				Ours:    map[messages.TopicPartition]targetgroup.Checkpoint{orders0: {Downstream: 100, Upstream: 9000}, orders1: {Downstream: 100, Upstream: -1}}},
			wantSkipped: reasons{orders0: targetgroup.TargetAhead, orders1: targetgroup.TargetAhead},
		},
		{
			name: "negative target offset is overwritten (KAFKA-15607)",
			in: Input{Checkpoints: two, Target: empty, Existing: both,
				Current: map[messages.TopicPartition]int64{orders0: -1, orders1: 300}},
			wantCommit:  tps{orders0: two[orders0]},
			wantSkipped: reasons{orders1: targetgroup.TargetAhead},
		},
		{
			name: "partition without a target offset in an empty group is committed",
			in: Input{Checkpoints: two, Target: empty, Existing: both,
				Current: map[messages.TopicPartition]int64{orders1: 300}},
			wantCommit:  tps{orders0: two[orders0]},
			wantSkipped: reasons{orders1: targetgroup.TargetAhead},
		},
		{
			name:        "stable group with members is left alone",
			in:          Input{Checkpoints: two, Target: targetgroup.Group{State: "Stable", Members: 2}, Existing: both},
			wantSkipped: reasons{orders0: targetgroup.ActiveOnTarget, orders1: targetgroup.ActiveOnTarget},
		},
		{
			name:        "members make any state active",
			in:          Input{Checkpoints: two, Target: targetgroup.Group{State: targetgroup.StateEmpty, Members: 1}, Existing: both},
			wantSkipped: reasons{orders0: targetgroup.ActiveOnTarget, orders1: targetgroup.ActiveOnTarget},
		},
		{
			name:        "classic rebalance without members yet is active",
			in:          Input{Checkpoints: two, Target: targetgroup.Group{State: "PreparingRebalance"}, Existing: both},
			wantSkipped: reasons{orders0: targetgroup.ActiveOnTarget, orders1: targetgroup.ActiveOnTarget},
		},
		{
			name:        "KIP-848 reconciling group is active",
			in:          Input{Checkpoints: two, Target: targetgroup.Group{State: "Reconciling", Members: 3}, Existing: both},
			wantSkipped: reasons{orders0: targetgroup.ActiveOnTarget, orders1: targetgroup.ActiveOnTarget},
		},
		{
			name:        "dead (being unloaded) is not writable",
			in:          Input{Checkpoints: two, Target: targetgroup.Group{State: "Dead"}, Existing: both},
			wantSkipped: reasons{orders0: targetgroup.ActiveOnTarget, orders1: targetgroup.ActiveOnTarget},
		},
		{
			name: "failed describe is retried, never taken for new (KAFKA-19794)",
			in: Input{Checkpoints: two, Existing: both,
				Target: targetgroup.Group{State: targetgroup.StateNotFound, DescribeErr: errors.New("coordinator not available")}},
			wantSkipped: reasons{orders0: targetgroup.DescribeFailed, orders1: targetgroup.DescribeFailed},
		},
		{
			name: "missing topic skips its partitions only (KAFKA-19107)",
			in: Input{Checkpoints: tps{orders0: {Downstream: 7}, gone0: {Downstream: 9}},
				Target: empty, Existing: exists(orders0)},
			wantCommit:  tps{orders0: {Downstream: 7}},
			wantSkipped: reasons{gone0: targetgroup.TargetTopicMissing},
		},
		{
			name: "partition beyond the target's partition count is missing",
			in: Input{Checkpoints: tps{orders1: {Downstream: 1}, orders2: {Downstream: 2}},
				Target: notFound, Existing: both},
			wantCommit:  tps{orders1: {Downstream: 1}},
			wantSkipped: reasons{orders2: targetgroup.TargetTopicMissing},
		},
		{
			name:        "no partition lookup means nothing is known to exist",
			in:          Input{Checkpoints: two, Target: notFound},
			wantSkipped: reasons{orders0: targetgroup.TargetTopicMissing, orders1: targetgroup.TargetTopicMissing},
		},
		{
			name: "negative translation is invalid, not committed",
			in: Input{Checkpoints: tps{orders0: {Downstream: -1}}, Target: notFound,
				Existing: exists(orders0)},
			wantSkipped: reasons{orders0: targetgroup.InvalidCheckpoint},
		},
		{
			name: "no checkpoints, nothing to do",
			in:   Input{Target: empty, Existing: both},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Decide(tc.in)
			if !maps.Equal(got.Commit, orEmpty(tc.wantCommit)) {
				t.Errorf("Commit = %v, want %v", got.Commit, tc.wantCommit)
			}
			if !maps.Equal(got.Skipped, orEmpty(tc.wantSkipped)) {
				t.Errorf("Skipped = %v, want %v", got.Skipped, tc.wantSkipped)
			}
			var rewinds []messages.TopicPartition
			for tp := range got.Rewinds {
				rewinds = append(rewinds, tp)
			}
			slices.SortFunc(rewinds, func(a, b messages.TopicPartition) int { return cmp.Compare(a.Partition, b.Partition) })
			if !slices.Equal(rewinds, tc.wantRewinds) {
				t.Errorf("Rewinds = %v, want %v", rewinds, tc.wantRewinds)
			}
			if len(got.Commit)+len(got.Skipped) != len(tc.in.Checkpoints) {
				t.Errorf("plan covers %d partitions, want every one of %d",
					len(got.Commit)+len(got.Skipped), len(tc.in.Checkpoints))
			}
		})
	}
}

func orEmpty[V comparable](m map[messages.TopicPartition]V) map[messages.TopicPartition]V {
	if m == nil {
		return map[messages.TopicPartition]V{}
	}
	return m
}
