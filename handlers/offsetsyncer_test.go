package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/handlers/filter"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

// memTarget is an in-memory target cluster with the broker's commit rules:
// commits to groups with members are refused with UNKNOWN_MEMBER_ID. It
// counts its calls; commits may come concurrently.
type memTarget struct {
	mu          sync.Mutex
	states      map[string]targetgroup.Group
	offsets     map[string]map[messages.TopicPartition]int64
	existing    map[messages.TopicPartition]bool
	describeErr error
	offsetErrs  map[string]error // groups whose offsets cannot be read
	leftOut     map[string]bool  // groups the offsets answer forgets
	topicErrs   map[string]error // topics that cannot be looked up
	calls       targetCalls
}

// targetCalls counts the calls a round made, and how many groups or topics
// each batch call covered.
type targetCalls struct {
	describe, offsets, partitions, commits int
	offsetGroups, partitionTopics          []int
}

func newMemTarget() *memTarget {
	return &memTarget{states: map[string]targetgroup.Group{}, offsets: map[string]map[messages.TopicPartition]int64{},
		existing: map[messages.TopicPartition]bool{}, offsetErrs: map[string]error{}, leftOut: map[string]bool{}, topicErrs: map[string]error{}}
}

func (m *memTarget) Describe(_ context.Context, groups []string) (map[string]targetgroup.Group, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls.describe++
	if m.describeErr != nil {
		return nil, m.describeErr
	}
	out := map[string]targetgroup.Group{}
	for _, g := range groups {
		st, ok := m.states[g]
		if !ok {
			st = targetgroup.Group{State: targetgroup.StateNotFound}
		}
		out[g] = st
	}
	return out, nil
}

func (m *memTarget) Offsets(_ context.Context, groups []string) (map[string]map[messages.TopicPartition]int64, map[string]error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls.offsets++
	m.calls.offsetGroups = append(m.calls.offsetGroups, len(groups))
	out, failed := map[string]map[messages.TopicPartition]int64{}, map[string]error{}
	for _, g := range groups {
		if err := m.offsetErrs[g]; err != nil {
			failed[g] = err
			continue
		}
		if m.leftOut[g] {
			continue
		}
		out[g] = maps.Clone(m.offsets[g])
		if out[g] == nil {
			out[g] = map[messages.TopicPartition]int64{}
		}
	}
	return out, failed
}

func (m *memTarget) ExistingPartitions(_ context.Context, topics []string) (map[messages.TopicPartition]bool, map[string]error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls.partitions++
	m.calls.partitionTopics = append(m.calls.partitionTopics, len(topics))
	out, failed := map[messages.TopicPartition]bool{}, map[string]error{}
	for _, topic := range topics {
		if err := m.topicErrs[topic]; err != nil {
			failed[topic] = err
		}
	}
	for tp := range m.existing {
		if slices.Contains(topics, tp.Topic) && failed[tp.Topic] == nil {
			out[tp] = true
		}
	}
	return out, failed
}

func (m *memTarget) Commit(_ context.Context, group string, offs map[messages.TopicPartition]targetgroup.Checkpoint) (map[messages.TopicPartition]targetgroup.Reason, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls.commits++
	res := map[messages.TopicPartition]targetgroup.Reason{}
	if m.states[group].Members > 0 {
		for tp := range offs {
			res[tp] = targetgroup.ActiveOnTarget
		}
		return res, nil
	}
	if m.offsets[group] == nil {
		m.offsets[group] = map[messages.TopicPartition]int64{}
	}
	for tp, cp := range offs {
		m.offsets[group][tp] = cp.Downstream
		res[tp] = targetgroup.Committed
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
	if target.calls.commits != 0 {
		t.Fatalf("committed %d times before the replay caught up", target.calls.commits)
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
		wantReason targetgroup.Reason
		pending    int
	}{
		{name: "new group is created", checkpoint: 9, want: map[messages.TopicPartition]int64{tp0: 9}, wantReason: targetgroup.Committed},
		{name: "target ahead is never lowered", checkpoint: 9,
			setup: func(m *memTarget) {
				m.states["g"] = targetgroup.Group{State: targetgroup.StateEmpty}
				m.offsets["g"] = map[messages.TopicPartition]int64{tp0: 20}
			},
			want: map[messages.TopicPartition]int64{tp0: 20}, wantReason: targetgroup.TargetAhead},
		{name: "active group is left alone", checkpoint: 9,
			setup: func(m *memTarget) { m.states["g"] = targetgroup.Group{State: "Stable", Members: 1} },
			want:  nil, wantReason: targetgroup.ActiveOnTarget, pending: 1},
		{name: "describe failure is not a new group", checkpoint: 9,
			setup: func(m *memTarget) { m.describeErr = errors.New("coordinator unavailable") },
			want:  nil, wantReason: targetgroup.DescribeFailed, pending: 1},
		{name: "missing target partition", checkpoint: 9,
			setup: func(m *memTarget) { delete(m.existing, tp0) },
			want:  nil, wantReason: targetgroup.TargetTopicMissing, pending: 1},
		{name: "unreadable offsets are not none", checkpoint: 9,
			setup: func(m *memTarget) {
				m.states["g"] = targetgroup.Group{State: targetgroup.StateEmpty}
				m.offsets["g"] = map[messages.TopicPartition]int64{tp0: 20}
				m.offsetErrs["g"] = errors.New("coordinator load in progress")
			},
			want: map[messages.TopicPartition]int64{tp0: 20}, wantReason: targetgroup.Retriable, pending: 1},
		{name: "offsets left out of the answer are not none", checkpoint: 9,
			setup: func(m *memTarget) {
				m.states["g"] = targetgroup.Group{State: targetgroup.StateEmpty}
				m.offsets["g"] = map[messages.TopicPartition]int64{tp0: 20}
				m.leftOut["g"] = true
			},
			want: map[messages.TopicPartition]int64{tp0: 20}, wantReason: targetgroup.Retriable, pending: 1},
		{name: "failed topic lookup is not a missing topic", checkpoint: 9,
			setup: func(m *memTarget) { m.topicErrs[tp0.Topic] = errors.New("TOPIC_AUTHORIZATION_FAILED") },
			want:  nil, wantReason: targetgroup.Retriable, pending: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			target := newMemTarget()
			target.existing[tp0] = true
			if tc.setup != nil {
				tc.setup(target)
			}
			var reasons []targetgroup.Reason
			s := NewOffsetSyncer(OffsetSyncerConfig{Target: target, RetryInterval: time.Minute,
				Observer: resultObserver{f: func(_ string, _ messages.TopicPartition, r targetgroup.Reason, _, _ time.Time) {
					reasons = append(reasons, r)
				}}})
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
	target.states["g"] = targetgroup.Group{State: "Stable", Members: 2}
	s := NewOffsetSyncer(OffsetSyncerConfig{Target: target, RetryInterval: time.Minute})
	handle(t, s, envelope.NewControl(envelope.Assigned, "cp", 0), envelope.NewControl(envelope.CaughtUp, "cp", 0),
		checkpointMsg(t, 0, cpFor("g", tp0, 3)), checkpointMsg(t, 1, cpFor("g", tp1, 4)))
	t0 := time.Unix(100, 0)
	s.Round(context.Background(), t0)
	if len(target.offsets["g"]) != 0 {
		t.Fatalf("wrote into an active group: %v", target.offsets["g"])
	}
	target.states["g"] = targetgroup.Group{State: targetgroup.StateEmpty} // consumers left
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
	if target.calls.commits != 0 || s.Pending() != 0 {
		t.Fatalf("after revoke: commits %d, pending %d", target.calls.commits, s.Pending())
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

// dueGroups makes a caught-up syncer over target with n groups, each with a
// checkpoint on one of five topics; the groups matching active have members
// on the target.
func dueGroupsSyncer(t *testing.T, target *memTarget, cfg OffsetSyncerConfig, n int, active func(i int) bool) *OffsetSyncer {
	t.Helper()
	cfg.Target = target
	if cfg.RetryInterval == 0 {
		cfg.RetryInterval = time.Minute
	}
	cfg.Logger = slog.New(slog.DiscardHandler)
	s := NewOffsetSyncer(cfg)
	handle(t, s, envelope.NewControl(envelope.Assigned, "cp", 0), envelope.NewControl(envelope.CaughtUp, "cp", 0))
	for i := range n {
		group := fmt.Sprintf("g%05d", i)
		tp := messages.TopicPartition{Topic: fmt.Sprintf("source.t%d", i%5), Partition: 0}
		target.existing[tp] = true
		if active != nil && active(i) {
			target.states[group] = targetgroup.Group{State: "Stable", Members: 1}
		}
		handle(t, s, checkpointMsg(t, int64(i), cpFor(group, tp, 5)))
	}
	return s
}

func TestOffsetSyncerBatchesTargetCalls(t *testing.T) {
	odd := func(i int) bool { return i%2 == 1 }
	all := func(int) bool { return true }
	cases := []struct {
		name   string
		groups int
		batch  int // 0: the default
		active func(i int) bool
		want   targetCalls
		// pending groups after the round: the active ones
		pending int
	}{
		{name: "1000 new groups", groups: 1000,
			want: targetCalls{describe: 2, offsets: 2, partitions: 2, commits: 1000, offsetGroups: []int{500, 500}, partitionTopics: []int{5, 5}}},
		{name: "1000 groups, half active", groups: 1000, active: odd, pending: 500,
			want: targetCalls{describe: 2, offsets: 2, partitions: 2, commits: 500, offsetGroups: []int{250, 250}, partitionTopics: []int{5, 5}}},
		{name: "small batches", groups: 10, batch: 4,
			want: targetCalls{describe: 3, offsets: 3, partitions: 3, commits: 10, offsetGroups: []int{4, 4, 2}, partitionTopics: []int{4, 4, 2}}},
		{name: "all active: nothing read, nothing written", groups: 20, active: all, pending: 20,
			want: targetCalls{describe: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			target := newMemTarget()
			s := dueGroupsSyncer(t, target, OffsetSyncerConfig{BatchSize: tc.batch}, tc.groups, tc.active)
			s.Round(context.Background(), time.Unix(100, 0))
			if got := target.calls; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("calls %+v, want %+v", got, tc.want)
			}
			if s.Pending() != tc.pending {
				t.Errorf("pending = %d, want %d", s.Pending(), tc.pending)
			}
		})
	}
}

// A group whose offsets or topics cannot be read waits; the others of the
// batch are committed.
func TestOffsetSyncerReadFailureStaysWithItsGroup(t *testing.T) {
	target := newMemTarget()
	s := dueGroupsSyncer(t, target, OffsetSyncerConfig{}, 10, nil)
	target.offsetErrs["g00003"] = errors.New("not coordinator")
	target.topicErrs["source.t1"] = errors.New("topic authorization failed") // g00001 and g00006
	s.Round(context.Background(), time.Unix(100, 0))
	for i := range 10 {
		group := fmt.Sprintf("g%05d", i)
		_, written := target.offsets[group]
		if want := i != 3 && i%5 != 1; written != want {
			t.Errorf("%s written = %v, want %v", group, written, want)
		}
	}
	if s.Pending() != 3 {
		t.Errorf("pending = %d, want the 3 unreadable groups", s.Pending())
	}
}

// blockingTarget holds every commit until released, counting how many are
// in flight at once.
type blockingTarget struct {
	*memTarget
	release chan struct{}

	mu                sync.Mutex
	inFlight, maxSeen int
}

func (b *blockingTarget) Commit(ctx context.Context, group string, offs map[messages.TopicPartition]targetgroup.Checkpoint) (map[messages.TopicPartition]targetgroup.Reason, error) {
	b.mu.Lock()
	b.inFlight++
	b.maxSeen = max(b.maxSeen, b.inFlight)
	b.mu.Unlock()
	<-b.release
	b.mu.Lock()
	b.inFlight--
	b.mu.Unlock()
	return b.memTarget.Commit(ctx, group, offs)
}

func (b *blockingTarget) inFlightNow() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inFlight
}

func TestOffsetSyncerCommitsConcurrently(t *testing.T) {
	cases := []struct {
		name                string
		groups, concurrency int
		want                int // commits in flight at once
	}{
		{name: "bounded by the workers", groups: 40, concurrency: 8, want: 8},
		{name: "default workers", groups: DefaultCommitConcurrency + 10, want: DefaultCommitConcurrency},
		{name: "fewer groups than workers", groups: 3, concurrency: 16, want: 3},
		{name: "one worker", groups: 5, concurrency: 1, want: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			target := &blockingTarget{memTarget: newMemTarget(), release: make(chan struct{})}
			s := dueGroupsSyncer(t, target.memTarget, OffsetSyncerConfig{Target: target, CommitConcurrency: tc.concurrency}, tc.groups, nil)
			s.cfg.Target = target
			done := make(chan struct{})
			go func() {
				defer close(done)
				s.Round(context.Background(), time.Unix(100, 0))
			}()
			deadline := time.Now().Add(5 * time.Second)
			for target.inFlightNow() < tc.want && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			time.Sleep(20 * time.Millisecond) // room for one commit too many to show
			close(target.release)
			<-done
			if target.maxSeen != tc.want {
				t.Errorf("at most %d commits in flight, want %d", target.maxSeen, tc.want)
			}
			if s.Pending() != 0 || target.calls.commits != tc.groups {
				t.Errorf("after the round: %d pending, %d commits; want 0 and %d", s.Pending(), target.calls.commits, tc.groups)
			}
		})
	}
}

// resultObserver hands the commit stage's results to f.
type resultObserver struct {
	NopObserver
	f func(group string, tp messages.TopicPartition, r targetgroup.Reason, checkpointAt, committedAt time.Time)
}

func (o resultObserver) TargetResult(_ context.Context, group string, tp messages.TopicPartition, r targetgroup.Reason, checkpointAt, committedAt time.Time) {
	o.f(group, tp, r, checkpointAt, committedAt)
}
