package targetgroups_test

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/checkpointd/checkpointd/handlers/groupsync"
	"github.com/checkpointd/checkpointd/infra/targetgroups"
	"github.com/checkpointd/checkpointd/messages"
)

// These run on kfake, in -short runs too. kfake differs from Kafka where
// the adapter must cope: OffsetFetch of an unknown group answers
// GROUP_ID_NOT_FOUND, and a simple commit to an active KIP-848 group
// answers UNSUPPORTED_VERSION instead of UNKNOWN_MEMBER_ID.

const fakeTopic = "src.orders"

func fakeTarget(t *testing.T) (bootstrap string, cfg func() *sarama.Config, c *targetgroups.Client) {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, fakeTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	bootstrap = cluster.ListenAddrs()[0]
	cfg = func() *sarama.Config {
		conf := sarama.NewConfig()
		conf.Version = sarama.V4_0_0_0
		conf.Admin.Retry.Backoff = 10 * time.Millisecond
		return conf
	}
	client, err := sarama.NewClient([]string{bootstrap}, cfg())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	c, err = targetgroups.New(client, slog.New(slog.NewTextHandler(testWriter{t}, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return bootstrap, cfg, c
}

func fakeTP(p int32) messages.TopicPartition {
	return messages.TopicPartition{Topic: fakeTopic, Partition: p}
}

func TestFakeNewGroup(t *testing.T) {
	_, _, c := fakeTarget(t)
	got, err := c.Offsets(testContext(t), "new")
	if err != nil || len(got) != 0 {
		t.Fatalf("offsets of an unknown group: %v, %v; want none", got, err)
	}
	if s := describeOne(t, c, "new"); s.State != groupsync.StateNotFound || s.Active {
		t.Fatalf("unknown group: %+v", s)
	}
	res, err := c.Commit(testContext(t), "new", map[messages.TopicPartition]targetgroups.Offset{fakeTP(0): {Offset: 4, Metadata: "m"}})
	if err != nil || res.Count(groupsync.Committed) != 1 {
		t.Fatalf("commit: %+v, %v", res, err)
	}
	if got, err := c.Offsets(testContext(t), "new"); err != nil || got[fakeTP(0)] != 4 {
		t.Fatalf("offsets after commit: %v, %v", got, err)
	}
	if s := describeOne(t, c, "new"); s.State != groupsync.StateEmpty || s.Active {
		t.Fatalf("after commit: %+v, want Empty", s)
	}
}

func TestFakeActiveClassicGroup(t *testing.T) {
	bootstrap, cfg, c := fakeTarget(t)
	joinClassic(t, bootstrap, cfg(), "busy", fakeTopic)
	if s := describeOne(t, c, "busy"); s.State != "Stable" || s.Protocol != targetgroups.ProtocolClassic || !s.Active {
		t.Fatalf("joined classic group: %+v", s)
	}
	res, err := c.Commit(testContext(t), "busy", map[messages.TopicPartition]targetgroups.Offset{fakeTP(0): {Offset: 4}})
	if err != nil {
		t.Fatal(err)
	}
	if p := res.Partitions[fakeTP(0)]; p.Reason != groupsync.ActiveOnTarget || !errors.Is(p.Err, sarama.ErrUnknownMemberId) {
		t.Fatalf("commit into active classic group: %s %v", p.Reason, p.Err)
	}
}

func TestFakeActiveConsumerProtocolGroup(t *testing.T) {
	bootstrap, _, c := fakeTarget(t)
	joinConsumerProtocol(t, bootstrap, "busy848", fakeTopic)
	var s targetgroups.GroupState
	waitUntil(t, 10*time.Second, "KIP-848 group to be Stable", func() bool {
		s = describeOne(t, c, "busy848")
		return s.State == "Stable"
	})
	if s.Protocol != targetgroups.ProtocolConsumer || s.Members != 1 || !s.Active {
		t.Fatalf("joined KIP-848 group: %+v", s)
	}
	res, err := c.Commit(testContext(t), "busy848", map[messages.TopicPartition]targetgroups.Offset{fakeTP(0): {Offset: 4}})
	if err != nil {
		t.Fatal(err)
	}
	if p := res.Partitions[fakeTP(0)]; p.Reason != groupsync.ActiveOnTarget || !errors.Is(p.Err, sarama.ErrUnsupportedVersion) {
		t.Fatalf("commit into active KIP-848 group: %s %v", p.Reason, p.Err)
	}
}
