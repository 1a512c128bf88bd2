package demo

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/messages"
)

// filterHeader marks a record the mirror drops, the way an SMT filter would.
var filterHeader = []byte("demo-filter")

// producer writes records to the source topics at a steady rate.
type producer struct {
	topics  []topicSpec
	written atomic.Int64
}

// run writes until ctx ends or the duration has passed.
func (p *producer) run(ctx context.Context, source *cluster, d time.Duration) error {
	client, err := source.newClient()
	if err != nil {
		return err
	}
	defer client.Close()
	sp, err := sarama.NewSyncProducerFromClient(client)
	if err != nil {
		return fmt.Errorf("producer on source cluster: %w", err)
	}
	defer sp.Close()

	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	start := time.Now()
	written := make(map[messages.TopicPartition]int64)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		elapsed := time.Since(start).Seconds()
		var batch []*sarama.ProducerMessage
		for _, t := range p.topics {
			for part := range t.partitions {
				tp := messages.TopicPartition{Topic: t.name, Partition: part}
				for due := int64(t.rateOf(part) * elapsed); written[tp] < due; written[tp]++ {
					batch = append(batch, record(t, part, written[tp]))
				}
			}
		}
		if len(batch) == 0 {
			continue
		}
		if err := sp.SendMessages(batch); err != nil {
			return fmt.Errorf("produce to source cluster: %w", err)
		}
		p.written.Add(int64(len(batch)))
	}
}

// record is the n-th record of a source partition.
func record(t topicSpec, partition int32, n int64) *sarama.ProducerMessage {
	key := t.name + "-" + strconv.FormatInt(n, 10)
	msg := &sarama.ProducerMessage{
		Topic:     t.name,
		Partition: partition,
		Key:       sarama.StringEncoder(key),
		Value:     sarama.StringEncoder(`{"id":"` + key + `","amount":` + strconv.FormatInt(n%97+1, 10) + `}`),
	}
	if t.filterEvery > 0 && n%int64(t.filterEvery) == int64(t.filterEvery)-1 {
		msg.Headers = []sarama.RecordHeader{{Key: filterHeader, Value: []byte("drop")}}
	}
	return msg
}
