package handlers

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/handlers/filter"
	"github.com/checkpointd/checkpointd/handlers/groupsync"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
)

// memTarget is an in-memory target cluster with the broker's commit rules:
// commits to groups with members are refused with UNKNOWN_MEMBER_ID.
type memTarget struct {
	states      map[string]groupsync.TargetGroup
	offsets     map[string]map[messages.TopicPartition]int64
	existing    map[messages.TopicPartition]bool
	describeErr error
	commits     int
}

func newMemTarget() *memTarget {
	return &memTarget{states: map[string]groupsync.TargetGroup{}, offsets: map[string]map[messages.TopicPartition]int64{}, existing: map[messages.TopicPartition]bool{}}
}

func (m *memTarget) Describe(_ context.Context, groups []string) (map[string]groupsync.TargetGroup, error) {
	if m.describeErr != nil {
		return nil, m.describeErr
	}
	out := map[string]groupsync.TargetGroup{}
	for _, g := range groups {
		st, ok := m.states[g]
		if !ok {
			st = groupsync.TargetGroup{State: groupsync.StateNotFound}
		}
		out[g] = st
	}
	return out, nil
}

func (m *memTarget) Offsets(_ context.Context, group string) (map[messages.TopicPartition]int64, error) {
	return maps.Clone(m.offsets[group]), nil
}

func (m *memTarget) ExistingPartitions(_ context.Context, topics []string) (map[messages.TopicPartition]bool, error) {
	return maps.Clone(m.existing), nil
}

func (m *memTarget) Commit(_ context.Context, group string, offs map[messages.TopicPartition]groupsync.Checkpoint) (map[messages.TopicPartition]groupsync.Reason, error) {
	m.commits++
	res := map[messages.TopicPartition]groupsync.Reason{}
	if m.states[group].Members > 0 {
		for tp := range offs {
			res[tp] = groupsync.ActiveOnTarget
		}
		return res, nil
	}
	if m.offsets[group] == nil {
		m.offsets[group] = map[messages.TopicPartition]int64{}
	}
	for tp, cp := range offs {
		m.offsets[group][tp] = cp.Downstream
		res[tp] = groupsync.Committed
	}
	return res, nil
}

func checkpointMsg(t *testing.T, offset int64, cp messages.Checkpoint) *message.Message {
	t.Helper()
	return envelope.FromRecord(envelope.Record{Topic: "source.checkpoints.internal", Offset: offset,
		Timestamp: time.UnixMilli(1000), Key: cp.Key(), Value: cp.Value()})
}

func handle(t *testing.T, s *OffsetSyncer, msgs ...*message.Message) {
	t.Helper()
	for _, m := range msgs {
		if err := s.HandleCheckpoint(m); err != nil {
			t.Fatal(err)
		}
	}
}

var (
	tp0 = messages.TopicPartition{Topic: "source.orders", Partition: 0}
	tp1 = messages.TopicPartition{Topic: "source.orders", Partition: 1}
)

func cpFor(group string, tp messages.TopicPartition, down int64) messages.Checkpoint {
	return messages.Checkpoint{Group: group, TopicPartition: tp, UpstreamOffset: down + 10, DownstreamOffset: down, Metadata: "m"}
}

func TestOffsetSyncerWaitsForReplayThenCommits(t *testing.T) {
	target := newMemTarget()
	target.existing[tp0] = true
	s := NewOffsetSyncer(OffsetSyncerConfig{Target: target, RetryInterval: time.Minute})
	now := time.Unix(100, 0)
	handle(t, s, envelope.NewControl(envelope.Assigned, "cp", 0), checkpointMsg(t, 0, cpFor("g", tp0, 5)), checkpointMsg(t, 1, cpFor("g", tp0, 7)))
	s.Round(context.Background(), now)
	if target.commits != 0 {
		t.Fatalf("committed %d times before the replay caught up", target.commits)
	}
	handle(t, s, envelope.NewControl(envelope.CaughtUp, "cp", 0))
	s.Round(context.Background(), now)
	if got := target.offsets["g"][tp0]; got != 7 {
		t.Fatalf("target offset = %d, want the latest checkpoint 7", got)
	}
	if s.Pending() != 0 {
		t.Fatalf("pending = %d after a successful commit", s.Pending())
	}
}

func TestOffsetSyncerRules(t *testing.T) {
	cases := []struct {
		name       string
		setup      func(*memTarget)
		checkpoint int64
		want       map[messages.TopicPartition]int64
		wantReason groupsync.Reason
		pending    int
	}{
		{name: "new group is created", checkpoint: 9, want: map[messages.TopicPartition]int64{tp0: 9}, wantReason: groupsync.Committed},
		{name: "target ahead is never lowered", checkpoint: 9,
			setup: func(m *memTarget) {
				m.states["g"] = groupsync.TargetGroup{State: groupsync.StateEmpty}
				m.offsets["g"] = map[messages.TopicPartition]int64{tp0: 20}
			},
			want: map[messages.TopicPartition]int64{tp0: 20}, wantReason: groupsync.TargetAhead},
		{name: "active group is left alone", checkpoint: 9,
			setup: func(m *memTarget) { m.states["g"] = groupsync.TargetGroup{State: "Stable", Members: 1} },
			want:  nil, wantReason: groupsync.ActiveOnTarget, pending: 1},
		{name: "describe failure is not a new group", checkpoint: 9,
			setup: func(m *memTarget) { m.describeErr = errors.New("coordinator unavailable") },
			want:  nil, wantReason: groupsync.DescribeFailed, pending: 1},
		{name: "missing target partition", checkpoint: 9,
			setup: func(m *memTarget) { delete(m.existing, tp0) },
			want:  nil, wantReason: groupsync.TargetTopicMissing, pending: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			target := newMemTarget()
			target.existing[tp0] = true
			if tc.setup != nil {
				tc.setup(target)
			}
			var reasons []groupsync.Reason
			s := NewOffsetSyncer(OffsetSyncerConfig{Target: target, RetryInterval: time.Minute,
				OnResult: func(_ string, _ messages.TopicPartition, r groupsync.Reason, _, _ time.Time) {
					reasons = append(reasons, r)
				}})
			handle(t, s, envelope.NewControl(envelope.Assigned, "cp", 0), envelope.NewControl(envelope.CaughtUp, "cp", 0),
				checkpointMsg(t, 0, cpFor("g", tp0, tc.checkpoint)))
			s.Round(context.Background(), time.Unix(100, 0))
			if !maps.Equal(target.offsets["g"], tc.want) {
				t.Fatalf("target offsets = %v, want %v", target.offsets["g"], tc.want)
			}
			if len(reasons) != 1 || reasons[0] != tc.wantReason {
				t.Fatalf("reasons = %v, want [%s]", reasons, tc.wantReason)
			}
			if s.Pending() != tc.pending {
				t.Fatalf("pending = %d, want %d", s.Pending(), tc.pending)
			}
		})
	}
}

func TestOffsetSyncerRetriesActiveGroupAfterInterval(t *testing.T) {
	target := newMemTarget()
	target.existing[tp0] = true
	target.existing[tp1] = true
	target.states["g"] = groupsync.TargetGroup{State: "Stable", Members: 2}
	s := NewOffsetSyncer(OffsetSyncerConfig{Target: target, RetryInterval: time.Minute})
	handle(t, s, envelope.NewControl(envelope.Assigned, "cp", 0), envelope.NewControl(envelope.CaughtUp, "cp", 0),
		checkpointMsg(t, 0, cpFor("g", tp0, 3)), checkpointMsg(t, 1, cpFor("g", tp1, 4)))
	t0 := time.Unix(100, 0)
	s.Round(context.Background(), t0)
	if len(target.offsets["g"]) != 0 {
		t.Fatalf("wrote into an active group: %v", target.offsets["g"])
	}
	target.states["g"] = groupsync.TargetGroup{State: groupsync.StateEmpty} // consumers left
	s.Round(context.Background(), t0.Add(30*time.Second))
	if len(target.offsets["g"]) != 0 {
		t.Fatal("retried before the retry interval passed")
	}
	s.Round(context.Background(), t0.Add(time.Minute))
	want := map[messages.TopicPartition]int64{tp0: 3, tp1: 4}
	if !maps.Equal(target.offsets["g"], want) {
		t.Fatalf("after the group left: %v, want %v", target.offsets["g"], want)
	}
}

func TestOffsetSyncerRevokeDropsState(t *testing.T) {
	target := newMemTarget()
	target.existing[tp0] = true
	s := NewOffsetSyncer(OffsetSyncerConfig{Target: target, RetryInterval: time.Minute})
	handle(t, s, envelope.NewControl(envelope.Assigned, "cp", 0), checkpointMsg(t, 0, cpFor("g", tp0, 3)),
		envelope.NewControl(envelope.Revoked, "cp", 0))
	s.Round(context.Background(), time.Unix(100, 0))
	if target.commits != 0 || s.Pending() != 0 {
		t.Fatalf("after revoke: commits %d, pending %d", target.commits, s.Pending())
	}
}

func TestOffsetSyncerSkipsBadRecords(t *testing.T) {
	target := newMemTarget()
	s := NewOffsetSyncer(OffsetSyncerConfig{Target: target})
	bad := envelope.FromRecord(envelope.Record{Topic: "cp", Offset: 3, Key: []byte{0, 9}, Value: []byte{0}})
	tomb := envelope.FromRecord(envelope.Record{Topic: "cp", Offset: 4, Key: []byte{0, 1, 'g'}})
	handle(t, s, envelope.NewControl(envelope.Assigned, "cp", 0), bad, tomb)
	if s.Pending() != 0 {
		t.Fatalf("bad records became pending work: %d", s.Pending())
	}
}

func TestOffsetSyncerSkipsFilteredGroups(t *testing.T) {
	target := newMemTarget()
	target.existing[tp0] = true
	only, err := filter.New("app-.*", "")
	if err != nil {
		t.Fatal(err)
	}
	s := NewOffsetSyncer(OffsetSyncerConfig{Target: target, Groups: only})
	handle(t, s, envelope.NewControl(envelope.Assigned, "cp", 0), envelope.NewControl(envelope.CaughtUp, "cp", 0),
		checkpointMsg(t, 0, cpFor("other", tp0, 3)), checkpointMsg(t, 1, cpFor("app-1", tp0, 4)))
	s.Round(context.Background(), time.Unix(100, 0))
	if _, ok := target.offsets["other"]; ok {
		t.Fatal("committed into a group the filter excludes")
	}
	if target.offsets["app-1"][tp0] != 4 {
		t.Fatalf("app-1 = %v", target.offsets["app-1"])
	}
}
