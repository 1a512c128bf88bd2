package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/checkpointd/checkpointd/infra/config"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages"
)

func TestMain(m *testing.M) { os.Exit(kafkatest.RunMain(m)) }

// TestWebhookOnRealKafka runs the example on real Kafka (make test): a
// group whose remote topic the target lacks is posted as a target-sync
// failure, and a group committed before the oldest offset sync as behind.
// The commits are read from __consumer_offsets, the syncs as MM2 writes them.
func TestWebhookOnRealKafka(t *testing.T) {
	bed := kafkatest.Shared(t) // skips under -short, fails without Java unless told otherwise
	orders := kafkatest.UniqueName(t, "orders")
	payments := kafkatest.UniqueName(t, "payments")
	late := kafkatest.UniqueName(t, "late")
	billing := kafkatest.UniqueName(t, "billing")
	bed.Source.CreateTopic(t, orders, 1, nil)
	bed.Target.CreateTopic(t, bed.Source.Alias+"."+orders, 1, nil)
	bed.Source.CreateTopic(t, payments, 1, nil) // never mirrored: the target has no remote topic
	// MM2 creates its offset-syncs topic; without MM2 in this test, create it as MM2 does.
	bed.Source.EnsureTopic(t, bed.OffsetSyncsTopic(), 1, map[string]string{"cleanup.policy": "compact"})
	for _, s := range []messages.OffsetSync{
		{TopicPartition: messages.TopicPartition{Topic: orders}, UpstreamOffset: 5, DownstreamOffset: 5},
		{TopicPartition: messages.TopicPartition{Topic: payments}, UpstreamOffset: 1, DownstreamOffset: 1},
	} {
		bed.Source.ProduceRecord(t, bed.OffsetSyncsTopic(), 0, s.Key(), s.Value())
	}
	bed.Source.CommitOffsets(t, late, map[messages.TopicPartition]int64{{Topic: orders}: 2})
	bed.Source.CommitOffsets(t, billing, map[messages.TopicPartition]int64{{Topic: payments}: 3})

	var mu sync.Mutex
	got := map[string]map[string]bool{} // kind -> groups
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a struct{ Kind, Group string }
		if err := json.NewDecoder(r.Body).Decode(&a); err != nil {
			t.Errorf("alert body: %v", err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if got[a.Kind] == nil {
			got[a.Kind] = map[string]bool{}
		}
		got[a.Kind][a.Group] = true
	}))
	defer srv.Close()

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
	go func() { done <- run(ctx, cfg, srv.URL, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	kafkatest.WaitFor(t, 60*time.Second, "a target_sync_failed alert for "+billing+" and a group_behind alert for "+late, func() error {
		mu.Lock()
		defer mu.Unlock()
		if !got["target_sync_failed"][billing] || !got["group_behind"][late] {
			return fmt.Errorf("alerts so far: %v", got) // formatted under the lock
		}
		return nil
	})
}
