package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

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

func (b *syncBuffer) lines(t *testing.T) []auditLine {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []auditLine
	sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	for sc.Scan() {
		var l auditLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

// TestAuditHandlerSeesCheckpoints runs the example on real Kafka: checkpoints
// written to the topic the way Java MM2 writes them reach the plugged-in
// handler, first as replay, then live.
func TestAuditHandlerSeesCheckpoints(t *testing.T) {
	bed := kafkatest.Shared(t)
	group := kafkatest.UniqueName(t, "audit")
	cpTopic := bed.CheckpointsTopic()
	bed.Target.CreateTopic(t, cpTopic, 1, map[string]string{"cleanup.policy": "compact"})
	producer, err := sarama.NewSyncProducer([]string{bed.Target.Bootstrap}, func() *sarama.Config {
		c := bed.Target.SaramaConfig()
		c.Producer.Return.Successes = true
		return c
	}())
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	write := func(up, down int64) {
		cp := messages.Checkpoint{Group: group, TopicPartition: messages.TopicPartition{Topic: "source.orders", Partition: 2}, UpstreamOffset: up, DownstreamOffset: down}
		if _, _, err := producer.SendMessage(&sarama.ProducerMessage{Topic: cpTopic, Partition: 0, Key: sarama.ByteEncoder(cp.Key()), Value: sarama.ByteEncoder(cp.Value())}); err != nil {
			t.Fatal(err)
		}
	}
	write(10, 9) // before the example starts: seen as replay

	cfgPath := filepath.Join(t.TempDir(), "audit.yaml")
	cfg := fmt.Sprintf("source.cluster.alias: %q\ntarget.cluster.alias: %q\nsource.cluster.bootstrap.servers: %q\ntarget.cluster.bootstrap.servers: %q\n"+
		"checkpoints.topic.replication.factor: \"1\"\ncheckpointd.group.id: %q\ncheckpointd.commit.source: admin-poll\n",
		bed.Source.Alias, bed.Target.Alias, bed.Source.Bootstrap, bed.Target.Bootstrap, group)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, cfgPath, &out, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	}()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("the example did not stop")
		}
	}()

	waitLines := func(n int) []auditLine {
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			var mine []auditLine
			for _, l := range out.lines(t) {
				if l.Group == group {
					mine = append(mine, l)
				}
			}
			if len(mine) >= n {
				return mine
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("audit handler wrote fewer than %d lines for %s: %q", n, group, strings.TrimSpace(fmt.Sprint(out.lines(t))))
		return nil
	}
	first := waitLines(1)
	if !first[0].Replay || first[0].Upstream != 10 || first[0].Downstream != 9 || first[0].Topic != "source.orders" || first[0].Partition != 2 {
		t.Fatalf("first line %+v", first[0])
	}
	write(20, 19) // while it runs: live
	lines := waitLines(2)
	if last := lines[len(lines)-1]; last.Replay || last.Upstream != 20 || last.Downstream != 19 {
		t.Fatalf("live line %+v", last)
	}
}
