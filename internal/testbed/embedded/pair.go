// Package embedded starts two in-process Kafka-protocol clusters (kfake), a
// source and a target, for tests of the whole pipeline that need no Java:
// commits are read by the admin poll, as kfake has no __consumer_offsets.
package embedded

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/checkpointd/checkpointd/messages"
)

// Cluster is one embedded cluster and an admin client of it.
type Cluster struct {
	Alias   string
	Brokers []string
	admin   sarama.ClusterAdmin
	client  sarama.Client
}

// Pair is a source and a target cluster.
type Pair struct {
	Source, Target *Cluster
}

// Start starts both clusters; they stop when the test ends.
func Start(t testing.TB) *Pair {
	t.Helper()
	return &Pair{Source: start(t, "source"), Target: start(t, "target")}
}

func start(t testing.TB, alias string) *Cluster {
	t.Helper()
	fake, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatalf("start %s cluster: %v", alias, err)
	}
	t.Cleanup(fake.Close)
	c := &Cluster{Alias: alias, Brokers: fake.ListenAddrs()}
	if c.client, err = sarama.NewClient(c.Brokers, config()); err != nil {
		t.Fatalf("client of %s cluster: %v", alias, err)
	}
	if c.admin, err = sarama.NewClusterAdminFromClient(c.client); err != nil {
		t.Fatalf("admin of %s cluster: %v", alias, err)
	}
	t.Cleanup(func() { c.admin.Close() })
	return c
}

func config() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V4_0_0_0
	cfg.Metadata.Retry.Backoff = 50 * time.Millisecond
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	return cfg
}

// Properties is checkpointd's configuration for the pair, in MM2's names,
// with the sync on and short intervals; extra entries override.
func (p *Pair) Properties(extra map[string]string) map[string]string {
	props := map[string]string{
		"source.cluster.alias":                 p.Source.Alias,
		"target.cluster.alias":                 p.Target.Alias,
		"source.cluster.bootstrap.servers":     strings.Join(p.Source.Brokers, ","),
		"target.cluster.bootstrap.servers":     strings.Join(p.Target.Brokers, ","),
		"sync.group.offsets.enabled":           "true",
		"sync.group.offsets.interval.seconds":  "1",
		"checkpoints.topic.replication.factor": "1",
		"checkpointd.commit.source":            "admin-poll",
		"checkpointd.admin.poll.interval.ms":   "100",
	}
	for k, v := range extra {
		props[k] = v
	}
	return props
}

// CreateTopic creates a topic and waits for its partitions' leaders.
func (c *Cluster) CreateTopic(t testing.TB, name string, partitions int32) {
	t.Helper()
	if err := c.admin.CreateTopic(name, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1}, false); err != nil {
		t.Fatalf("create topic %s on %s: %v", name, c.Alias, err)
	}
	for range 100 {
		if err := c.client.RefreshMetadata(name); err == nil {
			if ids, err := c.client.Partitions(name); err == nil && len(ids) == int(partitions) {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("topic %s on %s: no leaders", name, c.Alias)
}

// Produce writes one record to partition p of topic.
func (c *Cluster) Produce(t testing.TB, topic string, p int32, key, value []byte) {
	t.Helper()
	prod, err := sarama.NewSyncProducerFromClient(c.client)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: p,
		Key: sarama.ByteEncoder(key), Value: sarama.ByteEncoder(value)}); err != nil {
		t.Fatalf("produce to %s on %s: %v", topic, c.Alias, err)
	}
}

// Commit commits offset for group on tp, as a consumer's commitSync would.
func (c *Cluster) Commit(t testing.TB, group string, tp messages.TopicPartition, offset int64) {
	t.Helper()
	resp, err := c.admin.AlterConsumerGroupOffsets(group, map[string]map[int32]sarama.OffsetAndMetadata{
		tp.Topic: {tp.Partition: {Offset: offset}}}, nil)
	if err != nil {
		t.Fatalf("commit %s %s on %s: %v", group, tp, c.Alias, err)
	}
	for _, parts := range resp.Errors {
		for _, kerr := range parts {
			if kerr != sarama.ErrNoError {
				t.Fatalf("commit %s %s on %s: %v", group, tp, c.Alias, kerr)
			}
		}
	}
}

// Offset is group's committed offset on tp, -1 if none.
func (c *Cluster) Offset(t testing.TB, group string, tp messages.TopicPartition) int64 {
	t.Helper()
	resp, err := c.admin.ListConsumerGroupOffsets(group, map[string][]int32{tp.Topic: {tp.Partition}})
	if errors.Is(err, sarama.ErrGroupIDNotFound) {
		return -1
	}
	if err != nil {
		t.Fatalf("offsets of %s on %s: %v", group, c.Alias, err)
	}
	if b := resp.GetBlock(tp.Topic, tp.Partition); b != nil && b.Err == sarama.ErrNoError {
		return b.Offset
	}
	return -1
}

// Mirror sets the pair up as MM2's source connector would for one
// partition: the topic on both sides (source.<topic> on the target) and
// an offset sync upstream -> downstream in mm2-offset-syncs.target.internal.
func (p *Pair) Mirror(t testing.TB, topic string, upstream, downstream int64) messages.TopicPartition {
	t.Helper()
	p.Source.CreateTopic(t, topic, 1)
	p.Target.CreateTopic(t, p.Source.Alias+"."+topic, 1)
	syncs := fmt.Sprintf("mm2-offset-syncs.%s.internal", p.Target.Alias)
	p.Source.CreateTopic(t, syncs, 1)
	s := messages.OffsetSync{TopicPartition: messages.TopicPartition{Topic: topic}, UpstreamOffset: upstream, DownstreamOffset: downstream}
	p.Source.Produce(t, syncs, 0, s.Key(), s.Value())
	return s.TopicPartition
}
