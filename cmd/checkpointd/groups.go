package main

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/infra/config"
	"github.com/checkpointd/checkpointd/pipeline"
)

// printConsumerGroups lists, as comments after a flow's configuration, the
// consumer groups the flow joins: checkpointd's own and one per checkpoint
// handler named with --handler. They are what ACLs must grant (Read on the
// group), and nothing else in the output names them.
func printConsumerGroups(w io.Writer, cfg *config.Config, handlers []string) {
	opts := make([]pipeline.Option, 0, len(handlers))
	for _, name := range handlers {
		// Only the name matters here: ConsumerGroups never calls the handler.
		opts = append(opts, pipeline.WithCheckpointHandler(name, func(*message.Message) error { return nil }))
	}
	fmt.Fprintln(w, "# consumer groups (grant Read on each):")
	for _, g := range pipeline.ConsumerGroups(cfg, opts...) {
		fmt.Fprintf(w, "#   %s on %s: %s\n", g.Name, g.Cluster, g.Purpose)
	}
	fmt.Fprintln(w, "#   typed event handlers and checkpoint policies join none")
}

// checkHandlerNames refuses the --handler names pipeline.New would refuse,
// so that validate fails where the user's program would.
func checkHandlerNames(names []string) error {
	var errs []error
	seen := make(map[string]bool)
	for _, name := range names {
		switch {
		case name == "":
			errs = append(errs, errors.New("--handler: empty name"))
		case slices.Contains(pipeline.BuiltinHandlers(), name):
			errs = append(errs, fmt.Errorf("--handler %q: the name is a built-in handler's", name))
		case seen[name]:
			errs = append(errs, fmt.Errorf("--handler %q: given twice", name))
		}
		seen[name] = true
	}
	return errors.Join(errs...)
}
