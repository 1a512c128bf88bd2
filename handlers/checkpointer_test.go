package handlers

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/handlers/filter"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
)

// recorder is an Emitter and Observer that remembers what it was told.
type recorder struct {
	NopObserver
	mu        sync.Mutex
	emitted   []messages.Checkpoint
	skipped   map[string]int
	malformed int
}

func (r *recorder) Emit(_ context.Context, cp messages.Checkpoint, _ time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.emitted = append(r.emitted, cp)
}

func (r *recorder) CheckpointSkipped(_ context.Context, _ string, _ messages.TopicPartition, _ int64, reason messages.SkipReason) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.skipped == nil {
		r.skipped = map[string]int{}
	}
	r.skipped[reason.String()]++
}

func (r *recorder) RecordMalformed(string, int32, int64, error) { r.malformed++ }

func (r *recorder) take() []messages.Checkpoint {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.emitted
	r.emitted = nil
	return out
}

func newTestCheckpointer(t *testing.T, topics, groups string) (*Checkpointer, *recorder) {
	t.Helper()
	tf, err := filter.New(topics, "")
	if err != nil {
		t.Fatal(err)
	}
	gf, err := filter.New(groups, "")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	c, err := NewCheckpointer(CheckpointerConfig{
		SourceAlias: "source", TargetAlias: "target", Policy: messages.DefaultReplicationPolicy{},
		Topics: tf, Groups: gf, Emitter: rec, Observer: rec,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c, rec
}

var orders0 = messages.TopicPartition{Topic: "orders", Partition: 0}

func commitRec(group string, tp messages.TopicPartition, offset int64) messages.OffsetsRecord {
	return messages.OffsetsRecord{Kind: messages.OffsetCommitRecord, Group: group, TopicPartition: tp, Offset: offset, Metadata: "meta", LeaderEpoch: -1}
}

func syncOf(tp messages.TopicPartition, u, d int64) messages.OffsetSync {
	return messages.OffsetSync{TopicPartition: tp, UpstreamOffset: u, DownstreamOffset: d}
}

// openGate reads both topics "to the end" and makes shard 0 live.
func openGate(c *Checkpointer) {
	ctx := context.Background()
	c.ShardAssigned(0)
	c.ShardCaughtUp(ctx, 0)
	c.SyncsReadToEnd(ctx)
	c.CheckpointsReadToEnd(ctx)
}

func wantCheckpoints(t *testing.T, got []messages.Checkpoint, want ...messages.Checkpoint) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("emitted %d checkpoints %+v, want %d %+v", len(got), got, len(want), want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("checkpoint %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// wantCheckpointsOfGroups is wantCheckpoints for checkpoints of different
// groups decided by one sync, whose order is not defined: want is in group
// order.
func wantCheckpointsOfGroups(t *testing.T, got []messages.Checkpoint, want ...messages.Checkpoint) {
	t.Helper()
	slices.SortFunc(got, func(a, b messages.Checkpoint) int { return strings.Compare(a.Group, b.Group) })
	wantCheckpoints(t, got, want...)
}

func cp(group string, up, down int64) messages.Checkpoint {
	return messages.Checkpoint{Group: group, TopicPartition: messages.TopicPartition{Topic: "source.orders"}, UpstreamOffset: up, DownstreamOffset: down, Metadata: "meta"}
}

func TestCheckpointerGateWaitsForBothTopics(t *testing.T) {
	ctx := context.Background()
	c, rec := newTestCheckpointer(t, ".*", ".*")
	c.ShardAssigned(0)
	c.ShardCaughtUp(ctx, 0)
	c.ApplySync(ctx, syncOf(orders0, 100, 90))
	c.SourceCommit(ctx, 0, commitRec("g", orders0, 150), time.Time{})
	c.SyncsReadToEnd(ctx)
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("emitted before the checkpoints topic was read: %+v", got)
	}
	c.CheckpointsReadToEnd(ctx)
	wantCheckpoints(t, rec.take(), cp("g", 150, 91)) // +1 rule: past the sync
	if !c.GateOpen() {
		t.Fatal("gate still closed")
	}
}

func TestCheckpointerDecidesOnCommitsAndSyncs(t *testing.T) {
	ctx := context.Background()
	c, rec := newTestCheckpointer(t, ".*", ".*")
	openGate(c)
	c.SourceCommit(ctx, 0, commitRec("g", orders0, 10), time.Time{})
	if got := rec.take(); len(got) != 0 || rec.skipped["no_sync_yet"] != 1 {
		t.Fatalf("without a sync: emitted %+v, skipped %v", got, rec.skipped)
	}
	c.ApplySync(ctx, syncOf(orders0, 10, 5))
	wantCheckpoints(t, rec.take(), cp("g", 10, 5)) // exactly at the sync
	c.SourceCommit(ctx, 0, commitRec("g", orders0, 30), time.Time{})
	wantCheckpoints(t, rec.take(), cp("g", 30, 6))
	c.SourceCommit(ctx, 0, commitRec("g", orders0, 40), time.Time{}) // still 6: not newer
	if got := rec.take(); len(got) != 0 || rec.skipped["not_newer"] != 1 {
		t.Fatalf("repeat: emitted %+v, skipped %v", got, rec.skipped)
	}
	c.ApplySync(ctx, syncOf(orders0, 35, 20)) // a fresher sync moves the group on
	wantCheckpoints(t, rec.take(), cp("g", 40, 21))
	c.SourceCommit(ctx, 0, commitRec("g", orders0, 12), time.Time{}) // the group rewound
	wantCheckpoints(t, rec.take(), cp("g", 12, 6))
}

// A sync re-decides only the groups committed at or above its upstream
// offset; the groups below it cannot move forward and are not looked at.
func TestCheckpointerSyncDecidesOnlyGroupsAtOrAboveIt(t *testing.T) {
	ctx := context.Background()
	c, rec := newTestCheckpointer(t, ".*", ".*")
	openGate(c)
	c.ApplySync(ctx, syncOf(orders0, 0, 0))
	for group, offset := range map[string]int64{"low": 5, "at": 30, "high": 50} {
		c.SourceCommit(ctx, 0, commitRec(group, orders0, offset), time.Time{})
	}
	rec.take()
	rec.skipped = nil
	c.ApplySync(ctx, syncOf(orders0, 30, 40))
	got := map[string]messages.Checkpoint{}
	for _, cp := range rec.take() {
		got[cp.Group] = cp
	}
	if len(got) != 2 || got["at"].DownstreamOffset != 40 || got["high"].DownstreamOffset != 41 {
		t.Errorf("emitted %+v, want at→40 and high→41 only", got)
	}
	if len(rec.skipped) != 0 {
		t.Errorf("skipped %v: the group below the sync was decided again", rec.skipped)
	}
}

func TestCheckpointerReplayDecidesOnceAtTheEnd(t *testing.T) {
	ctx := context.Background()
	c, rec := newTestCheckpointer(t, ".*", ".*")
	c.SyncsReadToEnd(ctx)
	c.CheckpointsReadToEnd(ctx)
	c.ApplySync(ctx, syncOf(orders0, 0, 0))
	c.ApplySync(ctx, syncOf(orders0, 50, 50))
	// A compacted log replays older commits of the group before its latest:
	// deciding on each would look like a rewind and emit a lower checkpoint.
	c.ShardAssigned(3)
	for _, off := range []int64{60, 20, 70} {
		c.SourceCommit(ctx, 3, commitRec("g", orders0, off), time.Time{})
	}
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("emitted during replay: %+v", got)
	}
	c.ShardCaughtUp(ctx, 3)
	wantCheckpoints(t, rec.take(), cp("g", 70, 51))
}

func TestCheckpointerRestoredCheckpointsKeepMonotonic(t *testing.T) {
	ctx := context.Background()
	c, rec := newTestCheckpointer(t, ".*", ".*")
	// Before the restart we emitted (100 -> 95); after it only an older sync survived.
	c.CheckpointSeen(cp("g", 100, 95))
	c.ApplySync(ctx, syncOf(orders0, 10, 10))
	openGate(c)
	c.SourceCommit(ctx, 0, commitRec("g", orders0, 100), time.Time{})
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("emitted a lower checkpoint after restart: %+v", got)
	}
	c.ApplySync(ctx, syncOf(orders0, 100, 96))
	wantCheckpoints(t, rec.take(), cp("g", 100, 96))
	// Once we emitted for a group, older records of ours that the tail
	// reads late must not pull its state back.
	c.CheckpointSeen(cp("g", 100, 95))
	c.ApplySync(ctx, syncOf(orders0, 99, 95))
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("a late tail record pulled the state back: %+v", got)
	}
}

func TestCheckpointerRestoresGroupsSeenBeforeTheirCheckpoints(t *testing.T) {
	ctx := context.Background()
	c, rec := newTestCheckpointer(t, ".*", ".*")
	// The commit source may deliver a group before the checkpoints tail has
	// restored it; the restore must still count.
	c.ShardAssigned(0)
	c.SourceCommit(ctx, 0, commitRec("g", orders0, 100), time.Time{})
	c.ShardCaughtUp(ctx, 0)
	c.CheckpointSeen(cp("g", 100, 95))
	c.ApplySync(ctx, syncOf(orders0, 10, 10))
	c.SyncsReadToEnd(ctx)
	c.CheckpointsReadToEnd(ctx)
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("restore ignored: emitted %+v below the restored (100 -> 95)", got)
	}
}

func TestCheckpointerRevokeForgetsGroups(t *testing.T) {
	ctx := context.Background()
	c, rec := newTestCheckpointer(t, ".*", ".*")
	openGate(c)
	c.SourceCommit(ctx, 0, commitRec("g", orders0, 10), time.Time{})
	c.ShardRevoked(0)
	c.ApplySync(ctx, syncOf(orders0, 10, 10))
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("emitted for a revoked group: %+v", got)
	}
}

func TestCheckpointerFiltersAndTombstones(t *testing.T) {
	ctx := context.Background()
	c, rec := newTestCheckpointer(t, "orders", "app-.*")
	openGate(c)
	payments := messages.TopicPartition{Topic: "payments"}
	c.ApplySync(ctx, syncOf(orders0, 0, 0))
	c.ApplySync(ctx, syncOf(payments, 0, 0))
	c.SourceCommit(ctx, 0, commitRec("other", orders0, 5), time.Time{}) // group filtered: never tracked
	c.SourceCommit(ctx, 0, commitRec("app-1", payments, 5), time.Time{})
	if got := rec.take(); len(got) != 0 || rec.skipped["filtered_topic"] != 1 {
		t.Fatalf("filtered: emitted %+v, skipped %v", got, rec.skipped)
	}
	tomb := commitRec("app-1", orders0, 0)
	tomb.Tombstone = true
	c.SourceCommit(ctx, 0, commitRec("app-1", orders0, 5), time.Time{})
	c.SourceCommit(ctx, 0, tomb, time.Time{})
	rec.take()
	c.ApplySync(ctx, syncOf(orders0, 5, 9))
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("emitted for a deleted commit: %+v", got)
	}
}

func TestCheckpointerHandlersSkipMalformedRecords(t *testing.T) {
	c, rec := newTestCheckpointer(t, ".*", ".*")
	bad := func(topic string) *message.Message {
		return envelope.FromRecord(envelope.Record{Topic: topic, Key: []byte{0xff}, Value: []byte{1}})
	}
	tomb := envelope.FromRecord(envelope.Record{Topic: "mm2-offset-syncs.target.internal", Key: syncOf(orders0, 1, 1).Key()})
	for _, step := range []struct {
		handle func(*message.Message) error
		msg    *message.Message
	}{
		{c.HandleOffsetSync, bad("mm2-offset-syncs.target.internal")},
		{c.HandleOffsetSync, tomb},
		{c.HandleCheckpointRecord, bad("source.checkpoints.internal")},
		{c.HandleSourceCommit, bad("__consumer_offsets")},
	} {
		if err := step.handle(step.msg); err != nil {
			t.Fatalf("a malformed record stopped the handler: %v", err)
		}
	}
	if rec.malformed != 4 {
		t.Fatalf("malformed = %d, want 4", rec.malformed)
	}
	if err := c.HandleSourceCommit(message.NewMessage("x", nil)); err == nil {
		t.Fatal("a message without record metadata was accepted")
	}
}

func TestCheckpointerThroughHandlers(t *testing.T) {
	c, rec := newTestCheckpointer(t, ".*", ".*")
	const co = "__consumer_offsets"
	steps := []*message.Message{
		envelope.NewControl(envelope.CaughtUp, "source.checkpoints.internal", -1),
		envelope.FromRecord(envelope.Record{Topic: "mm2-offset-syncs.target.internal", Key: syncOf(orders0, 7, 3).Key(), Value: syncOf(orders0, 7, 3).Value()}),
		envelope.NewControl(envelope.CaughtUp, "mm2-offset-syncs.target.internal", -1),
		envelope.NewControl(envelope.Assigned, co, 2),
	}
	val, err := messages.EncodeOffsetCommitValue(3, commitRec("g", orders0, 7))
	if err != nil {
		t.Fatal(err)
	}
	steps = append(steps,
		envelope.FromRecord(envelope.Record{Topic: co, Partition: 2, Key: messages.EncodeOffsetCommitKey("g", orders0), Value: val}),
		envelope.NewControl(envelope.CaughtUp, co, 2))
	for _, m := range steps {
		var err error
		switch m.Metadata.Get(envelope.MetaTopic) {
		case "source.checkpoints.internal":
			err = c.HandleCheckpointRecord(m)
		case "mm2-offset-syncs.target.internal":
			err = c.HandleOffsetSync(m)
		default:
			err = c.HandleSourceCommit(m)
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
	}
	wantCheckpoints(t, rec.take(), cp("g", 7, 3))
}

// With a refresh interval, the first sync to reach a group in an interval
// decides it at once; later ones only mark it, and Refresh decides each
// marked group once, however many syncs came. A commit is decided at once
// and needs no refresh. A group a refresh decided stays paced through the
// next interval.
func TestCheckpointerRefreshPacesSyncDecisions(t *testing.T) {
	ctx := context.Background()
	c, rec := newTestCheckpointer(t, ".*", ".*")
	c.cfg.RefreshInterval = time.Hour // Refresh is called by hand
	openGate(c)
	c.ApplySync(ctx, syncOf(orders0, 0, 0))
	c.SourceCommit(ctx, 0, commitRec("idle", orders0, 100), time.Time{})
	c.SourceCommit(ctx, 0, commitRec("busy", orders0, 100), time.Time{})
	wantCheckpoints(t, rec.take(), cp("idle", 100, 1), cp("busy", 100, 1)) // commits: at once

	c.ApplySync(ctx, syncOf(orders0, 10, 10)) // the interval's first sync: at once
	wantCheckpointsOfGroups(t, rec.take(), cp("busy", 100, 11), cp("idle", 100, 11))
	for u := int64(20); u <= 90; u += 10 {
		c.ApplySync(ctx, syncOf(orders0, u, u))
	}
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("later syncs of the interval emitted %+v before the refresh", got)
	}
	c.SourceCommit(ctx, 0, commitRec("busy", orders0, 120), time.Time{}) // decided now, with every sync
	wantCheckpoints(t, rec.take(), cp("busy", 120, 91))

	c.Refresh(ctx)
	wantCheckpoints(t, rec.take(), cp("idle", 100, 91)) // once, at the newest sync; busy needs nothing
	// idle was decided by the refresh: paced; busy was not: at once.
	c.ApplySync(ctx, syncOf(orders0, 95, 95))
	wantCheckpoints(t, rec.take(), cp("busy", 120, 96))
	c.Refresh(ctx)
	wantCheckpoints(t, rec.take(), cp("idle", 100, 96))
	c.Refresh(ctx)
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("a refresh with no new sync emitted %+v", got)
	}
	c.ApplySync(ctx, syncOf(orders0, 97, 97)) // a quiet interval went by: at once
	wantCheckpointsOfGroups(t, rec.take(), cp("busy", 120, 98), cp("idle", 100, 98))
}

// A refresh queued for a group whose shard was revoked decides nothing.
func TestCheckpointerRefreshForgetsRevokedGroups(t *testing.T) {
	ctx := context.Background()
	c, rec := newTestCheckpointer(t, ".*", ".*")
	c.cfg.RefreshInterval = time.Hour
	openGate(c)
	c.ApplySync(ctx, syncOf(orders0, 0, 0))
	c.SourceCommit(ctx, 0, commitRec("g", orders0, 100), time.Time{})
	c.ApplySync(ctx, syncOf(orders0, 40, 40)) // decided at once
	rec.take()
	c.ApplySync(ctx, syncOf(orders0, 50, 50)) // queued for the refresh
	c.ShardRevoked(0)
	c.Refresh(ctx)
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("refresh after revocation emitted %+v", got)
	}
}
