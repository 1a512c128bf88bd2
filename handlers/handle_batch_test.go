package handlers

import (
	"context"
	"testing"
	"time"

	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
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
