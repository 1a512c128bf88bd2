// Command rename is checkpointd with a checkpoint policy: every source group
// is committed on the target under a prefixed name (app -> dr-app), and
// groups matching --skip are never checkpointed. MM2 cannot do either. The
// checkpoint records keep the source group's name, as MM2 writes them.
//
//	go run ./examples/rename --config mm2-checkpoint.yaml --prefix dr- --skip 'tmp-'
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/checkpointd/checkpointd/handlers/policy"
	"github.com/checkpointd/checkpointd/infra/config"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/pipeline"
)

func main() {
	path := flag.String("config", "", "checkpointd configuration (MM2 property names)")
	prefix := flag.String("prefix", "dr-", "prefix of the target group names")
	skip := flag.String("skip", "", "never checkpoint groups starting with this (empty: none)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := load(ctx, *path, *prefix, *skip); err != nil {
		fmt.Fprintln(os.Stderr, "rename:", err)
		os.Exit(1)
	}
}

func load(ctx context.Context, path, prefix, skip string) error {
	if path == "" {
		return errors.New("--config is required")
	}
	cfg, _, err := config.Load(path, nil, os.Environ())
	if err != nil {
		return err
	}
	return run(ctx, cfg, renamePolicy(prefix, skip), slog.Default())
}

// renamePolicy prefixes every target group and vetoes the skipped groups.
// The rename depends on the name alone and is one-to-one, as it must be.
func renamePolicy(prefix, skip string) policy.Policy {
	return policy.Policy{
		TargetGroup: func(group string) string { return prefix + group },
		Veto: func(_ context.Context, cp messages.Checkpoint) bool {
			return skip != "" && strings.HasPrefix(cp.Group, skip)
		},
	}
}

func run(ctx context.Context, cfg *config.Config, pol policy.Policy, logger *slog.Logger) error {
	p, err := pipeline.New(ctx, cfg, pipeline.WithLogger(logger), pipeline.WithCheckpointPolicy(pol))
	if err != nil {
		return err
	}
	return p.Run(ctx)
}
