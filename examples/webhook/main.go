// Command webhook is checkpointd posting JSON to an HTTP endpoint when a
// target group could not be synced (any commit result other than committed
// or already ahead) and when a group falls behind the offset syncs (its
// commit is older than the oldest sync kept, so it cannot be translated).
//
//	go run ./examples/webhook --config mm2-checkpoint.yaml --url https://hooks.example/checkpointd
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/checkpointd/checkpointd/handlers/events"
	"github.com/checkpointd/checkpointd/infra/config"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/event"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
	"github.com/checkpointd/checkpointd/pipeline"
)

func main() {
	path := flag.String("config", "", "checkpointd configuration (MM2 property names)")
	url := flag.String("url", "", "where to POST alerts")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := load(ctx, *path, *url); err != nil {
		fmt.Fprintln(os.Stderr, "webhook:", err)
		os.Exit(1)
	}
}

func load(ctx context.Context, path, url string) error {
	if path == "" || url == "" {
		return errors.New("--config and --url are required")
	}
	cfg, _, err := config.Load(path, nil, os.Environ())
	if err != nil {
		return err
	}
	return run(ctx, cfg, url, slog.Default())
}

// alert is the body of each POST.
type alert struct {
	Kind  string      `json:"kind"` // target_sync_failed or group_behind
	Group string      `json:"group"`
	Event event.Event `json:"event"`
}

// hook posts alerts; a non-2xx answer is an error, so the event is retried.
type hook struct {
	url    string
	client *http.Client
}

func (h hook) post(ctx context.Context, a alert) error {
	body, err := json.Marshal(a)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		return fmt.Errorf("post alert: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("post alert: %s", resp.Status)
	}
	return nil
}

func (h hook) targetResult(ctx context.Context, r event.TargetCommitResult) error {
	switch r.Reason {
	case targetgroup.Committed, targetgroup.Rewound, targetgroup.TargetAhead:
		return nil
	}
	return h.post(ctx, alert{Kind: "target_sync_failed", Group: r.Group, Event: r})
}

func (h hook) decided(ctx context.Context, d event.CheckpointDecided) error {
	if d.Reason != messages.SkipBehindOldestSync {
		return nil
	}
	return h.post(ctx, alert{Kind: "group_behind", Group: d.Group, Event: d})
}

func run(ctx context.Context, cfg *config.Config, url string, logger *slog.Logger) error {
	h := hook{url: url, client: &http.Client{Timeout: 10 * time.Second}}
	p, err := pipeline.New(ctx, cfg,
		pipeline.WithLogger(logger),
		pipeline.WithEventHandler(
			events.AddNoPublisherHandler("webhook_target_failures", h.targetResult),
			events.AddNoPublisherHandler("webhook_groups_behind", h.decided),
		),
	)
	if err != nil {
		return err
	}
	return p.Run(ctx)
}
