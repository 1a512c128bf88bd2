package adminpoll_test

import (
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/checkpointd/checkpointd/infra/adminpoll"
	"github.com/checkpointd/checkpointd/messages/envelope"
)

// TestFakePoll runs the poller on kfake, in -short runs too: kfake answers
// OffsetFetch of a group it does not know with GROUP_ID_NOT_FOUND, where
// Kafka returns no offsets.
func TestFakePoll(t *testing.T) {
	client, admin, commit := fakeSource(t, 2)
	commit("g-a", 0, 5)
	commit("g-b", 1, 6)

	sub, err := adminpoll.New(adminpoll.Config{Client: client, Groups: prefix("g-"), Interval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ch, err := sub.Subscribe(t.Context(), adminpoll.Topic)
	if err != nil {
		t.Fatal(err)
	}
	if got := next(t, ch); got.control != envelope.Assigned {
		t.Fatalf("first message %v", got)
	}
	want := []seen{{commit: "g-a orders-0=5/"}, {commit: "g-b orders-1=6/"}}
	if got := nextN(t, ch, 2); !slices.Equal(got, want) {
		t.Fatalf("first poll %v, want %v", got, want)
	}
	if got := next(t, ch); got.control != envelope.CaughtUp {
		t.Fatalf("then %v, want %s", got, envelope.CaughtUp)
	}
	commit("g-a", 0, 8)
	if got := next(t, ch); got.commit != "g-a orders-0=8/" {
		t.Fatalf("after a commit: %v", got)
	}
	if err := admin.DeleteConsumerGroup("g-b"); err != nil {
		t.Fatal(err)
	}
	if got := next(t, ch); got.commit != "g-b orders-1 deleted" {
		t.Fatalf("after deleting a group: %v", got)
	}
}

// fakeSource is a kfake cluster with a topic "orders" of 2 partitions, a
// client and an admin of it, and commit, which commits a group's offset.
func fakeSource(t *testing.T, brokers int) (sarama.Client, sarama.ClusterAdmin, func(group string, partition int32, offset int64)) {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(brokers), kfake.SeedTopics(2, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V4_0_0_0
	client, err := sarama.NewClient(cluster.ListenAddrs(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		t.Fatal(err)
	}
	commit := func(group string, partition int32, offset int64) {
		t.Helper()
		resp, err := admin.AlterConsumerGroupOffsets(group, map[string]map[int32]sarama.OffsetAndMetadata{
			"orders": {partition: {Offset: offset, LeaderEpoch: -1}},
		}, nil)
		if err != nil || resp.Errors["orders"][partition] != sarama.ErrNoError {
			t.Fatalf("commit %s: %v %v", group, err, resp)
		}
	}
	return client, admin, commit
}
