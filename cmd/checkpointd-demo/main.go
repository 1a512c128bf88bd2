// Command checkpointd-demo runs checkpointd end to end on two embedded
// clusters (make demo). It is a binary of its own so that the service binary
// does not link the embedded clusters.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/checkpointd/checkpointd/internal/demo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := runDemo(ctx, os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	default:
		fmt.Fprintln(os.Stderr, "checkpointd-demo:", err)
		os.Exit(1)
	}
}

// runDemo runs checkpointd end to end on two embedded clusters, shows its
// progress and fails if the target offsets did not follow the source or
// would skip records.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	duration := fs.Duration("duration", demo.DefaultDuration, "how long the demo runs, settling included")
	quiet := fs.Bool("quiet", false, "print only the summary")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("demo: unexpected arguments %q", fs.Args())
	}

	opts := demo.Options{
		Duration: *duration,
		// Only checkpointd's warnings: the progress is the demo's output.
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if !*quiet {
		opts.Progress = stdout
		opts.Redraw = demo.IsTerminal(stdout)
	}
	summary, err := demo.Run(ctx, opts)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if err := summary.Print(stdout); err != nil {
		return fmt.Errorf("demo: print summary: %w", err)
	}
	if err := summary.Verify(); err != nil {
		return fmt.Errorf("demo failed:\n%w", err)
	}
	fmt.Fprintln(stdout, "\nOK: every target offset is at or before the exact position of its source commit; a failover skips nothing.")
	return nil
}
