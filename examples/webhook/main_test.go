package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/checkpointd/checkpointd/infra/config"
	"github.com/checkpointd/checkpointd/internal/testbed/embedded"
	"github.com/checkpointd/checkpointd/messages"
)

// TestWebhookPostsAlerts runs the example on embedded clusters against a
// test server: a group whose target topic is missing is a target-sync
// failure, a group committed before the oldest sync is behind. The server
// fails the first request, which the handler retries.
func TestWebhookPostsAlerts(t *testing.T) {
	var mu sync.Mutex
	got := map[string]string{} // kind -> group
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if requests++; requests == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		var a struct{ Kind, Group string }
		if err := json.NewDecoder(r.Body).Decode(&a); err != nil {
			t.Errorf("alert body: %v", err)
		}
		got[a.Kind] = a.Group
	}))
	defer srv.Close()

	pair := embedded.Start(t)
	orders := pair.Mirror(t, "orders", 5, 5)
	pair.Source.Commit(t, "late", orders, 2)
	// payments is mirrored on the source side only: its target topic is missing.
	pair.Source.CreateTopic(t, "payments", 1)
	s := messages.OffsetSync{TopicPartition: messages.TopicPartition{Topic: "payments"}, UpstreamOffset: 1, DownstreamOffset: 1}
	pair.Source.Produce(t, "mm2-offset-syncs.target.internal", 0, s.Key(), s.Value())
	pair.Source.Commit(t, "billing", s.TopicPartition, 3)

	cfg, _, err := config.FromProperties(pair.Properties(nil), nil, nil)
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
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		ok := got["target_sync_failed"] == "billing" && got["group_behind"] == "late"
		seen := len(got)
		mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("alerts %v (%d kinds), want target_sync_failed for billing and group_behind for late", got, seen)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
