// Command buildjaeger builds the Jaeger all-in-one binary the tracing tests
// run, from the Go module proxy into the cache outside the repository, and
// prints where it is. It does nothing when the binary is already cached.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/checkpointd/checkpointd/internal/testbed/jaegertest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	if !jaegertest.Cached() {
		fmt.Printf("building jaeger %s all-in-one from the Go module proxy (first time only; about 2 minutes on 2 cores)\n", jaegertest.Version)
	}
	bin, err := jaegertest.Binary(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "buildjaeger: %v\n", err)
		os.Exit(1)
	}
	took := time.Since(start)
	if took > time.Second {
		took = took.Round(time.Millisecond)
	}
	fmt.Printf("jaeger %s all-in-one: %s (%s)\n", jaegertest.Version, bin, took)
}
