package kafkalog_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/checkpointd/checkpointd/infra/kafkalog"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages"
)

// A commit log written whole by one instance (the single-partition topic a
// release with one commit lease wrote, in the same format) is read back per
// shard: each new owner gets exactly its groups' records, the newest
// record per partition.
func TestCommitLogLoadsOneShardOfALogWrittenWhole(t *testing.T) {
	c := kafkatest.Shared(t).Target
	topic := kafkatest.UniqueName(t, "src") + ".checkpointd-commits.internal"
	c.CreateTopic(t, topic, 1, map[string]string{"cleanup.policy": "compact"})
	log, _ := newLog(t)
	pub, err := kafkalog.NewCheckpointPublisher([]string{c.Bootstrap}, c.SaramaConfig(), log)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	cl := kafkalog.NewCommitLog(topic, readerConfig(t, c, log), pub, log)
	const groups, n = 20, int32(50)
	var written []messages.Checkpoint
	for g := range groups {
		for p := range int32(2) {
			written = append(written, messages.Checkpoint{Group: fmt.Sprintf("app-%d", g),
				TopicPartition: messages.TopicPartition{Topic: "src.orders", Partition: p}, UpstreamOffset: 10, DownstreamOffset: 9})
		}
	}
	ctx := context.Background()
	if err := cl.Append(ctx, written); err != nil {
		t.Fatal(err)
	}
	// Newer records of one group, later in the log.
	if err := cl.Append(ctx, []messages.Checkpoint{{Group: "app-3", TopicPartition: messages.TopicPartition{Topic: "src.orders", Partition: 0},
		UpstreamOffset: 30, DownstreamOffset: 29}}); err != nil {
		t.Fatal(err)
	}

	all, err := cl.Load(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != groups {
		t.Fatalf("whole log: %d groups, want %d", len(all), groups)
	}
	seen := 0
	for shard := range n {
		keep := func(g string) bool { return messages.GroupPartition(g, n) == shard }
		got, err := cl.Load(ctx, keep)
		if err != nil {
			t.Fatal(err)
		}
		for g, parts := range got {
			if !keep(g) {
				t.Errorf("shard %d got group %s of shard %d", shard, g, messages.GroupPartition(g, n))
			}
			if len(parts) != 2 {
				t.Errorf("shard %d: group %s has %d partitions, want 2", shard, g, len(parts))
			}
			seen++
		}
		if cp, ok := got["app-3"]; ok {
			if d := cp[messages.TopicPartition{Topic: "src.orders", Partition: 0}].Downstream; d != 29 {
				t.Errorf("app-3/0 loaded at %d, want the newer 29", d)
			}
		}
	}
	if seen != groups {
		t.Errorf("the shards together hold %d groups, want %d", seen, groups)
	}
}
