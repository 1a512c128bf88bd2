package adminpoll

import (
	"testing"
	"time"

	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
)

func TestRecordLooksLikeConsumerOffsets(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_123)
	msg, err := record(change{"payments", tp("orders", 3), &commit{Offset: 42, LeaderEpoch: 7, Metadata: "m"}}, 0, 9, now)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := envelope.ToRecord(msg)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Topic != Topic || rec.Partition != 0 || rec.Offset != 9 || !rec.Timestamp.Equal(now) {
		t.Errorf("position %s/%d/%d at %v", rec.Topic, rec.Partition, rec.Offset, rec.Timestamp)
	}
	got, err := messages.DecodeOffsetsRecord(rec.Key, rec.Value)
	if err != nil {
		t.Fatal(err)
	}
	want := messages.OffsetsRecord{
		Kind: messages.OffsetCommitRecord, KeyVersion: 1, ValueVersion: commitValueVersion,
		Group: "payments", TopicPartition: tp("orders", 3),
		Offset: 42, LeaderEpoch: 7, Metadata: "m", CommitTimestamp: now.UnixMilli(), ExpireTimestamp: -1,
	}
	if got != want {
		t.Errorf("decoded\n%+v\nwant\n%+v", got, want)
	}

	msg, err = record(change{"payments", tp("orders", 3), nil}, 0, 10, now)
	if err != nil {
		t.Fatal(err)
	}
	rec, err = envelope.ToRecord(msg)
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Tombstone() {
		t.Fatal("a deletion must be a tombstone")
	}
	got, err = messages.DecodeOffsetsRecord(rec.Key, rec.Value)
	if err != nil {
		t.Fatal(err)
	}
	if got.Kind != messages.OffsetCommitRecord || !got.Tombstone || got.Group != "payments" || got.TopicPartition != tp("orders", 3) {
		t.Errorf("tombstone decoded as %+v", got)
	}
}
