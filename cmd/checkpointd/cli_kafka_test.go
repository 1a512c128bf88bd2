package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages"
)

func TestMain(m *testing.M) { os.Exit(kafkatest.RunMain(m)) }

func writeConfig(t *testing.T, bed *kafkatest.Bed) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.yaml")
	cfg := fmt.Sprintf("source.cluster.alias: %q\ntarget.cluster.alias: %q\nsource.cluster.bootstrap.servers: %q\ntarget.cluster.bootstrap.servers: %q\n",
		bed.Source.Alias, bed.Target.Alias, bed.Source.Bootstrap, bed.Target.Bootstrap)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	err := dispatch(ctx, args, &stdout, &stderr)
	if stderr.Len() > 0 {
		t.Logf("stderr of %v:\n%s", args, stderr.String())
	}
	return stdout.String(), err
}

func produce(t *testing.T, c *kafkatest.Cluster, topic string, key, value []byte) {
	t.Helper()
	cfg := c.SaramaConfig()
	cfg.Producer.Return.Successes = true
	p, err := sarama.NewSyncProducer([]string{c.Bootstrap}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Key: sarama.ByteEncoder(key), Value: sarama.ByteEncoder(value)}); err != nil {
		t.Fatal(err)
	}
}

// TestTranslateAndInspectOnKafka: translate reports the last checkpoint per
// partition (like RemoteClusterUtils), --explain replays the service's rules
// over the real source commits and offset syncs, inspect decodes records.
func TestTranslateAndInspectOnKafka(t *testing.T) {
	bed := kafkatest.Shared(t)
	cfgPath := writeConfig(t, bed)
	group := kafkatest.UniqueName(t, "cli")
	topic := kafkatest.UniqueName(t, "orders")
	tp := messages.TopicPartition{Topic: topic, Partition: 0}
	bed.Source.CreateTopic(t, topic, 1, nil)
	bed.Source.Produce(t, topic, 0, 50)
	bed.Target.EnsureTopic(t, bed.CheckpointsTopic(), 1, map[string]string{"cleanup.policy": "compact"})
	bed.Source.EnsureTopic(t, bed.OffsetSyncsTopic(), 1, map[string]string{"cleanup.policy": "compact"})

	remote := messages.TopicPartition{Topic: bed.RemoteTopic(topic), Partition: 0}
	for _, cp := range []messages.Checkpoint{
		{Group: group, TopicPartition: remote, UpstreamOffset: 10, DownstreamOffset: 8, Metadata: "m"},
		{Group: group, TopicPartition: remote, UpstreamOffset: 30, DownstreamOffset: 21, Metadata: "m"},
	} {
		produce(t, bed.Target, bed.CheckpointsTopic(), cp.Key(), cp.Value())
	}
	sync := messages.OffsetSync{TopicPartition: tp, UpstreamOffset: 40, DownstreamOffset: 33}
	produce(t, bed.Source, bed.OffsetSyncsTopic(), sync.Key(), sync.Value())
	bed.Source.CommitOffsets(t, group, map[messages.TopicPartition]int64{tp: 45})

	out, err := runCLI(t, "translate", "--config", cfgPath, "--group", group, "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []translatedOffset
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("translate output %q: %v", out, err)
	}
	if len(rows) != 1 || rows[0].DownstreamOffset != 21 || rows[0].UpstreamOffset != 30 || rows[0].Topic != remote.Topic {
		t.Fatalf("translate rows %+v, want the last checkpoint 30 -> 21 on %s", rows, remote.Topic)
	}

	out, err = runCLI(t, "translate", "--config", cfgPath, "--group", group, "--explain", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var ex []explanation
	if err := json.Unmarshal([]byte(out), &ex); err != nil {
		t.Fatalf("explain output %q: %v", out, err)
	}
	// 45 is past the sync at 40 -> 33: +1 rule gives 34, above the last checkpoint 21.
	if len(ex) != 1 || ex[0].Committed != 45 || ex[0].Translation != "translated" || ex[0].Downstream != 34 ||
		ex[0].LastCheckpoint == nil || *ex[0].LastCheckpoint != 21 || ex[0].Decision != "emit" {
		t.Fatalf("explain rows %+v", ex)
	}

	out, err = runCLI(t, "inspect", "--config", cfgPath, "--topic", "offset-syncs")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"kind":"offset_sync"`) || !strings.Contains(out, `"UpstreamOffset":40`) {
		t.Fatalf("inspect offset-syncs: %s", out)
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	bad := "source.cluster.alias: \"source\"\nsource.cluster.bootstrap.servers: \"SOURCE_CLUSTER_BOOTSTRAP_ADDRESS\"\ntarget.cluster.bootstrap.servers: \"t:9092\"\ntasks.max: \"zero\"\n"
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	err := dispatch(context.Background(), []string{"validate", "--config", path}, &stdout, &stderr)
	if err == nil {
		t.Fatalf("validate accepted a bad config:\n%s", stdout.String())
	}
	for _, want := range []string{"SOURCE_CLUSTER_BOOTSTRAP_ADDRESS", "tasks.max"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("validate error does not name %s: %v", want, err)
		}
	}
}
