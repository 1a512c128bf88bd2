package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/checkpointd/checkpointd/infra/config"
	"github.com/checkpointd/checkpointd/internal/service"
)

func runValidate(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf service.ConfigFlags
	cf.Register(fs)
	var handlers service.Repeated
	fs.Var(&handlers, "handler", "name of a checkpoint handler your program adds with pipeline.WithCheckpointHandler, to list its consumer group (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cf.Path == "" {
		return fmt.Errorf("--config is required")
	}
	handlerErr := checkHandlerNames(handlers)
	cfgs, report, err := config.LoadFlows(cf.Path, cf.Sets, os.Environ())
	for _, cfg := range cfgs {
		header := "# effective configuration (secrets redacted)"
		if len(cfgs) > 1 {
			header = "# flow " + cfg.String() + ": effective configuration (secrets redacted)"
		}
		fmt.Fprintln(stdout, header)
		var provided []string
		for _, kv := range cfg.Effective() {
			fmt.Fprintf(stdout, "%s=%s\n", kv.Key, kv.Value)
			if _, refs, ok := strings.Cut(kv.Origin, " via "); ok {
				provided = append(provided, fmt.Sprintf("#   %s <- %s", kv.Key, refs))
			}
		}
		if len(provided) > 0 {
			fmt.Fprintln(stdout, "# resolved from config providers:")
			fmt.Fprintln(stdout, strings.Join(provided, "\n"))
		}
		printConsumerGroups(stdout, cfg, handlers)
	}
	if report != nil {
		for _, w := range report.Warnings {
			fmt.Fprintln(stdout, "warning:", w)
		}
	}
	if err := errors.Join(err, handlerErr); err != nil {
		return err
	}
	if len(cfgs) > 1 {
		fmt.Fprintf(stdout, "configuration is valid: %d flows\n", len(cfgs))
		return nil
	}
	fmt.Fprintln(stdout, "configuration is valid")
	return nil
}
