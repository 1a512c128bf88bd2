// Command noophandler is `checkpointd run` plus two typed event handlers
// that do nothing: one for checkpoint decisions, one for target commit
// results. The system benchmark runs it in checkpointd's place with
// CHECKPOINTD_SCALE_NOOP_HANDLER=1, so that a row measured with and without
// it shows what a typed handler costs the pipeline (building the events,
// queueing them, one goroutine per handler).
//
//	noophandler run --config FILE [the other flags of checkpointd run]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/checkpointd/checkpointd/handlers/events"
	"github.com/checkpointd/checkpointd/internal/service"
	"github.com/checkpointd/checkpointd/messages/event"
	"github.com/checkpointd/checkpointd/pipeline"
)

// version tells its log lines and traces from checkpointd's.
const version = "dev+noophandler"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "noophandler:", err)
		os.Exit(1)
	}
}

// run takes checkpointd's command line, so the harness starts either binary
// the same way; only "run" is there.
func run(ctx context.Context, args []string, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "run" {
		return errors.New("usage: noophandler run --config FILE [flags of checkpointd run]")
	}
	return service.Run(ctx, version, args[1:], stderr, pipeline.WithEventHandler(noopHandlers()...))
}

// noopHandlers return at once: what is measured is the pipeline's side.
func noopHandlers() []*events.Handler {
	return []*events.Handler{
		events.AddNoPublisherHandler("noop_checkpoint_decided", func(context.Context, event.CheckpointDecided) error { return nil }),
		events.AddNoPublisherHandler("noop_target_commit_result", func(context.Context, event.TargetCommitResult) error { return nil }),
	}
}
