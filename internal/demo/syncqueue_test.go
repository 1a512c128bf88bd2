package demo

import (
	"slices"
	"testing"

	"github.com/checkpointd/checkpointd/messages"
)

func TestSyncQueueSendsTriggeredSyncsAndDelaysTheRest(t *testing.T) {
	a := messages.TopicPartition{Topic: "orders", Partition: 0}
	b := messages.TopicPartition{Topic: "orders", Partition: 1}
	q := newSyncQueue(10)

	for i := range int64(5) {
		q.record(a, i, i)
	}
	q.record(b, 0, 0)
	want := []messages.OffsetSync{offsetSync(a, 0, 0), offsetSync(b, 0, 0)}
	if got := q.takePending(); !slices.Equal(got, want) {
		t.Fatalf("pending after first records = %v, want %v", got, want)
	}
	if got := q.takePending(); len(got) != 0 {
		t.Fatalf("pending taken twice: %v", got)
	}

	q.promoteDelayed()
	want = []messages.OffsetSync{offsetSync(a, 4, 4)} // only the newest delayed sync of a
	if got := q.takePending(); !slices.Equal(got, want) {
		t.Fatalf("pending after flush = %v, want %v", got, want)
	}
}

func TestSyncQueueTriggeredSyncReplacesDelayedOne(t *testing.T) {
	a := messages.TopicPartition{Topic: "payments", Partition: 0}
	q := newSyncQueue(10)
	q.record(a, 0, 0)
	q.record(a, 1, 1) // delayed
	q.record(a, 3, 2) // upstream gap: fires and drops the delayed sync
	q.promoteDelayed()
	want := []messages.OffsetSync{offsetSync(a, 3, 2)}
	if got := q.takePending(); !slices.Equal(got, want) {
		t.Fatalf("pending = %v, want %v", got, want)
	}
}

func offsetSync(tp messages.TopicPartition, u, d int64) messages.OffsetSync {
	return messages.OffsetSync{TopicPartition: tp, UpstreamOffset: u, DownstreamOffset: d}
}
