package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/messages"
)

// committer plays one consumer group on the source: it does not read
// records, it commits offsets that advance the way its consumers would.
type committer struct {
	spec    groupSpec
	source  *cluster
	scene   scenario
	commits *offsetHistory
}

// run commits every spec.commitEvery until ctx ends, d has passed, or the
// group's stop point is reached.
func (c *committer) run(ctx context.Context, d time.Duration) error {
	if c.spec.stopAt > 0 {
		d = time.Duration(float64(d) * c.spec.stopAt)
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()

	tps := c.scene.partitions(c.spec.topics...)
	read := make(map[messages.TopicPartition]float64, len(tps)) // where the consumers are
	committed := make(map[messages.TopicPartition]int64, len(tps))
	tick := time.NewTicker(c.spec.commitEvery)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-tick.C:
			ends, err := c.endOffsets(tps)
			if err != nil {
				return err
			}
			dt := now.Sub(last).Seconds()
			last = now
			offsets := make(map[string]map[int32]sarama.OffsetAndMetadata)
			for _, tp := range tps {
				t, _ := c.scene.topic(tp.Topic)
				if c.spec.pace >= 1 {
					read[tp] = float64(ends[tp])
				} else {
					read[tp] = min(read[tp]+c.spec.pace*t.rateOf(tp.Partition)*dt, float64(ends[tp]))
				}
				next := int64(read[tp])
				if next <= committed[tp] {
					continue
				}
				if offsets[tp.Topic] == nil {
					offsets[tp.Topic] = make(map[int32]sarama.OffsetAndMetadata)
				}
				offsets[tp.Topic][tp.Partition] = sarama.OffsetAndMetadata{Offset: next, LeaderEpoch: -1}
			}
			if err := c.commit(offsets); err != nil {
				return err
			}
			for topic, parts := range offsets {
				for p, o := range parts {
					tp := messages.TopicPartition{Topic: topic, Partition: p}
					committed[tp] = o.Offset
					c.commits.add(groupPartition{c.spec.name, tp}, o.Offset, now)
				}
			}
		}
	}
}

func (c *committer) endOffsets(tps []messages.TopicPartition) (map[messages.TopicPartition]int64, error) {
	ends := make(map[messages.TopicPartition]int64, len(tps))
	for _, tp := range tps {
		end, err := c.source.client.GetOffset(tp.Topic, tp.Partition, sarama.OffsetNewest)
		if err != nil {
			return nil, fmt.Errorf("group %s: end offset of %s on source cluster: %w", c.spec.name, tp, err)
		}
		ends[tp] = end
	}
	return ends, nil
}

// commit is a simple offset commit (generation -1, no member), like a
// consumer's commitSync seen from the broker's offset store.
func (c *committer) commit(offsets map[string]map[int32]sarama.OffsetAndMetadata) error {
	if len(offsets) == 0 {
		return nil
	}
	resp, err := c.source.admin.AlterConsumerGroupOffsets(c.spec.name, offsets, nil)
	if err != nil {
		return fmt.Errorf("group %s: commit on source cluster: %w", c.spec.name, err)
	}
	for topic, parts := range resp.Errors {
		for p, kerr := range parts {
			if kerr != sarama.ErrNoError {
				return fmt.Errorf("group %s: commit %s-%d on source cluster: %w", c.spec.name, topic, p, kerr)
			}
		}
	}
	return nil
}
