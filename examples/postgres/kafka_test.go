package main

import (
	"testing"

	"github.com/checkpointd/checkpointd/infra/config"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages"
)

// TestPostgresOnRealKafka runs the example on real Kafka against a real
// PostgreSQL (make test): the commits are read from __consumer_offsets, the
// sync as MM2 writes it, and the rows are exactly the checkpoint events a
// second handler saw, among them app's emitted and written checkpoint and
// late's skip behind the oldest sync.
func TestPostgresOnRealKafka(t *testing.T) {
	bed := kafkatest.Shared(t) // first: skips under -short before PostgreSQL starts
	db := openDB(t)
	orders := kafkatest.UniqueName(t, "orders")
	app := kafkatest.UniqueName(t, "app")
	late := kafkatest.UniqueName(t, "late")
	remote := bed.Source.Alias + "." + orders
	bed.Source.CreateTopic(t, orders, 1, nil)
	bed.Target.CreateTopic(t, remote, 1, nil)
	bed.Target.Produce(t, remote, 0, 10) // the translated offset exists on the target
	// MM2 creates its offset-syncs topic; without MM2 in this test, create it as MM2 does.
	bed.Source.EnsureTopic(t, bed.OffsetSyncsTopic(), 1, map[string]string{"cleanup.policy": "compact"})
	s := messages.OffsetSync{TopicPartition: messages.TopicPartition{Topic: orders}, UpstreamOffset: 5, DownstreamOffset: 5}
	bed.Source.ProduceRecord(t, bed.OffsetSyncsTopic(), 0, s.Key(), s.Value())
	bed.Source.CommitOffsets(t, app, map[messages.TopicPartition]int64{{Topic: orders}: 10})
	bed.Source.CommitOffsets(t, late, map[messages.TopicPartition]int64{{Topic: orders}: 2}) // before the only sync

	cfg, _, err := config.FromProperties(map[string]string{
		"source.cluster.alias": bed.Source.Alias, "target.cluster.alias": bed.Target.Alias,
		"source.cluster.bootstrap.servers": bed.Source.Bootstrap, "target.cluster.bootstrap.servers": bed.Target.Bootstrap,
		"checkpoints.topic.replication.factor": "1", "checkpointd.group.id": kafkatest.UniqueName(t, "cpd"),
		"sync.group.offsets.enabled": "true", "sync.group.offsets.interval.seconds": "1",
	}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := startExample(t, cfg, db)
	awaitRows(t, db, rec, wantRows(app, late, remote))
}
