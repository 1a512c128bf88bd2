package demo

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/checkpointd/checkpointd/infra/config"
	"github.com/checkpointd/checkpointd/pipeline"
)

// checkpointdProperties is checkpointd's configuration for the demo, in MM2's
// property names as a user would write them.
func checkpointdProperties(source, target *cluster) map[string]string {
	return map[string]string{
		"source.cluster.alias":                 source.alias,
		"target.cluster.alias":                 target.alias,
		"source.cluster.bootstrap.servers":     strings.Join(source.brokers, ","),
		"target.cluster.bootstrap.servers":     strings.Join(target.brokers, ","),
		"emit.checkpoints.interval.seconds":    "1",
		"sync.group.offsets.enabled":           "true",
		"sync.group.offsets.interval.seconds":  "1",
		"checkpoints.topic.replication.factor": "1",
		// kfake keeps group offsets in memory and has no __consumer_offsets.
		"checkpointd.commit.source":          "admin-poll",
		"checkpointd.admin.poll.interval.ms": "200",
	}
}

// startCheckpointd builds checkpointd's pipeline from props; it creates the
// checkpoints topic on the target.
func startCheckpointd(ctx context.Context, props map[string]string, log *slog.Logger) (*pipeline.Pipeline, error) {
	cfg, report, err := config.FromProperties(props, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("checkpointd configuration: %w", err)
	}
	for _, w := range report.Warnings {
		log.Warn("checkpointd configuration", "warning", w)
	}
	p, err := pipeline.New(ctx, cfg, pipeline.WithLogger(log))
	if err != nil {
		return nil, fmt.Errorf("start checkpointd: %w", err)
	}
	return p, nil
}
