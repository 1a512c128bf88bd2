package main

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/checkpointd/checkpointd/infra/config"
	"github.com/checkpointd/checkpointd/internal/testbed/embedded"
	"github.com/checkpointd/checkpointd/messages"
)

// TestRenameCommitsUnderTheNewName runs the example on embedded clusters:
// app's offsets land in dr-app on the target, tmp-job's nowhere.
func TestRenameCommitsUnderTheNewName(t *testing.T) {
	pair := embedded.Start(t)
	orders := pair.Mirror(t, "orders", 5, 5)
	pair.Source.Commit(t, "app", orders, 10)
	pair.Source.Commit(t, "tmp-job", orders, 10)
	cfg, _, err := config.FromProperties(pair.Properties(nil), nil, nil)
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
	downstream := messages.TopicPartition{Topic: "source.orders"}
	deadline := time.Now().Add(30 * time.Second)
	for pair.Target.Offset(t, "dr-app", downstream) != 6 {
		if time.Now().After(deadline) {
			t.Fatal("dr-app never got offset 6")
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, g := range []string{"app", "tmp-job", "dr-tmp-job"} {
		if got := pair.Target.Offset(t, g, downstream); got != -1 {
			t.Errorf("%s has offset %d on the target, want none", g, got)
		}
	}
}
