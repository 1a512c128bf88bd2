package kafkatest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/messages"
)

// saramaVersion is the protocol version the helpers speak: the broker's own.
var saramaVersion = sarama.V4_1_1_0

// SaramaConfig returns a fresh client config for this cluster: the broker's
// protocol version, synchronous produce results and short timeouts.
func (c *Cluster) SaramaConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = saramaVersion
	cfg.ClientID = "kafkatest"
	cfg.Net.DialTimeout = 5 * time.Second
	cfg.Metadata.Retry.Backoff = 100 * time.Millisecond
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Return.Errors = true
	cfg.Admin.Timeout = 10 * time.Second
	return cfg
}

// Client returns a client of this cluster, closed when the test ends.
func (c *Cluster) Client(t testing.TB) sarama.Client {
	t.Helper()
	client, err := sarama.NewClient(c.Brokers(), c.SaramaConfig())
	if err != nil {
		t.Fatalf("client of cluster %s: %v", c.Alias, err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// Admin returns an admin client of this cluster, closed when the test ends.
func (c *Cluster) Admin(t testing.TB) sarama.ClusterAdmin {
	t.Helper()
	admin, err := sarama.NewClusterAdmin(c.Brokers(), c.SaramaConfig())
	if err != nil {
		t.Fatalf("admin of cluster %s: %v", c.Alias, err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	return admin
}

// CreateTopic creates a topic replicated to every node, up to three (1 on a
// single-node cluster), and waits until every partition has a leader.
func (c *Cluster) CreateTopic(t testing.TB, name string, partitions int32, configs map[string]string) {
	t.Helper()
	c.createTopic(t, name, partitions, configs, false)
}

// EnsureTopic is CreateTopic for topics that tests of one binary share, such
// as MM2's internal topics: a topic that exists already is fine.
func (c *Cluster) EnsureTopic(t testing.TB, name string, partitions int32, configs map[string]string) {
	t.Helper()
	c.createTopic(t, name, partitions, configs, true)
}

func (c *Cluster) createTopic(t testing.TB, name string, partitions int32, configs map[string]string, existsOK bool) {
	t.Helper()
	entries := make(map[string]*string, len(configs))
	for k, v := range configs {
		entries[k] = &v
	}
	detail := &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: int16(min(len(c.nodes), 3)), ConfigEntries: entries}
	err := c.Admin(t).CreateTopic(name, detail, false)
	if existsOK && errors.Is(err, sarama.ErrTopicAlreadyExists) {
		err = nil
	}
	if err != nil {
		t.Fatalf("create topic %s on %s: %v", name, c.Alias, err)
	}
	client := c.Client(t)
	WaitFor(t, 30*time.Second, fmt.Sprintf("topic %s on %s to have %d partitions with leaders", name, c.Alias, partitions), func() error {
		if err := client.RefreshMetadata(name); err != nil {
			return err
		}
		ids, err := client.Partitions(name)
		if err != nil {
			return err
		}
		if len(ids) != int(partitions) {
			return fmt.Errorf("%d partitions", len(ids))
		}
		for _, p := range ids {
			if _, err := client.Leader(name, p); err != nil {
				return fmt.Errorf("partition %d: %w", p, err)
			}
		}
		return nil
	})
}

// Produce writes n records with distinct keys and values to one partition
// and returns the offsets of the first and the last.
func (c *Cluster) Produce(t testing.TB, topic string, partition int32, n int) (first, last int64) {
	t.Helper()
	if n < 1 {
		t.Fatalf("produce %d records: need at least one", n)
	}
	producer, err := sarama.NewSyncProducer(c.Brokers(), c.SaramaConfig())
	if err != nil {
		t.Fatalf("producer for %s: %v", c.Alias, err)
	}
	defer producer.Close()
	nonce := time.Now().UnixNano() // keeps values distinct across calls
	msgs := make([]*sarama.ProducerMessage, n)
	for i := range msgs {
		msgs[i] = &sarama.ProducerMessage{
			Topic:     topic,
			Partition: partition,
			Key:       sarama.StringEncoder(fmt.Sprintf("key-%d-%d", nonce, i)),
			Value:     sarama.StringEncoder(fmt.Sprintf("%s/%d/%d/%d", topic, partition, nonce, i)),
		}
	}
	if err := producer.SendMessages(msgs); err != nil {
		t.Fatalf("produce %d records to %s-%d on %s: %v", n, topic, partition, c.Alias, err)
	}
	return msgs[0].Offset, msgs[n-1].Offset
}

// ProduceRecord writes one record with key and value to one partition (an
// offset sync as MM2 writes it, say) and returns its offset.
func (c *Cluster) ProduceRecord(t testing.TB, topic string, partition int32, key, value []byte) int64 {
	t.Helper()
	producer, err := sarama.NewSyncProducer(c.Brokers(), c.SaramaConfig())
	if err != nil {
		t.Fatalf("producer for %s: %v", c.Alias, err)
	}
	defer producer.Close()
	_, offset, err := producer.SendMessage(&sarama.ProducerMessage{
		Topic: topic, Partition: partition, Key: sarama.ByteEncoder(key), Value: sarama.ByteEncoder(value),
	})
	if err != nil {
		t.Fatalf("produce a record to %s-%d on %s: %v", topic, partition, c.Alias, err)
	}
	return offset
}

// CommitOffsets commits offsets for group the way a client commits for a group
// it manages itself: generation -1, no member id, no leader epoch, no metadata.
// The group must have no active members.
func (c *Cluster) CommitOffsets(t testing.TB, group string, offsets map[messages.TopicPartition]int64) {
	t.Helper()
	cfg := c.SaramaConfig()
	client := c.Client(t)
	req := sarama.NewOffsetCommitRequest(cfg, group)
	for tp, off := range offsets {
		req.AddBlockWithLeaderEpoch(tp.Topic, tp.Partition, off, -1, 0, "")
	}
	// The first group on a fresh cluster creates __consumer_offsets, so the
	// coordinator may not be there yet.
	WaitFor(t, 30*time.Second, fmt.Sprintf("commit of group %s on %s", group, c.Alias), func() error {
		coord, err := client.Coordinator(group)
		if err != nil {
			return err
		}
		resp, err := coord.CommitOffset(req)
		if err != nil {
			_ = client.RefreshCoordinator(group)
			return err
		}
		for topic, parts := range resp.Errors {
			for p, kerr := range parts {
				if errors.Is(kerr, sarama.ErrNoError) {
					continue
				}
				if retriableGroupError(kerr) {
					_ = client.RefreshCoordinator(group)
					return fmt.Errorf("%s-%d: %w", topic, p, kerr)
				}
				t.Fatalf("commit %s-%d for group %s on %s: %v", topic, p, group, c.Alias, kerr)
			}
		}
		return nil
	})
}

func retriableGroupError(err error) bool {
	return errors.Is(err, sarama.ErrOffsetsLoadInProgress) ||
		errors.Is(err, sarama.ErrConsumerCoordinatorNotAvailable) ||
		errors.Is(err, sarama.ErrNotCoordinatorForConsumer)
}

// CommittedOffsets returns the group's committed offsets (partitions without
// a commit are left out).
func (c *Cluster) CommittedOffsets(t testing.TB, group string) map[messages.TopicPartition]int64 {
	t.Helper()
	resp, err := c.Admin(t).ListConsumerGroupOffsets(group, nil)
	if err != nil {
		t.Fatalf("offsets of group %s on %s: %v", group, c.Alias, err)
	}
	blocks := resp.Blocks
	if g := resp.GetGroup(group); g != nil { // v8+ answers per group
		blocks = g.Blocks
	}
	out := make(map[messages.TopicPartition]int64)
	for topic, parts := range blocks {
		for p, b := range parts {
			if !errors.Is(b.Err, sarama.ErrNoError) {
				t.Fatalf("offset of group %s for %s-%d on %s: %v", group, topic, p, c.Alias, b.Err)
			}
			if b.Offset >= 0 {
				out[messages.TopicPartition{Topic: topic, Partition: p}] = b.Offset
			}
		}
	}
	return out
}

// EndOffsets returns each partition's log end offset (the next offset to be written).
func (c *Cluster) EndOffsets(t testing.TB, topic string) map[int32]int64 {
	t.Helper()
	return c.offsets(t, c.Client(t), topic, sarama.OffsetNewest)
}

func (c *Cluster) offsets(t testing.TB, client sarama.Client, topic string, which int64) map[int32]int64 {
	t.Helper()
	out, err := partitionOffsets(client, topic, which)
	if err != nil {
		t.Fatalf("offsets of %s on %s: %v", topic, c.Alias, err)
	}
	return out
}

// partitionOffsets returns the oldest or newest offset of every partition.
func partitionOffsets(client sarama.Client, topic string, which int64) (map[int32]int64, error) {
	if err := client.RefreshMetadata(topic); err != nil {
		return nil, err
	}
	ids, err := client.Partitions(topic)
	if err != nil {
		return nil, err
	}
	out := make(map[int32]int64, len(ids))
	for _, p := range ids {
		off, err := client.GetOffset(topic, p, which)
		if err != nil {
			return nil, fmt.Errorf("partition %d: %w", p, err)
		}
		out[p] = off
	}
	return out, nil
}

// ReadAll reads every partition of topic from its start to the end offset it
// had when ReadAll was called, and returns the records by partition and offset.
func (c *Cluster) ReadAll(t testing.TB, topic string) []*sarama.ConsumerMessage {
	t.Helper()
	client := c.Client(t)
	starts := c.offsets(t, client, topic, sarama.OffsetOldest)
	ends := c.offsets(t, client, topic, sarama.OffsetNewest)
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		t.Fatalf("consumer of %s: %v", c.Alias, err)
	}
	defer consumer.Close()

	var out []*sarama.ConsumerMessage
	for _, p := range slices.Sorted(maps.Keys(ends)) {
		start, end := starts[p], ends[p]
		if end <= start {
			continue
		}
		pc, err := consumer.ConsumePartition(topic, p, start)
		if err != nil {
			t.Fatalf("consume %s-%d on %s: %v", topic, p, c.Alias, err)
		}
		// A partition that ends in a transaction marker has no record at
		// end-1; the deadline turns that into a clear failure, not a hang.
		deadline := time.After(30 * time.Second)
		n := 0
	read:
		for {
			select {
			case msg := <-pc.Messages():
				out = append(out, msg)
				n++
				if msg.Offset >= end-1 {
					break read
				}
			case cerr := <-pc.Errors():
				t.Fatalf("consume %s-%d on %s: %v", topic, p, c.Alias, cerr)
			case <-deadline:
				t.Fatalf("consume %s-%d on %s: no record at offset %d within 30s (read %d records from %d)", topic, p, c.Alias, end-1, n, start)
			}
		}
		_ = pc.Close()
	}
	return out
}

// WaitFor polls cond until it returns nil, failing the test after timeout
// with cond's last error.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: gave up after %s: %v", what, timeout, err)
		}
		time.Sleep(pollInterval)
	}
}
