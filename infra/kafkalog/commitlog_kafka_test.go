package kafkalog_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/checkpointd/checkpointd/infra/kafkalog"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
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

	all, err := cl.Load(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != groups {
		t.Fatalf("whole log: %d groups, want %d", len(all), groups)
	}
	seen := 0
	for i := range 2 * n {
		shard := i % n
		keep := func(g string) bool { return messages.GroupPartition(g, n) == shard }
		// By the group, decoded, or by the key, stepped over undecoded.
		byGroup, byKey := keep, func([]byte) bool { return true }
		if i >= n {
			byGroup, byKey = nil, func(key []byte) bool {
				p, ok := messages.GroupPartitionOfKey(key, n)
				return ok && p == shard
			}
		}
		got, err := cl.Load(ctx, byKey, byGroup)
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
	if seen != 2*groups {
		t.Errorf("the shards together, filtered by group and by key, hold %d groups, want %d", seen, 2*groups)
	}
}

// Two restores asked for together (the checkpointer's and the commit
// stage's at one hand-over) share one pass, and each gets every record its
// key filter accepts; a restore asked for later makes a pass of its own.
func TestCheckpointLogSharesAPass(t *testing.T) {
	c := kafkatest.Shared(t).Target
	topic := kafkatest.UniqueName(t, "src") + ".checkpoints.internal"
	c.CreateTopic(t, topic, 1, map[string]string{"cleanup.policy": "compact"})
	const n = 300
	for i := range n {
		cp := messages.Checkpoint{Group: fmt.Sprintf("g%d", i), TopicPartition: messages.TopicPartition{Topic: "t", Partition: 0},
			UpstreamOffset: 1, DownstreamOffset: 1}
		produce(t, c, topic, 0, string(cp.Key()), string(cp.Value()), nil)
	}
	log, _ := newLog(t)
	passes := &passCounter{}
	cfg := readerConfig(t, c, log)
	cfg.Observer = passes
	cl := &kafkalog.CheckpointLog{Reader: cfg, Topic: topic, Gather: 200 * time.Millisecond}
	ctx := context.Background()
	counts := make([]int, 3)
	// The second reader wants the groups g0..g9 only.
	tens := func(key []byte) bool {
		cp, err := messages.DecodeCheckpoint(key, messages.Checkpoint{UpstreamOffset: 1, DownstreamOffset: 1}.Value())
		return err == nil && len(cp.Group) == 2
	}
	keeps := []func([]byte) bool{nil, tens, nil}
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			if err := cl.ReadCheckpoints(ctx, keeps[i], func(envelope.Record) { counts[i]++ }); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := cl.ReadCheckpoints(ctx, keeps[2], func(envelope.Record) { counts[2]++ }); err != nil {
		t.Fatal(err)
	}
	for i, got := range counts {
		want := n
		if keeps[i] != nil {
			want = 10
		}
		if got != want {
			t.Errorf("reader %d got %d records, want %d", i, got, want)
		}
	}
	if got := passes.count(); got != 2 {
		t.Errorf("%d passes over the topic for two readers together and one later, want 2", got)
	}
}

// passCounter counts a reader's connections: one per pass of ReadLog.
type passCounter struct {
	mu     sync.Mutex
	passes int
}

func (p *passCounter) RecordRead(string, int32, int64, int64) {}
func (p *passCounter) ReadFailed(string, error)               {}
func (p *passCounter) ReadReady(string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.passes++
}

func (p *passCounter) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.passes
}
