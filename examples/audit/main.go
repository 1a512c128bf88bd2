// Command audit is checkpointd with one handler of your own plugged in: it
// writes a JSON line for every checkpoint on the target's checkpoints topic
// (whether checkpointd or Java MM2 wrote it), and adds a middleware that
// counts messages on the commit router.
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
	"sync/atomic"
	"syscall"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/infra/config"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
	"github.com/checkpointd/checkpointd/pipeline"
)

func main() {
	path := flag.String("config", "", "checkpointd configuration (MM2 property names)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *path, os.Stdout, slog.Default()); err != nil {
		fmt.Fprintln(os.Stderr, "audit:", err)
		os.Exit(1)
	}
}

// auditLine is what the audit handler writes for each checkpoint.
type auditLine struct {
	Group      string `json:"group"`
	Topic      string `json:"topic"`
	Partition  int32  `json:"partition"`
	Upstream   int64  `json:"upstream_offset"`
	Downstream int64  `json:"downstream_offset"`
	LogOffset  int64  `json:"log_offset"`
	Replay     bool   `json:"replay"` // read while catching up with the topic at start
}

// auditor is the handler: it turns checkpoint records into audit lines.
type auditor struct {
	mu     sync.Mutex
	out    io.Writer
	replay bool
}

func (a *auditor) handle(msg *message.Message) error {
	if ctl, _, _, ok := envelope.ControlOf(msg); ok {
		a.mu.Lock()
		defer a.mu.Unlock()
		switch ctl {
		case envelope.Assigned:
			a.replay = true
		case envelope.CaughtUp:
			a.replay = false
		}
		return nil
	}
	rec, err := envelope.ToRecord(msg)
	if err != nil {
		return err
	}
	cp, err := messages.DecodeCheckpoint(rec.Key, rec.Value)
	if err != nil {
		return nil // not a checkpoint: an audit has nothing to say about it
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return json.NewEncoder(a.out).Encode(auditLine{cp.Group, cp.Topic, cp.Partition, cp.UpstreamOffset, cp.DownstreamOffset, rec.Offset, a.replay})
}

func run(ctx context.Context, path string, out io.Writer, logger *slog.Logger) error {
	if path == "" {
		return errors.New("--config is required")
	}
	cfg, _, err := config.Load(path, nil, os.Environ())
	if err != nil {
		return err
	}
	var seen atomic.Int64
	countMessages := func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			seen.Add(1)
			return h(msg)
		}
	}
	a := &auditor{out: out}
	p, err := pipeline.New(ctx, cfg,
		pipeline.WithLogger(logger),
		pipeline.WithCheckpointHandler("audit_checkpoints", a.handle),
		pipeline.WithCommitMiddleware(countMessages),
	)
	if err != nil {
		return err
	}
	err = p.Run(ctx)
	logger.Info("audit stopped", "commit_router_messages", seen.Load())
	return err
}
