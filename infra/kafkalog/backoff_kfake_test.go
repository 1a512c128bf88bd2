package kafkalog_test

import (
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/checkpointd/checkpointd/infra/kafkalog"
)

// An authorization error is logged with the topic and retried with backoff,
// never spun hot. The real-Kafka test bed has no ACLs, so this runs on kfake.
func TestReadersBackOffOnAuthorizationErrors(t *testing.T) {
	t.Parallel()
	const topic = "secret"
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic),
		kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("PLAIN", "admin", "admin"), kfake.User("PLAIN", "alice", "alice"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)

	for _, tt := range []struct {
		name string
		new  func(kafkalog.ReaderConfig) (message.Subscriber, error)
	}{
		{"log reader", func(cfg kafkalog.ReaderConfig) (message.Subscriber, error) {
			return kafkalog.NewLogReader(kafkalog.LogReaderConfig{ReaderConfig: cfg})
		}},
		{"sharded reader", func(cfg kafkalog.ReaderConfig) (message.Subscriber, error) {
			return kafkalog.NewShardedReader(kafkalog.ShardedReaderConfig{ReaderConfig: cfg, GroupID: "g"})
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			scfg := sarama.NewConfig()
			scfg.Version = sarama.V4_0_0_0
			scfg.Net.SASL.Enable = true
			scfg.Net.SASL.Mechanism = sarama.SASLTypePlaintext
			scfg.Net.SASL.User, scfg.Net.SASL.Password = "alice", "alice"
			scfg.Metadata.Retry.Max = 0
			logs := &logBuffer{t: t}
			logs.dumpOnFailure()
			var hookErrs atomic.Int64
			var lastHookErr atomic.Value
			reader, err := tt.new(kafkalog.ReaderConfig{
				Observer: observerFuncs{onError: func(_ string, err error) {
					hookErrs.Add(1)
					lastHookErr.Store(err.Error())
				}},
				Brokers:         cluster.ListenAddrs(),
				Sarama:          scfg,
				Cluster:         "fake",
				Logger:          slog.New(slog.NewTextHandler(logs, nil)),
				RetryBackoff:    50 * time.Millisecond,
				MaxRetryBackoff: 400 * time.Millisecond,
			})
			if err != nil {
				t.Fatal(err)
			}
			col := collect(t, topic, subscribe(t, reader, topic), nil)
			time.Sleep(2 * time.Second)
			if err := reader.Close(); err != nil {
				t.Fatal(err)
			}
			if events := col.waitClosed(); len(events) != 0 {
				t.Errorf("messages from a topic the reader may not read: %v", events)
			}

			// Pauses of 50, 100, 200, then 400 ms (±20 %) in 2 s: about seven attempts.
			lines := logs.lines("cannot read topic metadata", "topic="+topic, "cluster=fake", "uthoriz")
			if len(lines) < 3 || len(lines) > 12 {
				t.Errorf("%d authorization warnings in 2s, want about seven", len(lines))
			}
			// Each failure reaches Observer.ReadFailed too, for /readyz.
			if n := hookErrs.Load(); n < int64(len(lines)) {
				t.Errorf("Observer.ReadFailed heard %d failures, the log %d", n, len(lines))
			} else if msg, _ := lastHookErr.Load().(string); !strings.Contains(msg, "uthoriz") {
				t.Errorf("Observer.ReadFailed's last error %q names no authorization failure", msg)
			}
		})
	}
}

// observerFuncs is a kafkalog.Observer of the funcs it is given.
type observerFuncs struct {
	kafkalog.NopObserver
	onRecord func(topic string, partition int32, offset, hwm int64)
	onError  func(topic string, err error)
}

func (o observerFuncs) RecordRead(topic string, partition int32, offset, hwm int64) {
	if o.onRecord != nil {
		o.onRecord(topic, partition, offset, hwm)
	}
}

func (o observerFuncs) ReadFailed(topic string, err error) {
	if o.onError != nil {
		o.onError(topic, err)
	}
}
