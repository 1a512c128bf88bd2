// Command fetchjars fetches the Kafka and MirrorMaker 2 jars the integration
// tests run, and Apache Kerby's KDC for the Kerberos tests, into the cache outside
// the repository, and prints where they are.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	lib, err := kafkatest.Jars(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "fetchjars: %v\n", err)
		os.Exit(1)
	}
	took := time.Since(start)
	if took > time.Second {
		took = took.Round(time.Millisecond)
	}
	fmt.Printf("kafka %s jars: %s (%s)\n", kafkatest.KafkaVersion, lib, took)
	kerby, err := kafkatest.KerbyJars(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "fetchjars: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("kerby %s jars (the Kerberos tests' KDC): %s\n", kafkatest.KerbyVersion, kerby)
}
