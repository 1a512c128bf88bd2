package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/infra/config"
	"github.com/checkpointd/checkpointd/internal/testbed/embedded"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages"
)

func TestMain(m *testing.M) { os.Exit(kafkatest.RunMain(m)) }

// syncBuffer is a bytes.Buffer safe for the handler and the test at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// auditLine is what the example writes: an event.CheckpointDecided.
type auditLine struct {
	Group            string `json:"group"`
	Topic            string `json:"topic"`
	Emitted          bool   `json:"emitted"`
	Reason           string `json:"reason"`
	UpstreamOffset   int64  `json:"upstream_offset"`
	DownstreamOffset int64  `json:"downstream_offset"`
}

// waitLine waits for a line of group that match accepts.
func (b *syncBuffer) waitLine(t *testing.T, group string, match func(auditLine) bool) auditLine {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		b.mu.Lock()
		sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
		b.mu.Unlock()
		for sc.Scan() {
			var l auditLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Fatalf("audit line %q: %v", sc.Text(), err)
			}
			if l.Group == group && match(l) {
				return l
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	t.Fatalf("no matching audit line for %s in %q", group, strings.TrimSpace(b.buf.String()))
	return auditLine{}
}

// start runs the example until the test ends.
func start(t *testing.T, cfg *config.Config, out io.Writer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, cfg, out, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("the example did not stop")
		}
	})
}

// TestAuditOnEmbeddedClusters runs the example in process: a source commit
// gives an emitted decision, a commit older than the oldest sync a skipped
// one with its reason.
func TestAuditOnEmbeddedClusters(t *testing.T) {
	pair := embedded.Start(t)
	orders := pair.Mirror(t, "orders", 5, 5)
	pair.Source.Commit(t, "app", orders, 10)
	pair.Source.Commit(t, "late", orders, 2) // before the only sync: MM2's -1
	cfg, _, err := config.FromProperties(pair.Properties(nil), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	start(t, cfg, &out)
	out.waitLine(t, "app", func(l auditLine) bool { return l.Emitted && l.UpstreamOffset == 10 && l.DownstreamOffset == 6 })
	out.waitLine(t, "late", func(l auditLine) bool { return !l.Emitted && l.Reason == "behind_oldest_sync" })
}

// TestAuditOnRealKafka runs the example on real Kafka (make test): an
// offset sync written as MM2 writes it and a source group's commit read
// from __consumer_offsets give an emitted decision.
func TestAuditOnRealKafka(t *testing.T) {
	bed := kafkatest.Shared(t) // skips under -short, fails without Java unless told otherwise
	group := kafkatest.UniqueName(t, "audit")
	topic := kafkatest.UniqueName(t, "orders")
	bed.Source.CreateTopic(t, topic, 1, nil)
	bed.Target.CreateTopic(t, bed.Source.Alias+"."+topic, 1, nil)
	syncs := fmt.Sprintf("mm2-offset-syncs.%s.internal", bed.Target.Alias)
	// MM2 creates its offset-syncs topic; without MM2 in this test, create it as MM2 does.
	bed.Source.EnsureTopic(t, syncs, 1, map[string]string{"cleanup.policy": "compact"})
	producer, err := sarama.NewSyncProducer([]string{bed.Source.Bootstrap}, func() *sarama.Config {
		c := bed.Source.SaramaConfig()
		c.Producer.Return.Successes = true
		return c
	}())
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	tp := messages.TopicPartition{Topic: topic}
	s := messages.OffsetSync{TopicPartition: tp, UpstreamOffset: 5, DownstreamOffset: 5}
	if _, _, err := producer.SendMessage(&sarama.ProducerMessage{Topic: syncs, Key: sarama.ByteEncoder(s.Key()), Value: sarama.ByteEncoder(s.Value())}); err != nil {
		t.Fatal(err)
	}
	admin, err := sarama.NewClusterAdmin([]string{bed.Source.Bootstrap}, bed.Source.SaramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.AlterConsumerGroupOffsets(group, map[string]map[int32]sarama.OffsetAndMetadata{topic: {0: {Offset: 10}}}, nil); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := config.FromProperties(map[string]string{
		"source.cluster.alias": bed.Source.Alias, "target.cluster.alias": bed.Target.Alias,
		"source.cluster.bootstrap.servers": bed.Source.Bootstrap, "target.cluster.bootstrap.servers": bed.Target.Bootstrap,
		"checkpoints.topic.replication.factor": "1", "checkpointd.group.id": group,
	}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	start(t, cfg, &out)
	out.waitLine(t, group, func(l auditLine) bool { return l.Emitted && l.UpstreamOffset == 10 && l.DownstreamOffset == 6 })
}
