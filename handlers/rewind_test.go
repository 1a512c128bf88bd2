package handlers

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

// memCommitLog is an in-memory CommitLog: what Append wrote is what the next
// Load reads, as on Kafka after a restart.
type memCommitLog struct {
	mu        sync.Mutex
	ours      map[string]map[messages.TopicPartition]targetgroup.Checkpoint
	loads     int
	loadErr   error
	appendErr error
}

func (l *memCommitLog) Load(_ context.Context, keepKey func([]byte) bool, keep func(string) bool) (map[string]map[messages.TopicPartition]targetgroup.Checkpoint, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.loads++
	if l.loadErr != nil {
		return nil, l.loadErr
	}
	out := make(map[string]map[messages.TopicPartition]targetgroup.Checkpoint, len(l.ours))
	for g, m := range l.ours {
		if keep != nil && !keep(g) {
			continue
		}
		for tp, cp := range m {
			// As the topic's reader does: the key first, undecoded.
			if keepKey != nil && !keepKey(messages.Checkpoint{Group: g, TopicPartition: tp}.Key()) {
				continue
			}
			if out[g] == nil {
				out[g] = make(map[messages.TopicPartition]targetgroup.Checkpoint)
			}
			out[g][tp] = cp
		}
	}
	return out, nil
}

func (l *memCommitLog) Append(_ context.Context, commits []messages.Checkpoint) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.appendErr != nil {
		return l.appendErr
	}
	if l.ours == nil {
		l.ours = map[string]map[messages.TopicPartition]targetgroup.Checkpoint{}
	}
	for _, cp := range commits {
		if l.ours[cp.Group] == nil {
			l.ours[cp.Group] = map[messages.TopicPartition]targetgroup.Checkpoint{}
		}
		l.ours[cp.Group][cp.TopicPartition] = targetgroup.Checkpoint{Downstream: cp.DownstreamOffset, Upstream: cp.UpstreamOffset, Metadata: cp.Metadata}
	}
	return nil
}

// rewindSyncer is a live commit stage following rewinds over target and log,
// recording every outcome.
func rewindSyncer(t *testing.T, target *memTarget, log *memCommitLog, outcomes map[messages.TopicPartition]targetgroup.Reason) *OffsetSyncer {
	t.Helper()
	var mu sync.Mutex
	s := NewOffsetSyncer(OffsetSyncerConfig{Target: target, RetryInterval: time.Minute, FollowRewinds: true, CommitLog: log,
		Observer: resultObserver{f: func(_ string, tp messages.TopicPartition, r targetgroup.Reason, _, _ time.Time) {
			mu.Lock()
			outcomes[tp] = r
			mu.Unlock()
		}}})
	handle(t, s, envelope.NewControl(envelope.Assigned, "cp", 0), envelope.NewControl(envelope.CaughtUp, "cp", 0))
	return s
}

func TestOffsetSyncerFollowsSourceRewinds(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(100, 0)
	for _, tc := range []struct {
		name string
		// between runs after the first sync and before the rewound
		// checkpoint; it may restart the syncer.
		between    func(target *memTarget)
		restart    bool
		wantOffset int64
		wantReason targetgroup.Reason
	}{
		{name: "target still at checkpointd's offset goes back", wantOffset: 1, wantReason: targetgroup.Rewound},
		{name: "after a restart, from the commit log", restart: true, wantOffset: 1, wantReason: targetgroup.Rewound},
		{name: "a consumer moved the target: left alone",
			between: func(target *memTarget) { target.offsets["g"][tp0] = 210 }, wantOffset: 210, wantReason: targetgroup.TargetAheadMovedByConsumer},
		{name: "a consumer committed on the target first: left alone",
			between: func(target *memTarget) { target.offsets["g"][tp0] = 150 }, wantOffset: 150, wantReason: targetgroup.TargetAheadMovedByConsumer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := newMemTarget()
			target.existing[tp0] = true
			log := &memCommitLog{}
			outcomes := map[messages.TopicPartition]targetgroup.Reason{}
			s := rewindSyncer(t, target, log, outcomes)
			handle(t, s, checkpointMsg(t, 0, cpFor("g", tp0, 200)))
			s.Round(ctx, now)
			if got := target.offsets["g"][tp0]; got != 200 || outcomes[tp0] != targetgroup.Committed {
				t.Fatalf("first sync: target %d (%s), want 200 committed", got, outcomes[tp0])
			}
			if tc.between != nil {
				tc.between(target)
			}
			if tc.restart {
				s = rewindSyncer(t, target, log, outcomes)
			}
			handle(t, s, checkpointMsg(t, 1, cpFor("g", tp0, 1)))
			s.Round(ctx, now)
			if got := target.offsets["g"][tp0]; got != tc.wantOffset || outcomes[tp0] != tc.wantReason {
				t.Errorf("after the source rewind: target %d (%s), want %d (%s)", got, outcomes[tp0], tc.wantOffset, tc.wantReason)
			}
		})
	}
}

func TestOffsetSyncerRewindNeedsTheCommitLog(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(100, 0)
	target := newMemTarget()
	target.existing[tp0] = true
	target.offsets["g"] = map[messages.TopicPartition]int64{tp0: 200}
	log := &memCommitLog{loadErr: errors.New("topic not readable")}
	outcomes := map[messages.TopicPartition]targetgroup.Reason{}
	s := rewindSyncer(t, target, log, outcomes)
	handle(t, s, checkpointMsg(t, 0, cpFor("g", tp0, 1)))
	s.Round(ctx, now)
	if len(outcomes) != 0 || target.calls.commits != 0 {
		t.Fatalf("decided %v without the commit log", outcomes)
	}
	// Readable again, and it says nothing of this group: MM2's rule.
	log.mu.Lock()
	log.loadErr = nil
	log.mu.Unlock()
	s.Round(ctx, now.Add(2*time.Minute))
	if got := target.offsets["g"][tp0]; got != 200 || outcomes[tp0] != targetgroup.TargetAheadNotOurs {
		t.Errorf("target %d (%s), want 200 left alone as %s", got, outcomes[tp0], targetgroup.TargetAheadNotOurs)
	}
	if log.loads != 2 {
		t.Errorf("commit log loaded %d times, want 2 (failed, then once per lease)", log.loads)
	}
}

func TestOffsetSyncerWithoutFollowingRewinds(t *testing.T) {
	target := newMemTarget()
	target.existing[tp0] = true
	log := &memCommitLog{}
	s := NewOffsetSyncer(OffsetSyncerConfig{Target: target, RetryInterval: time.Minute, CommitLog: log})
	handle(t, s, envelope.NewControl(envelope.Assigned, "cp", 0), envelope.NewControl(envelope.CaughtUp, "cp", 0),
		checkpointMsg(t, 0, cpFor("g", tp0, 200)))
	s.Round(context.Background(), time.Unix(100, 0))
	handle(t, s, checkpointMsg(t, 1, cpFor("g", tp0, 1)))
	s.Round(context.Background(), time.Unix(100, 0))
	if got := target.offsets["g"][tp0]; got != 200 {
		t.Errorf("target %d, want 200: off, a target group is never lowered", got)
	}
	if log.loads != 0 || len(log.ours) != 0 {
		t.Errorf("commit log used with following rewinds off: %d loads, %v", log.loads, log.ours)
	}
}

// TestOffsetSyncerCommitsOnlyWhatTheLogHas: the commit log is written before
// the commit, so that it never misses an offset checkpointd wrote.
func TestOffsetSyncerCommitsOnlyWhatTheLogHas(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(100, 0)
	target := newMemTarget()
	target.existing[tp0] = true
	log := &memCommitLog{appendErr: errors.New("not authorized")}
	outcomes := map[messages.TopicPartition]targetgroup.Reason{}
	s := rewindSyncer(t, target, log, outcomes)
	handle(t, s, checkpointMsg(t, 0, cpFor("g", tp0, 200)))
	s.Round(ctx, now)
	if target.calls.commits != 0 || outcomes[tp0] != targetgroup.Retriable {
		t.Fatalf("commit log not writable: %d commits, outcome %s; want none, retriable", target.calls.commits, outcomes[tp0])
	}
	log.mu.Lock()
	log.appendErr = nil
	log.mu.Unlock()
	s.Round(ctx, now.Add(2*time.Minute))
	if got := target.offsets["g"][tp0]; got != 200 || log.ours["g"][tp0].Downstream != 200 {
		t.Errorf("after the log is writable again: target %d, log %v; want 200 in both", got, log.ours)
	}
}

// movingTarget is a memTarget where a consumer commits move (and leaves)
// right after the commit stage first read the offsets.
type movingTarget struct {
	*memTarget
	reads int
	move  map[messages.TopicPartition]int64
}

func (m *movingTarget) Offsets(ctx context.Context, groups []string) (map[string]map[messages.TopicPartition]int64, map[string]error) {
	out, failed := m.memTarget.Offsets(ctx, groups)
	m.reads++
	if m.reads == 1 {
		m.mu.Lock()
		maps.Copy(m.offsets["g"], m.move)
		m.mu.Unlock()
	}
	return out, failed
}

// TestOffsetSyncerConfirmsRewinds: a consumer that commits on the target
// between the decision and the commit is not moved back.
func TestOffsetSyncerConfirmsRewinds(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(100, 0)
	target := &movingTarget{memTarget: newMemTarget(), move: map[messages.TopicPartition]int64{tp0: 205}}
	target.existing[tp0], target.existing[tp1] = true, true
	target.offsets["g"] = map[messages.TopicPartition]int64{tp0: 200, tp1: 300}
	log := &memCommitLog{ours: map[string]map[messages.TopicPartition]targetgroup.Checkpoint{
		"g": {tp0: {Downstream: 200, Upstream: 1000}, tp1: {Downstream: 300, Upstream: 1500}}}}
	outcomes := map[messages.TopicPartition]targetgroup.Reason{}
	s := rewindSyncer(t, target.memTarget, log, outcomes)
	s.cfg.Target = target
	handle(t, s, checkpointMsg(t, 0, cpFor("g", tp0, 1)), checkpointMsg(t, 1, cpFor("g", tp1, 2)))
	s.Round(ctx, now)
	if got := target.offsets["g"]; got[tp0] != 205 || got[tp1] != 2 {
		t.Errorf("target offsets %v, want the consumer's 205 kept and partition 1 moved back to 2", got)
	}
	if outcomes[tp0] != targetgroup.TargetAheadMovedByConsumer || outcomes[tp1] != targetgroup.Rewound {
		t.Errorf("outcomes %v, want %s and %s", outcomes, targetgroup.TargetAheadMovedByConsumer, targetgroup.Rewound)
	}
}

// TestOffsetSyncerRoundOfAnOldLease: work taken before the lease changed
// neither commits nor settles what the new lease's replay brought.
func TestOffsetSyncerRoundOfAnOldLease(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(100, 0)
	target := newMemTarget()
	target.existing[tp0] = true
	log := &memCommitLog{}
	outcomes := map[messages.TopicPartition]targetgroup.Reason{}
	s := rewindSyncer(t, target, log, outcomes)
	handle(t, s, checkpointMsg(t, 0, cpFor("g", tp0, 200)))
	if !s.restoreOnce(ctx) {
		t.Fatal("commit log not loaded")
	}
	due := s.dueGroups(now)
	if len(due) != 1 {
		t.Fatalf("due groups %v, want g", due)
	}
	// The lease moves and comes back; the replay brings the checkpoint again.
	handle(t, s, envelope.NewControl(envelope.Revoked, "cp", 0), envelope.NewControl(envelope.Assigned, "cp", 0),
		checkpointMsg(t, 0, cpFor("g", tp0, 200)), envelope.NewControl(envelope.CaughtUp, "cp", 0))
	if got := s.dueGroups(now); len(got) != 0 {
		t.Errorf("groups due before the commit log was read again: %v", got)
	}
	s.syncBatch(ctx, due, now)
	if target.calls.commits != 0 || s.Pending() != 1 {
		t.Errorf("old lease's round: %d commits, %d groups pending; want none and the replayed one", target.calls.commits, s.Pending())
	}
	s.Round(ctx, now)
	if got := target.offsets["g"][tp0]; got != 200 || s.Pending() != 0 {
		t.Errorf("new lease's round: target %d, %d pending; want 200 and none", got, s.Pending())
	}
}
