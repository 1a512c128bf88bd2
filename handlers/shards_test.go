package handlers

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/handlers/filter"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

// memCheckpointLog is a checkpoints topic in memory: what a restore reads.
type memCheckpointLog struct {
	mu    sync.Mutex
	recs  []envelope.Record
	reads int
	err   error
	// during runs inside a read, after the records: the tail moving on
	// while the restore reads.
	during func()
}

func (l *memCheckpointLog) append(cp messages.Checkpoint) envelope.Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	rec := envelope.Record{Topic: "source.checkpoints.internal", Offset: int64(len(l.recs)), Key: cp.Key(), Value: cp.Value(),
		Timestamp: time.UnixMilli(1000)}
	l.recs = append(l.recs, rec)
	return rec
}

func (l *memCheckpointLog) ReadCheckpoints(_ context.Context, keep func([]byte) bool, fn func(envelope.Record)) error {
	l.mu.Lock()
	l.reads++
	recs, err, during := append([]envelope.Record(nil), l.recs...), l.err, l.during
	l.mu.Unlock()
	if err != nil {
		return err
	}
	for _, r := range recs {
		if keep == nil || keep(r.Key) {
			fn(r)
		}
	}
	if during != nil {
		during()
	}
	return nil
}

// byName puts groups named "a…" in shard 0 and the rest in shard 1.
func byName(group string) int32 {
	if group != "" && group[0] == 'a' {
		return 0
	}
	return 1
}

func shardedCheckpointer(t *testing.T, log *memCheckpointLog) (*Checkpointer, *recorder, *Shards) {
	t.Helper()
	all, _ := filter.New(".*", "")
	rec := &recorder{}
	shards := NewShards(byName)
	c, err := NewCheckpointer(CheckpointerConfig{
		SourceAlias: "source", TargetAlias: "target", Policy: messages.DefaultReplicationPolicy{},
		Topics: all, Groups: all, Emitter: rec, Observer: rec, Shards: shards, CheckpointLog: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c, rec, shards
}

var renamed0 = messages.TopicPartition{Topic: "source.orders", Partition: 0}

func seen(c *Checkpointer, r envelope.Record) {
	cp, _ := messages.DecodeCheckpoint(r.Key, r.Value)
	c.CheckpointSeenAt(cp, r.Offset)
}

// A shard's groups are decided only once their checkpoints were read back,
// and then against them: a new owner never emits below what the previous
// owner wrote.
func TestCheckpointerRestoresAShardBeforeDeciding(t *testing.T) {
	ctx := context.Background()
	log := &memCheckpointLog{}
	c, rec, _ := shardedCheckpointer(t, log)
	// What the previous owner wrote, before this instance got the shard:
	// the tail read it, and kept nothing (not ours then).
	for _, r := range []envelope.Record{
		log.append(messages.Checkpoint{Group: "a1", TopicPartition: renamed0, UpstreamOffset: 100, DownstreamOffset: 95}),
		log.append(messages.Checkpoint{Group: "b1", TopicPartition: renamed0, UpstreamOffset: 100, DownstreamOffset: 95}),
	} {
		seen(c, r)
	}
	c.SyncsReadToEnd(ctx)
	c.CheckpointsReadToEnd(ctx)
	c.ApplySync(ctx, syncOf(orders0, 10, 10))
	c.ShardAssigned(0)
	c.SourceCommit(ctx, 0, commitRec("a1", orders0, 100), time.Time{})
	c.ShardCaughtUp(ctx, 0)
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("decided before the shard was restored: %+v", got)
	}
	if !c.restoreOnce(ctx) {
		t.Fatal("restore failed")
	}
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("emitted %+v below the restored (100 -> 95)", got)
	}
	if _, ok := c.emitted.Last("b1", renamed0); ok {
		t.Error("kept the checkpoint of a group of another shard")
	}
	c.ApplySync(ctx, syncOf(orders0, 100, 96))
	wantCheckpoints(t, rec.take(), messages.Checkpoint{Group: "a1", TopicPartition: renamed0, UpstreamOffset: 100, DownstreamOffset: 96, Metadata: "meta"})
	// Revoked: nothing of the shard stays.
	c.ShardRevoked(0)
	if n := c.emitted.Len(); n != 0 {
		t.Errorf("%d checkpoints kept after the shard was revoked", n)
	}
}

// A record the tail applies while the restore reads wins over the older
// one the restore found.
func TestCheckpointerRestoreKeepsNewerTailRecords(t *testing.T) {
	ctx := context.Background()
	log := &memCheckpointLog{}
	c, _, _ := shardedCheckpointer(t, log)
	log.append(messages.Checkpoint{Group: "a1", TopicPartition: renamed0, UpstreamOffset: 100, DownstreamOffset: 95})
	c.ShardAssigned(0)
	log.during = func() {
		seen(c, log.append(messages.Checkpoint{Group: "a1", TopicPartition: renamed0, UpstreamOffset: 120, DownstreamOffset: 110}))
	}
	if !c.restoreOnce(ctx) {
		t.Fatal("restore failed")
	}
	if got, _ := c.emitted.Last("a1", renamed0); got.Downstream != 110 {
		t.Errorf("restored %+v over the newer tail record (120 -> 110)", got)
	}
}

// A restore that fails leaves the shard waiting; a shard revoked during
// its restore does not come alive.
func TestCheckpointerRestoreFailureAndRevoke(t *testing.T) {
	ctx := context.Background()
	log := &memCheckpointLog{err: errors.New("topic authorization failed")}
	c, rec, _ := shardedCheckpointer(t, log)
	openGate(c)
	c.ApplySync(ctx, syncOf(orders0, 10, 10))
	c.ShardAssigned(0)
	c.SourceCommit(ctx, 0, commitRec("a1", orders0, 50), time.Time{})
	c.ShardCaughtUp(ctx, 0)
	if c.restoreOnce(ctx) {
		t.Fatal("restore reported success on a read error")
	}
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("decided without the restore: %+v", got)
	}
	log.err = nil
	log.during = func() { c.ShardRevoked(0) }
	c.restoreOnce(ctx)
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("decided a shard revoked during its restore: %+v", got)
	}
}

func shardedSyncer(t *testing.T, target targetgroup.Groups, log *memCheckpointLog, fence Fence) (*OffsetSyncer, *Shards) {
	t.Helper()
	shards := NewShards(byName)
	s := NewOffsetSyncer(OffsetSyncerConfig{Target: target, RetryInterval: time.Minute, Shards: shards, CheckpointLog: log, Fence: fence})
	handle(t, s, envelope.NewControl(envelope.CaughtUp, "cp", 0))
	return s, shards
}

// The sharded commit stage keeps and commits only its own groups, and
// restores a newly owned shard's last checkpoints from the topic.
func TestOffsetSyncerShardedOwnsItsGroupsOnly(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(100, 0)
	target := newMemTarget()
	target.existing[tp0] = true
	log := &memCheckpointLog{}
	s, shards := shardedSyncer(t, target, log, nil)
	// Written before this instance owned anything: the previous owner of
	// shard 0 died before committing a1.
	log.append(cpFor("a1", tp0, 40))
	handle(t, s, checkpointMsg(t, 0, cpFor("a1", tp0, 40)))
	shards.Assign(0)
	handle(t, s, checkpointMsg(t, 1, cpFor("b1", tp0, 7)))
	s.Round(ctx, now)
	if target.calls.commits != 0 {
		t.Fatalf("committed %d times before the shard was restored", target.calls.commits)
	}
	if !s.restoreOnce(ctx) {
		t.Fatal("restore failed")
	}
	s.Round(ctx, now)
	if got := target.offsets["a1"][tp0]; got != 40 {
		t.Errorf("a1 on the target = %d, want the restored 40", got)
	}
	if _, ok := target.offsets["b1"]; ok {
		t.Error("committed b1, a group of a shard owned elsewhere")
	}
	handle(t, s, checkpointMsg(t, 2, cpFor("a1", tp0, 45)))
	shards.Revoke(0)
	s.Round(ctx, now)
	if got := target.offsets["a1"][tp0]; got != 40 || s.Pending() != 0 {
		t.Errorf("after revoke: a1 = %d, %d pending; want 40 and nothing", got, s.Pending())
	}
}

type denyFence struct{ calls int }

func (f *denyFence) Verify(context.Context, []int32) error {
	f.calls++
	return errors.New("member is not in the group")
}

// A batch decided under an assignment that ended, or that the coordinator
// no longer confirms, is not committed.
func TestOffsetSyncerFencesStaleWork(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(100, 0)
	target := newMemTarget()
	target.existing[tp0] = true
	fence := &denyFence{}
	s, shards := shardedSyncer(t, target, &memCheckpointLog{}, fence)
	shards.Assign(0)
	s.restoreOnce(ctx)
	handle(t, s, checkpointMsg(t, 0, cpFor("a1", tp0, 40)))
	s.Round(ctx, now)
	if target.calls.commits != 0 || fence.calls != 1 {
		t.Fatalf("commits %d, fence asked %d times; want none and once", target.calls.commits, fence.calls)
	}
	// Work taken, then the shard moves away and comes back.
	s.cfg.Fence = nil
	due := s.dueGroups(now.Add(2 * time.Minute))
	if len(due) != 1 {
		t.Fatalf("due %v, want a1", due)
	}
	shards.Revoke(0)
	shards.Assign(0)
	s.syncBatch(ctx, due, now)
	if target.calls.commits != 0 {
		t.Errorf("committed work of an earlier assignment")
	}
	var _ targetgroup.Groups = target
}

// stallingTarget runs stall inside Commit, where a real target waits for a
// commit connection, then the caller's before-send check, as
// infra/targetgroups does before the request leaves.
type stallingTarget struct {
	*memTarget
	stall func()
}

func (s stallingTarget) Commit(ctx context.Context, group string, offs map[messages.TopicPartition]targetgroup.Checkpoint) (map[messages.TopicPartition]targetgroup.Reason, error) {
	s.stall()
	if err := targetgroup.CheckBeforeSend(ctx); err != nil {
		res := map[messages.TopicPartition]targetgroup.Reason{}
		for tp := range offs {
			res[tp] = targetgroup.Retriable
		}
		return res, err
	}
	return s.memTarget.Commit(ctx, group, offs)
}

// A commit that waited inside the target while its shard changed hands
// (a process paused with its request waiting for a connection) is not
// sent: the check runs right before the request leaves.
func TestOffsetSyncerChecksOwnershipRightBeforeSending(t *testing.T) {
	for _, tt := range []struct {
		name       string
		moves      bool
		wantCommit bool
	}{
		{"shard kept", false, true},
		{"shard moved while waiting", true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			mem := newMemTarget()
			mem.existing[tp0] = true
			var shards *Shards
			target := stallingTarget{memTarget: mem, stall: func() {
				if tt.moves {
					shards.Revoke(0)
					shards.Assign(0)
				}
			}}
			s, sh := shardedSyncer(t, target, &memCheckpointLog{}, &countingFence{})
			shards = sh
			shards.Assign(0)
			s.restoreOnce(ctx)
			handle(t, s, checkpointMsg(t, 0, cpFor("a1", tp0, 40)))
			s.Round(ctx, time.Unix(100, 0))
			_, committed := mem.offsets["a1"][tp0]
			if committed != tt.wantCommit {
				t.Fatalf("committed %v, want %v", committed, tt.wantCommit)
			}
		})
	}
}

// countingFence answers Verify with err and counts the questions.
type countingFence struct {
	mu    sync.Mutex
	calls int
	err   error
}

func (f *countingFence) Verify(context.Context, []int32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return f.err
}

func TestOwnershipCheckAsksOnlyWhenStale(t *testing.T) {
	ctx := context.Background()
	f := &countingFence{}
	c := NewOwnershipCheck(f, 50*time.Millisecond)
	for range 3 {
		if err := c.Verify(ctx, []int32{1, 2}); err != nil {
			t.Fatal(err)
		}
	}
	if f.calls != 1 {
		t.Fatalf("asked %d times within the freshness, want once", f.calls)
	}
	_ = c.Verify(ctx, []int32{3})
	if f.calls != 2 {
		t.Fatalf("a new shard: asked %d times, want 2", f.calls)
	}
	time.Sleep(60 * time.Millisecond) // as a paused process would find on resuming
	f.err = errors.New("member is not in the group")
	if err := c.Verify(ctx, []int32{1}); err == nil {
		t.Fatal("a stale confirmation was trusted")
	}
	if err := c.Verify(ctx, []int32{1}); err == nil || f.calls != 4 {
		t.Fatalf("a refused shard must be asked about again: err %v, %d calls", err, f.calls)
	}
}

// slowFence confirms after a delay, as a fence whose process was paused
// between asking and hearing the answer does.
type slowFence struct{ delay time.Duration }

func (f slowFence) Verify(context.Context, []int32) error {
	time.Sleep(f.delay)
	return nil
}

// An answer that came back later than a confirmation holds confirms
// nothing: the process may have been paused mid-question while the group
// moved the shard on (TestShardedHandover's SIGSTOP found a commit decided
// before the pause landing over the new owner's).
func TestOwnershipCheckRefusesALateAnswer(t *testing.T) {
	c := NewOwnershipCheck(slowFence{delay: 80 * time.Millisecond}, 50*time.Millisecond)
	err := c.Verify(context.Background(), []int32{1})
	if !errors.Is(err, ErrConfirmationLate) {
		t.Fatalf("Verify = %v, want ErrConfirmationLate", err)
	}
	if len(c.stale([]int32{1}, time.Now())) != 1 {
		t.Fatal("a late answer was kept as a confirmation")
	}
	if err := NewOwnershipCheck(slowFence{delay: time.Millisecond}, time.Second).Verify(context.Background(), []int32{1}); err != nil {
		t.Fatalf("a prompt answer: %v", err)
	}
}

// A checkpoint decided under an assignment that ended is never written, and
// nothing is written while the fence refuses.
func TestOutboxWritesOnlyOwnedShards(t *testing.T) {
	shards := NewShards(byName)
	fence := &countingFence{}
	pub := &gatedPublisher{}
	o := NewOutbox(pub, "cp", 10, nil, WithOwnership(shards, fence))
	o.backoff = time.Millisecond
	shards.Assign(0)
	o.Emit(context.Background(), cpOn("a1", 0, 10, 5), time.Time{})
	shards.Revoke(0)
	shards.Assign(0) // back, under a new epoch: a1's decision is stale
	o.Emit(context.Background(), cpOn("a2", 0, 10, 5), time.Time{})
	fence.err = errors.New("not the owner")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = o.Run(ctx, time.Second) }()
	time.Sleep(100 * time.Millisecond)
	if got := pub.written(); len(got) != 0 {
		t.Fatalf("wrote %v while the fence refused", got)
	}
	fence.mu.Lock()
	fence.err = nil
	fence.mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for len(pub.written()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	got := pub.written()
	if len(got) != 1 || len(got[0]) != 1 || got[0][0].Group != "a2" {
		t.Fatalf("written %v, want only a2's checkpoint", got)
	}
	if o.Stats().Disowned != 1 {
		t.Errorf("disowned = %d, want 1 (a1's)", o.Stats().Disowned)
	}
}

// With the shard readable from the key, the checkpoints tail drops other
// owners' records without decoding them: a broken record of another
// owner's group is not even counted as malformed here.
func TestCheckpointerTailSkipsOtherOwnersUndecoded(t *testing.T) {
	log := &memCheckpointLog{}
	c, rec, shards := shardedCheckpointer(t, log)
	shards.WithKeyOf(func(key []byte) (int32, bool) {
		cp, err := messages.DecodeCheckpoint(key, messages.Checkpoint{}.Value())
		if err != nil {
			return 0, false
		}
		return byName(cp.Group), true
	})
	shards.Assign(0)
	other := messages.Checkpoint{Group: "b1", TopicPartition: renamed0}
	mine := messages.Checkpoint{Group: "a1", TopicPartition: renamed0}
	batch := envelope.FromRecords([]envelope.Record{
		{Topic: "cp", Offset: 0, Key: other.Key(), Value: []byte{1}}, // another owner's, broken
		{Topic: "cp", Offset: 1, Key: mine.Key(), Value: []byte{1}},  // ours, broken
	})
	if err := c.HandleCheckpointRecord(batch); err != nil {
		t.Fatal(err)
	}
	if rec.malformed != 1 {
		t.Errorf("malformed = %d, want 1: only this instance's broken record is decoded", rec.malformed)
	}
}

// scriptFence answers the nth Verify with answer(n).
type scriptFence struct {
	mu     sync.Mutex
	calls  int
	answer func(n int) error
}

func (f *scriptFence) Verify(context.Context, []int32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return f.answer(f.calls)
}

// sendCheckPublisher asks the check a writer carries right before writing,
// as the Kafka publisher does.
type sendCheckPublisher struct{ gatedPublisher }

func (p *sendCheckPublisher) Publish(topic string, msgs ...*message.Message) error {
	if err := targetgroup.CheckBeforeSend(msgs[0].Context()); err != nil {
		return err
	}
	return p.gatedPublisher.Publish(topic, msgs...)
}

// The outbox's confirmation is asked again right before the records leave:
// an instance paused between confirming and sending (the first answer yes,
// the one after the pause no) writes nothing, and the refusal waits for
// the fence, not for a broker backoff.
func TestOutboxConfirmsAgainRightBeforeSending(t *testing.T) {
	shards := NewShards(byName)
	refuse := atomic.Bool{}
	refuse.Store(true)
	fence := &scriptFence{answer: func(n int) error {
		if n == 1 || !refuse.Load() {
			return nil
		}
		return errors.New("not the owner at the group coordinator")
	}}
	pub := &sendCheckPublisher{}
	o := NewOutbox(pub, "cp", 10, nil, WithOwnership(shards, fence))
	o.backoff = time.Hour // a broker backoff would stall the test
	shards.Assign(0)
	o.Emit(context.Background(), cpOn("a1", 0, 10, 5), time.Time{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = o.Run(ctx, time.Second) }()
	time.Sleep(300 * time.Millisecond)
	if got := pub.written(); len(got) != 0 {
		t.Fatalf("wrote %v on a confirmation refused right before sending", got)
	}
	refuse.Store(false)
	deadline := time.Now().Add(5 * time.Second)
	for len(pub.written()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if got := pub.written(); len(got) != 1 {
		t.Fatalf("written %v once the fence confirmed, want one batch", got)
	}
	if f := o.Stats().Failures; f != 0 {
		t.Errorf("failures = %d: a refused confirmation is no failure of the target", f)
	}
}
