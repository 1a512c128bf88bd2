// Command checkpointd replicates Kafka consumer-group offsets between
// clusters, compatible with MirrorMaker 2's MirrorCheckpointConnector.
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

	"github.com/checkpointd/checkpointd/internal/service"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `checkpointd replicates consumer-group offsets from a source Kafka cluster to a
target cluster, in MirrorMaker 2's checkpoint format.

Usage:
  checkpointd run       --config FILE [--set key=value ...]   run the service
  checkpointd validate  --config FILE [--set key=value ...]   print the effective config and every problem
      --handler NAME (repeatable)                             also list the consumer group of your program's
                                                              checkpoint handler NAME (WithCheckpointHandler)
  checkpointd translate --config FILE --group G [...]         translated offsets from the checkpoints topic
      --group G (repeatable) | --all-groups                   which groups (default: all; --apply needs one)
      --format table|json|csv                                 csv: the reset plan of kafka-consumer-groups
                                                              --reset-offsets --from-file (topic,partition,offset
                                                              with one --group, else group,topic,partition,offset)
      --explain                                               why each partition is where it is
      --apply [--execute]                                     plan (dry run), or with --execute commit, the
                                                              translated offsets into idle target groups; never
                                                              lowers an offset; fails if a partition is not committed
  checkpointd inspect   --config FILE --topic NAME            decode MM2 internal topics and __consumer_offsets
  checkpointd run --shadow --config FILE                      shadow mode: decide, write nothing, compare with MM2
  checkpointd shadow-report --url URL | --config FILE         print a shadow instance's comparison with MM2; exits 1
      [--all] [--format table|json]                           when a pair would be lower than MM2's with no rule
  checkpointd version

Configuration uses MirrorMaker 2's property names (YAML, JSON or .properties);
see docs/configuration.md.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "checkpointd:", err)
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errUsage
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "run":
		return service.Run(ctx, version, rest, stderr)
	case "validate":
		return runValidate(ctx, rest, stdout, stderr)
	case "translate":
		return runTranslate(ctx, rest, stdout, stderr)
	case "inspect":
		return runInspect(ctx, rest, stdout, stderr)
	case "shadow-report":
		return runShadowReport(ctx, rest, stdout, stderr)
	case "demo":
		// The demo links embedded clusters the service never needs; it is
		// its own binary so this one stays free of them.
		fmt.Fprintln(stderr, "the demo is its own command now: make demo, or go run ./cmd/checkpointd-demo")
		return errUsage
	case "version", "--version":
		fmt.Fprintln(stdout, "checkpointd", version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprintf(stderr, "unknown command %q\n\n", cmd)
		return errUsage
	}
}
