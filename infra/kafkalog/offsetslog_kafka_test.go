package kafkalog_test

import (
	"context"
	"testing"

	"github.com/checkpointd/checkpointd/infra/kafkalog"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
)

// On a real broker a principal with no ACLs in the way can read
// __consumer_offsets.
func TestOffsetsLogReadableOnKafka(t *testing.T) {
	c := kafkatest.Shared(t).Source
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	readable, why, err := kafkalog.OffsetsLogReadable(ctx, []string{c.Bootstrap}, c.SaramaConfig(), "offsets-log-probe")
	if err != nil || !readable {
		t.Fatalf("OffsetsLogReadable = %v, %q, %v; want readable", readable, why, err)
	}
}
