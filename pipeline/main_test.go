package pipeline_test

import (
	"os"
	"testing"

	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
)

// TestMain tears down the real Kafka clusters the integration tests start.
func TestMain(m *testing.M) { os.Exit(kafkatest.RunMain(m)) }
