package kafkalog_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/infra/kafkalog"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
)

// readBackRecords is the size of a checkpoints topic a hand-over reads back
// in the scale-out kill scenario: a minute at 1,000 commits/s, not
// compacted yet.
const readBackRecords = 300_000

// BenchmarkReadBack reads a checkpoints topic of readBackRecords MM2
// checkpoint records whole, as a new shard owner's restore does (ReadBack),
// beside the tailing reader (ReadLog) and sarama's consumer alone, which
// ReadLog runs on: records/s bound the restore part of a hand-over.
func BenchmarkReadBack(b *testing.B) {
	c := kafkatest.Shared(b).Target
	topic := kafkatest.UniqueName(b, "src") + ".checkpoints.internal"
	c.CreateTopic(b, topic, 1, map[string]string{"cleanup.policy": "compact"})
	writeCheckpoints(b, c, topic, readBackRecords)
	rc := kafkalog.ReaderConfig{Brokers: []string{c.Bootstrap}, Sarama: c.SaramaConfig(), Cluster: c.Alias,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), BatchRecords: 4096}
	for _, tt := range []struct {
		name string
		read func(fn func() error) error
	}{
		{"readback", func(fn func() error) error {
			return kafkalog.ReadBack(context.Background(), rc, topic, func(envelope.Record) error { return fn() })
		}},
		{"readlog", func(fn func() error) error {
			return kafkalog.ReadLog(context.Background(), rc, topic, false, func(envelope.Record) error { return fn() })
		}},
		{"sarama-consumer", func(fn func() error) error { return consumeAll(c, topic, fn) }},
	} {
		b.Run(tt.name, func(b *testing.B) {
			for b.Loop() {
				n := 0
				if err := tt.read(func() error { n++; return nil }); err != nil {
					b.Fatal(err)
				}
				if n != readBackRecords {
					b.Fatalf("read %d records back, want %d", n, readBackRecords)
				}
			}
			b.ReportMetric(float64(readBackRecords*b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// consumeAll reads partition 0 of topic to its end with sarama's consumer.
func consumeAll(c *kafkatest.Cluster, topic string, fn func() error) error {
	consumer, err := sarama.NewConsumer(c.Brokers(), c.SaramaConfig())
	if err != nil {
		return err
	}
	defer consumer.Close()
	pc, err := consumer.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		return err
	}
	defer pc.Close()
	end := pc.HighWaterMarkOffset()
	for m := range pc.Messages() {
		if err := fn(); err != nil {
			return err
		}
		if m.Offset+1 >= end {
			break
		}
	}
	return nil
}

// writeCheckpoints writes n checkpoint records of 1,000 groups × 4
// partitions, in MM2's format, in chunks of 10,000.
func writeCheckpoints(tb testing.TB, c *kafkatest.Cluster, topic string, n int) {
	tb.Helper()
	p, err := sarama.NewSyncProducer(c.Brokers(), c.SaramaConfig())
	if err != nil {
		tb.Fatal(err)
	}
	defer p.Close()
	for from := 0; from < n; from += 10_000 {
		msgs := make([]*sarama.ProducerMessage, 0, 10_000)
		for i := from; i < min(n, from+10_000); i++ {
			cp := messages.Checkpoint{Group: fmt.Sprintf("app-%d", i%1000),
				TopicPartition: messages.TopicPartition{Topic: "src.orders", Partition: int32(i/1000) % 4},
				UpstreamOffset: int64(i), DownstreamOffset: int64(i)}
			msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: 0, Key: sarama.ByteEncoder(cp.Key()), Value: sarama.ByteEncoder(cp.Value())})
		}
		if err := p.SendMessages(msgs); err != nil {
			tb.Fatalf("write checkpoints to %s: %v", topic, err)
		}
	}
}
