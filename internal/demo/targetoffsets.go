package demo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/messages"
)

// targetPollInterval is how often the target groups' offsets are read. It
// bounds the precision of the measured commit-to-target delay.
const targetPollInterval = 100 * time.Millisecond

// targetWatcher reads the committed offsets of the demo's groups on the
// target and keeps every change with the time it was seen.
type targetWatcher struct {
	target *cluster
	policy messages.ReplicationPolicy
	groups []string
	seen   *offsetHistory // keyed by source partition
}

func (w *targetWatcher) run(ctx context.Context) error {
	tick := time.NewTicker(targetPollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-tick.C:
			for _, g := range w.groups {
				if err := w.poll(g, now); err != nil {
					return err
				}
			}
		}
	}
}

func (w *targetWatcher) poll(group string, now time.Time) error {
	resp, err := w.target.admin.ListConsumerGroupOffsets(group, nil)
	if errors.Is(err, sarama.ErrGroupIDNotFound) {
		return nil // not synced yet (real Kafka would answer -1 offsets)
	}
	if err != nil {
		return fmt.Errorf("read offsets of group %s on target cluster: %w", group, err)
	}
	blocks := resp.Blocks // OffsetFetch v0-7
	if len(resp.Groups) > 0 {
		blocks = resp.Groups[0].Blocks // v8+
	}
	for topic, parts := range blocks {
		for partition, b := range parts {
			if b.Err == sarama.ErrNoError && b.Offset >= 0 {
				w.observe(group, topic, partition, b.Offset, now)
			}
		}
	}
	return nil
}

func (w *targetWatcher) observe(group, remoteTopic string, partition int32, offset int64, now time.Time) {
	gp := groupPartition{group, messages.TopicPartition{Topic: w.policy.UpstreamTopic(remoteTopic), Partition: partition}}
	w.seen.addChanged(gp, offset, now)
}
