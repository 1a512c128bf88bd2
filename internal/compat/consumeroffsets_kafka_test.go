package compat_test

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages"
)

// TestMain tears down the real Kafka clusters that kafkatest.Shared starts.
func TestMain(m *testing.M) { os.Exit(kafkatest.RunMain(m)) }

// offsetsTopic is Kafka's internal topic of group commits.
const offsetsTopic = "__consumer_offsets"

// seenCommit is what a tailer of __consumer_offsets learns from one record.
type seenCommit struct {
	partition   int32
	offset      int64
	leaderEpoch int32
	metadata    string
	tombstone   bool
}

// TestDecodeOffsetsRecordFromBroker decodes __consumer_offsets as a real
// Kafka 4.1 broker writes it: plain commits with metadata and leader epochs,
// an offset deletion, and transactional commits (sendOffsetsToTransaction),
// one committed and one aborted. Read with read_committed, every commit must
// come back as made, in order, and the aborted one never.
func TestDecodeOffsetsRecordFromBroker(t *testing.T) {
	src := kafkatest.Shared(t).Source
	topic := kafkatest.UniqueName(t, "orders")
	group := kafkatest.UniqueName(t, "group") + "-grüße" // multibyte, like real group ids can be
	src.CreateTopic(t, topic, 5, nil)
	start := time.Now()

	// Partition 0 and 1: plain commits; 2: aborted transaction; 3: committed
	// transaction; 4: the last commit, which tells the reader it is done.
	commitOffset(t, src, group, topic, 0, 5, -1, "héllo, metadata")
	commitOffset(t, src, group, topic, 1, 3, 0, "")
	commitOffset(t, src, group, topic, 0, 8, -1, "")
	abortTransactionalCommit(t, src, group, topic, 2, 100, "aborted")
	commitInTransaction(t, src, group, topic, 3, 200, "txn")
	if err := src.Admin(t).DeleteConsumerGroupOffset(group, topic, 1); err != nil {
		t.Fatalf("delete offset of %s-1: %v", topic, err)
	}
	commitOffset(t, src, group, topic, 4, 1, -1, "end")
	want := []seenCommit{
		{partition: 0, offset: 5, leaderEpoch: -1, metadata: "héllo, metadata"},
		{partition: 1, offset: 3, leaderEpoch: 0},
		{partition: 0, offset: 8, leaderEpoch: -1},
		{partition: 3, offset: 200, leaderEpoch: -1, metadata: "txn"},
		{partition: 1, leaderEpoch: -1, tombstone: true}, // the decoder's "absent"
		{partition: 4, offset: 1, leaderEpoch: -1, metadata: "end"},
	}
	isLast := func(c seenCommit) bool { return c.partition == 4 }

	client := src.Client(t)
	partitions, err := client.Partitions(offsetsTopic)
	if err != nil {
		t.Fatalf("partitions of %s: %v", offsetsTopic, err)
	}
	// Where checkpointd's shards say the group is: finding its records
	// there checks messages.GroupPartition against the broker.
	partition := messages.GroupPartition(group, int32(len(partitions)))

	got := readCommits(t, src, sarama.ReadCommitted, partition, group, topic, start, isLast)
	if len(got) != len(want) {
		t.Fatalf("read_committed: read %d commits of the group, want %d:\n got %+v\nwant %+v", len(got), len(want), got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("read_committed commit %d: got %+v, want %+v", i, got[i], want[i])
		}
	}

	// The aborted commit is really in the log; only read_committed hides it.
	aborted := seenCommit{partition: 2, offset: 100, leaderEpoch: -1, metadata: "aborted"}
	found := false
	for _, c := range readCommits(t, src, sarama.ReadUncommitted, partition, group, topic, start, isLast) {
		found = found || c == aborted
	}
	if !found {
		t.Errorf("read_uncommitted did not see the aborted commit %+v: the test proves nothing", aborted)
	}
}

// commitOffset commits one offset the way a consumer managing its own
// partitions does: no generation, no member id.
func commitOffset(t *testing.T, c *kafkatest.Cluster, group, topic string, partition int32, offset int64, leaderEpoch int32, metadata string) {
	t.Helper()
	client := c.Client(t)
	req := sarama.NewOffsetCommitRequest(c.SaramaConfig(), group)
	req.AddBlockWithLeaderEpoch(topic, partition, offset, leaderEpoch, 0, metadata)
	retry(t, "commit of "+group, func() error {
		coordinator, err := client.Coordinator(group)
		if err != nil {
			return err
		}
		resp, err := coordinator.CommitOffset(req)
		if err != nil {
			_ = client.RefreshCoordinator(group)
			return err
		}
		if kerr := resp.Errors[topic][partition]; !errors.Is(kerr, sarama.ErrNoError) {
			_ = client.RefreshCoordinator(group)
			return kerr
		}
		return nil
	})
}

// commitInTransaction produces a record and commits an offset in one
// transaction, like a consume-transform-produce loop, and commits it.
func commitInTransaction(t *testing.T, c *kafkatest.Cluster, group, topic string, partition int32, offset int64, metadata string) {
	t.Helper()
	cfg := c.SaramaConfig()
	cfg.Producer.Idempotent = true
	cfg.Producer.Transaction.ID = kafkatest.UniqueName(t, "txn")
	cfg.Net.MaxOpenRequests = 1
	producer, err := sarama.NewSyncProducer([]string{c.Bootstrap}, cfg)
	if err != nil {
		t.Fatalf("transactional producer: %v", err)
	}
	defer producer.Close()
	if err := producer.BeginTxn(); err != nil {
		t.Fatalf("begin transaction: %v", err)
	}
	msg := &sarama.ProducerMessage{Topic: topic, Partition: partition, Value: sarama.StringEncoder(metadata)}
	if _, _, err := producer.SendMessage(msg); err != nil {
		t.Fatalf("produce in transaction: %v", err)
	}
	offsets := map[string][]*sarama.PartitionOffsetMetadata{
		topic: {{Partition: partition, Offset: offset, LeaderEpoch: -1, Metadata: &metadata}},
	}
	if err := producer.AddOffsetsToTxn(offsets, group); err != nil {
		t.Fatalf("add offsets to transaction: %v", err)
	}
	if err := producer.CommitTxn(); err != nil {
		t.Fatalf("commit transaction: %v", err)
	}
}

// abortTransactionalCommit commits an offset in a transaction and aborts it.
// It speaks the protocol itself: sarama's producer never sends the offsets of
// a transaction it aborts, so nothing would reach __consumer_offsets.
func abortTransactionalCommit(t *testing.T, c *kafkatest.Cluster, group, topic string, partition int32, offset int64, metadata string) {
	t.Helper()
	client := c.Client(t)
	txnID := kafkatest.UniqueName(t, "txn")
	onTxnCoordinator := func(what string, call func(*sarama.Broker) (sarama.KError, error)) {
		t.Helper()
		retry(t, what, func() error {
			coordinator, err := client.TransactionCoordinator(txnID)
			if err != nil {
				return err
			}
			kerr, err := call(coordinator)
			if err != nil {
				_ = client.RefreshTransactionCoordinator(txnID)
				return err
			}
			if !errors.Is(kerr, sarama.ErrNoError) {
				return kerr
			}
			return nil
		})
	}
	// Request versions as sarama's own transaction manager picks them for Kafka 2.8+.
	var producerID int64
	var epoch int16
	onTxnCoordinator("init producer id", func(b *sarama.Broker) (sarama.KError, error) {
		resp, err := b.InitProducerID(&sarama.InitProducerIDRequest{Version: 4, TransactionalID: &txnID,
			TransactionTimeout: time.Minute, ProducerID: -1, ProducerEpoch: -1})
		if err != nil {
			return 0, err
		}
		producerID, epoch = resp.ProducerID, resp.ProducerEpoch
		return resp.Err, nil
	})
	onTxnCoordinator("add offsets to transaction", func(b *sarama.Broker) (sarama.KError, error) {
		resp, err := b.AddOffsetsToTxn(&sarama.AddOffsetsToTxnRequest{Version: 3, TransactionalID: txnID,
			ProducerID: producerID, ProducerEpoch: epoch, GroupID: group})
		if err != nil {
			return 0, err
		}
		return resp.Err, nil
	})
	retry(t, "transactional offset commit", func() error {
		coordinator, err := client.Coordinator(group)
		if err != nil {
			return err
		}
		resp, err := coordinator.TxnOffsetCommit(&sarama.TxnOffsetCommitRequest{Version: 3, TransactionalID: txnID,
			GroupID: group, ProducerID: producerID, ProducerEpoch: epoch, GenerationID: -1,
			Topics: map[string][]*sarama.PartitionOffsetMetadata{
				topic: {{Partition: partition, Offset: offset, LeaderEpoch: -1, Metadata: &metadata}},
			}})
		if err != nil {
			_ = client.RefreshCoordinator(group)
			return err
		}
		for _, p := range resp.Topics[topic] {
			if !errors.Is(p.Err, sarama.ErrNoError) {
				return p.Err
			}
		}
		return nil
	})
	onTxnCoordinator("abort transaction", func(b *sarama.Broker) (sarama.KError, error) {
		resp, err := b.EndTxn(&sarama.EndTxnRequest{Version: 3, TransactionalID: txnID,
			ProducerID: producerID, ProducerEpoch: epoch, TransactionResult: false})
		if err != nil {
			return 0, err
		}
		return resp.Err, nil
	})
}

// readCommits reads one partition of __consumer_offsets from its start until
// isLast accepts a commit of group, decoding every record on the way (all
// must decode), and returns the group's commits on topic in log order.
func readCommits(t *testing.T, c *kafkatest.Cluster, isolation sarama.IsolationLevel, partition int32,
	group, topic string, since time.Time, isLast func(seenCommit) bool,
) []seenCommit {
	t.Helper()
	cfg := c.SaramaConfig()
	cfg.Consumer.IsolationLevel = isolation
	consumer, err := sarama.NewConsumer([]string{c.Bootstrap}, cfg)
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	defer consumer.Close()
	pc, err := consumer.ConsumePartition(offsetsTopic, partition, sarama.OffsetOldest)
	if err != nil {
		t.Fatalf("consume %s-%d: %v", offsetsTopic, partition, err)
	}
	defer pc.Close()

	var commits []seenCommit
	deadline := time.After(30 * time.Second)
	for {
		select {
		case msg := <-pc.Messages():
			r, err := messages.DecodeOffsetsRecord(msg.Key, msg.Value)
			if err != nil {
				t.Errorf("%s-%d at offset %d: %v\nkey %x\nvalue %x", offsetsTopic, partition, msg.Offset, err, msg.Key, msg.Value)
				continue
			}
			if r.Kind != messages.OffsetCommitRecord || r.Group != group || r.Topic != topic {
				continue
			}
			if !r.Tombstone {
				checkCommitTimes(t, r, since)
				t.Logf("%s-%d at offset %d: %v", offsetsTopic, partition, msg.Offset, r)
			}
			seen := seenCommit{partition: r.Partition, offset: r.Offset, leaderEpoch: r.LeaderEpoch, metadata: r.Metadata, tombstone: r.Tombstone}
			commits = append(commits, seen)
			if isLast(seen) {
				return commits
			}
		case err := <-pc.Errors():
			t.Fatalf("consume %s-%d: %v", offsetsTopic, partition, err)
		case <-deadline:
			t.Fatalf("no last commit of group %s in %s-%d within 30s; read %+v", group, offsetsTopic, partition, commits)
		}
	}
}

// checkCommitTimes checks the broker-set fields of a commit.
func checkCommitTimes(t *testing.T, r messages.OffsetsRecord, since time.Time) {
	t.Helper()
	committed := time.UnixMilli(r.CommitTimestamp)
	if committed.Before(since.Add(-time.Minute)) || committed.After(time.Now().Add(time.Minute)) {
		t.Errorf("%v: commit time %s is not around now", r, committed)
	}
	if r.ExpireTimestamp != -1 || r.ValueVersion < 3 {
		t.Errorf("%v: want a value of version 3 or later without expire time", r)
	}
}

// retry calls f until it succeeds, failing the test after 30 seconds: the
// group coordinator may still be loading on a fresh cluster.
func retry(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
