package demo

import (
	"context"
	"fmt"
	"sync"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/messages"
)

// checkpointLog reads the checkpoints checkpointd writes on the target, the
// way any MM2 client would, and counts them per group and source partition.
// It is safe for concurrent use.
type checkpointLog struct {
	policy messages.ReplicationPolicy

	mu        sync.Mutex
	count     map[groupPartition]int
	malformed int
	// upstream maps a translated target offset to the first source offset
	// whose checkpoint carried it, to time the hop to the target group.
	upstream map[groupPartition]map[int64]int64
}

func newCheckpointLog(policy messages.ReplicationPolicy) *checkpointLog {
	return &checkpointLog{
		policy:   policy,
		count:    make(map[groupPartition]int),
		upstream: make(map[groupPartition]map[int64]int64),
	}
}

// run tails partition 0 of topic on the target from its beginning until ctx ends.
func (l *checkpointLog) run(ctx context.Context, target *cluster, topic string) error {
	client, err := target.newClient()
	if err != nil {
		return err
	}
	defer client.Close()
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		return fmt.Errorf("checkpoints consumer on target cluster: %w", err)
	}
	defer consumer.Close()
	pc, err := consumer.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		return fmt.Errorf("consume %s on target cluster: %w", topic, err)
	}
	defer pc.Close()
	for {
		select {
		case <-ctx.Done():
			return nil
		case rec := <-pc.Messages():
			l.add(rec.Key, rec.Value)
		}
	}
}

func (l *checkpointLog) add(key, value []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cp, err := messages.DecodeCheckpoint(key, value)
	if err != nil {
		l.malformed++
		return
	}
	gp := groupPartition{cp.Group, messages.TopicPartition{
		Topic:     l.policy.UpstreamTopic(cp.Topic),
		Partition: cp.Partition,
	}}
	l.count[gp]++
	if l.upstream[gp] == nil {
		l.upstream[gp] = make(map[int64]int64)
	}
	if _, seen := l.upstream[gp][cp.DownstreamOffset]; !seen {
		l.upstream[gp][cp.DownstreamOffset] = cp.UpstreamOffset
	}
}

// emitted is how many checkpoints were read for gp.
func (l *checkpointLog) emitted(gp groupPartition) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count[gp]
}

// totals is how many checkpoints were read in all, and how many did not decode.
func (l *checkpointLog) totals() (read, malformed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range l.count {
		read += n
	}
	return read, l.malformed
}

// upstreamOf is the source offset of the first checkpoint that translated to
// target offset downstream for gp.
func (l *checkpointLog) upstreamOf(gp groupPartition, downstream int64) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	u, ok := l.upstream[gp][downstream]
	return u, ok
}
