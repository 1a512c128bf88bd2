//go:build linux

package scale

import (
	"os"
	"testing"

	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
)

// TestMain tears down the shared Kafka clusters and every JVM after the tests.
func TestMain(m *testing.M) { os.Exit(kafkatest.RunMain(m)) }
