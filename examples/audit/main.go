// Command audit is checkpointd with one handler of your own plugged in: it
// writes a JSON line for every checkpoint decision this instance makes
// (emitted, or skipped and why), through the typed event API: no envelope,
// no record decoding.
//
//	go run ./examples/audit --config mm2-checkpoint.yaml
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/checkpointd/checkpointd/handlers/events"
	"github.com/checkpointd/checkpointd/infra/config"
	"github.com/checkpointd/checkpointd/messages/event"
	"github.com/checkpointd/checkpointd/pipeline"
)

func main() {
	path := flag.String("config", "", "checkpointd configuration (MM2 property names)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := load(ctx, *path); err != nil {
		fmt.Fprintln(os.Stderr, "audit:", err)
		os.Exit(1)
	}
}

func load(ctx context.Context, path string) error {
	if path == "" {
		return errors.New("--config is required")
	}
	cfg, _, err := config.Load(path, nil, os.Environ())
	if err != nil {
		return err
	}
	return run(ctx, cfg, os.Stdout, slog.Default())
}

// auditor writes one JSON line per decision.
type auditor struct {
	mu  sync.Mutex
	out *json.Encoder
}

func (a *auditor) decided(_ context.Context, d event.CheckpointDecided) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.out.Encode(d)
}

func run(ctx context.Context, cfg *config.Config, out io.Writer, logger *slog.Logger) error {
	a := &auditor{out: json.NewEncoder(out)}
	p, err := pipeline.New(ctx, cfg,
		pipeline.WithLogger(logger),
		pipeline.WithEventHandler(events.AddNoPublisherHandler("audit_decisions", a.decided)),
	)
	if err != nil {
		return err
	}
	err = p.Run(ctx)
	for _, st := range p.EventStats() {
		logger.Info("audit stopped", "handler", st.Handler, "handled", st.Handled, "dropped", st.Dropped, "failed", st.Failed)
	}
	return err
}
