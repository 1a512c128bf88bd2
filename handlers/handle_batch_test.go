package handlers

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

// A whole-topic reader may put several records in one message: each is
// applied in order, and malformed ones are counted and skipped one at a time.
func TestCheckpointerHandlersTakeBatches(t *testing.T) {
	ctx := context.Background()
	c, rec := newTestCheckpointer(t, ".*", ".*")
	const syncs, checkpoints = "mm2-offset-syncs.target.internal", "source.checkpoints.internal"
	syncRec := func(offset int64, s messages.OffsetSync) envelope.Record {
		return envelope.Record{Topic: syncs, Offset: offset, Key: s.Key(), Value: s.Value()}
	}
	batch := envelope.FromRecords([]envelope.Record{
		syncRec(0, syncOf(orders0, 0, 0)),
		{Topic: syncs, Offset: 1, Key: []byte{0xff}, Value: []byte{1}}, // malformed
		syncRec(2, syncOf(orders0, 10, 30)),
		{Topic: syncs, Offset: 3, Key: syncOf(orders0, 1, 1).Key()}, // tombstone
	})
	if err := c.HandleOffsetSync(batch); err != nil {
		t.Fatal(err)
	}
	other := messages.Checkpoint{Group: "other", TopicPartition: messages.TopicPartition{Topic: "source.orders"}, UpstreamOffset: 5, DownstreamOffset: 7}
	cps := envelope.FromRecords([]envelope.Record{
		{Topic: checkpoints, Offset: 0, Key: other.Key(), Value: other.Value()},
		{Topic: checkpoints, Offset: 1, Key: []byte{0}, Value: []byte{0}}, // malformed
	})
	if err := c.HandleCheckpointRecord(cps); err != nil {
		t.Fatal(err)
	}
	if rec.malformed != 3 {
		t.Fatalf("malformed = %d, want 3", rec.malformed)
	}
	if got := c.Index().Stats().Syncs; got != 2 {
		t.Fatalf("index holds %d syncs, want 2", got)
	}
	openGate(c)
	c.SourceCommit(ctx, 0, commitRec("g", orders0, 10), time.Time{})
	wantCheckpoints(t, rec.take(), cp("g", 10, 30)) // the batch's later sync was applied

	damaged := batch.Copy()
	damaged.Payload = damaged.Payload[:3]
	if err := c.HandleOffsetSync(damaged); err == nil {
		t.Fatal("a damaged batch was accepted")
	}
}

// The commit source may send several records of a partition in one message
// (when replaying or behind): each commit is applied in order, a malformed
// one is counted and skipped, and the later commit of a group wins.
func TestHandleSourceCommitTakesBatches(t *testing.T) {
	c, rec := newTestCheckpointer(t, ".*", ".*")
	openGate(c)
	c.ApplySync(context.Background(), syncOf(orders0, 0, 0))
	commit := func(offset int64, group string, at int64) envelope.Record {
		r := commitRec(group, orders0, at)
		key, value := commitRecordBytes(t, r)
		return envelope.Record{Topic: "__consumer_offsets", Partition: 0, Offset: offset, Key: key, Value: value}
	}
	batch := envelope.FromRecords([]envelope.Record{
		commit(0, "g", 5),
		{Topic: "__consumer_offsets", Partition: 0, Offset: 1, Key: []byte{0, 1, 0}, Value: []byte{1}}, // malformed: truncated key
		commit(2, "h", 7),
		commit(3, "g", 9),
	})
	if err := c.HandleSourceCommit(batch); err != nil {
		t.Fatal(err)
	}
	wantCheckpoints(t, rec.take(), cp("g", 5, 1), cp("h", 7, 1))
	if rec.malformed != 1 {
		t.Errorf("malformed = %d, want 1", rec.malformed)
	}
	if last, ok := c.commits.Get("g", orders0); !ok || last.Offset != 9 {
		t.Errorf("group g's commit %+v, want the batch's later one (9)", last)
	}
}

func commitRecordBytes(t *testing.T, r messages.OffsetsRecord) (key, value []byte) {
	t.Helper()
	value, err := messages.EncodeOffsetCommitValue(3, r)
	if err != nil {
		t.Fatal(err)
	}
	return messages.EncodeOffsetCommitKey(r.Group, r.TopicPartition), value
}

// The commit stage's reader may batch checkpoints: each is queued with the
// commit time from its own headers, the latest of a (group, partition)
// wins, and a malformed one or a tombstone is skipped alone.
func TestHandleCheckpointTakesBatches(t *testing.T) {
	target := newMemTarget()
	target.existing[tp0], target.existing[tp1] = true, true
	var mu sync.Mutex
	committedAt := map[string]time.Time{}
	s := NewOffsetSyncer(OffsetSyncerConfig{Target: target, RetryInterval: time.Minute,
		Observer: resultObserver{f: func(group string, tp messages.TopicPartition, _ targetgroup.Reason, _, at time.Time) {
			mu.Lock()
			defer mu.Unlock()
			committedAt[fmt.Sprint(group, "/", tp.Partition)] = at
		}}})
	rec := func(offset int64, cp messages.Checkpoint, commitMs string) envelope.Record {
		return envelope.Record{Topic: "source.checkpoints.internal", Offset: offset, Timestamp: time.UnixMilli(1000),
			Key: cp.Key(), Value: cp.Value(), Headers: map[string]string{envelope.HeaderCommitTime: commitMs}}
	}
	batch := envelope.FromRecords([]envelope.Record{
		rec(0, cpFor("g", tp0, 5), "500"),
		{Topic: "source.checkpoints.internal", Offset: 1, Key: []byte{0}, Value: []byte{0}}, // malformed
		rec(2, cpFor("h", tp1, 6), "600"),
		{Topic: "source.checkpoints.internal", Offset: 3, Key: cpFor("h", tp0, 1).Key()}, // tombstone
		rec(4, cpFor("g", tp0, 8), "800"),
	})
	handle(t, s, envelope.NewControl(envelope.Assigned, "cp", 0), batch, envelope.NewControl(envelope.CaughtUp, "cp", 0))
	s.Round(context.Background(), time.Unix(100, 0))
	if got := target.offsets["g"][tp0]; got != 8 {
		t.Errorf("group g at %d, want the batch's later checkpoint 8", got)
	}
	if got := target.offsets["h"][tp1]; got != 6 {
		t.Errorf("group h at %d, want 6", got)
	}
	if _, ok := target.offsets["h"][tp0]; ok {
		t.Error("the tombstone was committed")
	}
	mu.Lock()
	defer mu.Unlock()
	for key, ms := range map[string]int64{"g/0": 800, "h/1": 600} {
		if got := committedAt[key]; !got.Equal(time.UnixMilli(ms)) {
			t.Errorf("%s: commit time %v, want %v from its record's header", key, got, time.UnixMilli(ms))
		}
	}
}
