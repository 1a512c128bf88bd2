package kafkalog_test

import (
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/checkpointd/checkpointd/infra/kafkalog"
	"github.com/checkpointd/checkpointd/messages/envelope"
)

// A publisher that the broker refused an idempotent producer writes without
// one, asks again with the first batch after the retry interval, and writes
// idempotently again once the broker allows it: refused, it stays without
// and keeps writing; allowed, it switches and says so once.
func TestCheckpointPublisherRegainsIdempotence(t *testing.T) {
	t.Parallel()
	const topic = "cps"
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	var refuse atomic.Bool
	var asked atomic.Int64
	refuse.Store(true)
	cluster.ControlKey(int16(kmsg.InitProducerID), func(req kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		asked.Add(1)
		if !refuse.Load() {
			return nil, nil, false
		}
		resp := req.(*kmsg.InitProducerIDRequest).ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ErrorCode = kerrClusterAuthorizationFailed
		return resp, nil, true
	})

	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.Metadata.Retry.Max = 0
	logs := &logBuffer{t: t}
	logs.dumpOnFailure()
	const retry = 300 * time.Millisecond
	pub, err := kafkalog.NewCheckpointPublisher(cluster.ListenAddrs(), cfg, slog.New(slog.NewTextHandler(logs, nil)),
		kafkalog.WithIdempotenceRetry(retry))
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	idem := pub.(interface{ Idempotent() bool })
	publish := func(i int) {
		t.Helper()
		msg := message.NewMessage("m", []byte{byte(i)})
		msg.Metadata.Set(envelope.MetaKey, "k")
		if err := pub.Publish(topic, msg); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}

	if idem.Idempotent() || len(logs.lines("refuses an idempotent producer")) != 1 {
		t.Fatalf("refused at start: idempotent %v, log:\n%s", idem.Idempotent(), logs.lines(""))
	}
	publish(0)
	time.Sleep(retry + 50*time.Millisecond)
	before := asked.Load()
	publish(1) // asks again, still refused
	if asked.Load() == before {
		t.Error("no new InitProducerId after the retry interval")
	}
	if idem.Idempotent() {
		t.Error("idempotent while the broker refuses")
	}
	publish(2) // within the interval: does not ask
	if n := asked.Load(); n != before+1 {
		t.Errorf("InitProducerId asked %d times after the interval, want once", n-before)
	}

	refuse.Store(false)
	time.Sleep(retry + 50*time.Millisecond)
	publish(3)
	if !idem.Idempotent() {
		t.Fatal("still without idempotence after the broker allows it")
	}
	publish(4)
	if lines := logs.lines("allows an idempotent producer again"); len(lines) != 1 {
		t.Errorf("%d lines about idempotence coming back, want 1", len(lines))
	}
	if got := readCount(t, cluster.ListenAddrs(), topic); got != 5 {
		t.Errorf("%d records written, want 5", got)
	}
}

// kerrClusterAuthorizationFailed is Kafka's CLUSTER_AUTHORIZATION_FAILED.
const kerrClusterAuthorizationFailed = 31

// readCount counts the records in partition 0 of topic.
func readCount(t *testing.T, addrs []string, topic string) int64 {
	t.Helper()
	client, err := sarama.NewClient(addrs, sarama.NewConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	end, err := client.GetOffset(topic, 0, sarama.OffsetNewest)
	if err != nil {
		t.Fatal(err)
	}
	start, err := client.GetOffset(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	return end - start
}
