package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/checkpointd/checkpointd/infra/config"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages"
)

func TestMain(m *testing.M) { os.Exit(kafkatest.RunMain(m)) }

// TestRenameOnRealKafka runs the example on real Kafka (make test): app's
// offsets are committed into dr-app on the target while its checkpoint
// record keeps the name app, as MM2 writes it; tmp-job is vetoed, so it
// has neither a record nor a target group under any name.
func TestRenameOnRealKafka(t *testing.T) {
	bed := kafkatest.Shared(t) // skips under -short, fails without Java unless told otherwise
	orders := kafkatest.UniqueName(t, "orders")
	app := kafkatest.UniqueName(t, "app")
	tmp := kafkatest.UniqueName(t, "tmp-job") // vetoed by the prefix tmp-
	remote := bed.Source.Alias + "." + orders
	bed.Source.CreateTopic(t, orders, 1, nil)
	bed.Target.CreateTopic(t, remote, 1, nil)
	bed.Target.Produce(t, remote, 0, 10) // the translated offset exists on the target
	s := messages.OffsetSync{TopicPartition: messages.TopicPartition{Topic: orders}, UpstreamOffset: 5, DownstreamOffset: 5}
	// MM2 creates its offset-syncs topic; without MM2 in this test, create it as MM2 does.
	bed.Source.EnsureTopic(t, bed.OffsetSyncsTopic(), 1, map[string]string{"cleanup.policy": "compact"})
	bed.Source.ProduceRecord(t, bed.OffsetSyncsTopic(), 0, s.Key(), s.Value())
	for _, g := range []string{app, tmp} {
		bed.Source.CommitOffsets(t, g, map[messages.TopicPartition]int64{{Topic: orders}: 10})
	}

	cfg, _, err := config.FromProperties(map[string]string{
		"source.cluster.alias": bed.Source.Alias, "target.cluster.alias": bed.Target.Alias,
		"source.cluster.bootstrap.servers": bed.Source.Bootstrap, "target.cluster.bootstrap.servers": bed.Target.Bootstrap,
		"checkpoints.topic.replication.factor": "1", "checkpointd.group.id": kafkatest.UniqueName(t, "cpd"),
		"sync.group.offsets.enabled": "true", "sync.group.offsets.interval.seconds": "1",
	}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, cfg, renamePolicy("dr-", "tmp-"), slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()

	downstream := messages.TopicPartition{Topic: remote}
	kafkatest.WaitFor(t, 60*time.Second, "dr-"+app+" at offset 6 on the target", func() error {
		if got, ok := bed.Target.CommittedOffsets(t, "dr-"+app)[downstream]; !ok || got != 6 {
			return fmt.Errorf("offset %d (committed: %t)", got, ok)
		}
		return nil
	})
	for _, g := range []string{app, tmp, "dr-" + tmp} {
		if got, ok := bed.Target.CommittedOffsets(t, g)[downstream]; ok {
			t.Errorf("%s has offset %d on the target, want none", g, got)
		}
	}
	var appRecord bool
	for _, rec := range bed.Target.ReadAll(t, bed.Source.Alias+".checkpoints.internal") {
		cp, err := messages.DecodeCheckpoint(rec.Key, rec.Value)
		if err != nil {
			t.Fatalf("checkpoint record at %d: %v", rec.Offset, err)
		}
		switch cp.Group {
		case app:
			appRecord = appRecord || cp.TopicPartition == downstream && cp.UpstreamOffset == 10 && cp.DownstreamOffset == 6
		case "dr-" + app, tmp, "dr-" + tmp:
			t.Errorf("a checkpoint record for %s: %+v", cp.Group, cp)
		}
	}
	if !appRecord {
		t.Errorf("no checkpoint record for %s (10 -> 6) under its source name", app)
	}
}
