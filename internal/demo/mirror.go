package demo

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/messages"
)

// maxMirrorBatch bounds how many records the mirror copies per produce call.
const maxMirrorBatch = 500

// mirror is a small stand-in for MM2's MirrorSourceConnector: it copies the
// source partitions to their remote topics on the target and writes MM2
// offset syncs, following MM2's trigger and queueing rules.
type mirror struct {
	source, target *cluster
	policy         messages.ReplicationPolicy
	syncsTopic     string
	positions      *positions
	queue          *syncQueue
	syncsWritten   atomic.Int64
}

func newMirror(source, target *cluster, policy messages.ReplicationPolicy, syncsTopic string) *mirror {
	return &mirror{
		source:     source,
		target:     target,
		policy:     policy,
		syncsTopic: syncsTopic,
		positions:  newPositions(),
		queue:      newSyncQueue(offsetLagMax),
	}
}

// run mirrors the partitions from their beginning until ctx ends.
func (m *mirror) run(ctx context.Context, tps []messages.TopicPartition) error {
	clients, err := m.connect()
	if err != nil {
		return err
	}
	defer clients.close()
	consumer, err := sarama.NewConsumerFromClient(clients.consumer)
	if err != nil {
		return fmt.Errorf("mirror consumer on source cluster: %w", err)
	}
	defer consumer.Close()
	toTarget, err := sarama.NewSyncProducerFromClient(clients.toTarget)
	if err != nil {
		return fmt.Errorf("mirror producer on target cluster: %w", err)
	}
	defer toTarget.Close()
	toSource, err := sarama.NewSyncProducerFromClient(clients.toSource)
	if err != nil {
		return fmt.Errorf("offset-sync producer on source cluster: %w", err)
	}
	defer toSource.Close()

	records := make(chan *sarama.ConsumerMessage, maxMirrorBatch)
	for _, tp := range tps {
		pc, err := consumer.ConsumePartition(tp.Topic, tp.Partition, sarama.OffsetOldest)
		if err != nil {
			return fmt.Errorf("mirror: consume %s on source cluster: %w", tp, err)
		}
		defer pc.Close()
		go forward(ctx, pc.Messages(), records)
	}

	flush := time.NewTicker(syncFlushInterval)
	defer flush.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case first := <-records:
			if err := m.copyBatch(toTarget, drain(first, records)); err != nil {
				return err
			}
		case <-flush.C:
			m.queue.promoteDelayed()
		}
		if err := m.sendSyncs(toSource); err != nil {
			return err
		}
	}
}

// mirrorClients are the mirror's connections, one per role so that no
// request waits behind another's.
type mirrorClients struct {
	consumer, toTarget, toSource sarama.Client
}

func (m *mirror) connect() (*mirrorClients, error) {
	var c mirrorClients
	var err error
	if c.consumer, err = m.source.newClient(); err != nil {
		return nil, err
	}
	if c.toTarget, err = m.target.newClient(); err != nil {
		c.close()
		return nil, err
	}
	if c.toSource, err = m.source.newClient(); err != nil {
		c.close()
		return nil, err
	}
	return &c, nil
}

func (c *mirrorClients) close() {
	for _, client := range []sarama.Client{c.consumer, c.toTarget, c.toSource} {
		if client != nil {
			client.Close()
		}
	}
}

// forward moves one partition's records into the mirror's single stream,
// which keeps every partition's order.
func forward(ctx context.Context, in <-chan *sarama.ConsumerMessage, out chan<- *sarama.ConsumerMessage) {
	for {
		select {
		case <-ctx.Done():
			return
		case msg, ok := <-in:
			if !ok {
				return
			}
			select {
			case out <- msg:
			case <-ctx.Done():
				return
			}
		}
	}
}

// drain takes first and whatever else is ready, up to maxMirrorBatch.
func drain(first *sarama.ConsumerMessage, records <-chan *sarama.ConsumerMessage) []*sarama.ConsumerMessage {
	batch := []*sarama.ConsumerMessage{first}
	for len(batch) < maxMirrorBatch {
		select {
		case msg := <-records:
			batch = append(batch, msg)
		default:
			return batch
		}
	}
	return batch
}

// copyBatch writes the records that pass the filter to the target and,
// once acknowledged, queues their offset syncs in source order.
func (m *mirror) copyBatch(toTarget sarama.SyncProducer, batch []*sarama.ConsumerMessage) error {
	out := make([]*sarama.ProducerMessage, 0, len(batch))
	for _, rec := range batch {
		if filtered(rec) {
			continue
		}
		out = append(out, &sarama.ProducerMessage{
			Topic:     m.policy.FormatRemoteTopic(m.source.alias, rec.Topic),
			Partition: rec.Partition,
			Key:       sarama.ByteEncoder(rec.Key),
			Value:     sarama.ByteEncoder(rec.Value),
			Timestamp: rec.Timestamp,
		})
	}
	if len(out) > 0 {
		if err := toTarget.SendMessages(out); err != nil {
			return fmt.Errorf("mirror to target cluster: %w", err)
		}
	}
	acked := out
	for _, rec := range batch {
		tp := messages.TopicPartition{Topic: rec.Topic, Partition: rec.Partition}
		if filtered(rec) {
			m.positions.filtered(tp, rec.Offset)
			continue
		}
		d := acked[0].Offset
		acked = acked[1:]
		m.positions.mirrored(tp, rec.Offset, d)
		m.queue.record(tp, rec.Offset, d)
	}
	return nil
}

func filtered(rec *sarama.ConsumerMessage) bool {
	for _, h := range rec.Headers {
		if bytes.Equal(h.Key, filterHeader) {
			return true
		}
	}
	return false
}

// sendSyncs writes the pending offset syncs to partition 0 of the offset-syncs
// topic, as MM2's OffsetSyncWriter does.
func (m *mirror) sendSyncs(toSource sarama.SyncProducer) error {
	pending := m.queue.takePending()
	if len(pending) == 0 {
		return nil
	}
	out := make([]*sarama.ProducerMessage, len(pending))
	for i, s := range pending {
		out[i] = &sarama.ProducerMessage{
			Topic:     m.syncsTopic,
			Partition: 0,
			Key:       sarama.ByteEncoder(s.Key()),
			Value:     sarama.ByteEncoder(s.Value()),
		}
	}
	if err := toSource.SendMessages(out); err != nil {
		return fmt.Errorf("write offset syncs to %s on source cluster: %w", m.syncsTopic, err)
	}
	m.syncsWritten.Add(int64(len(out)))
	return nil
}
