package kafkalog

import (
	"fmt"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/messages/envelope"
)

// recordHeaders are the only metadata keys that become record headers: W3C
// trace context and the source commit time (envelope.HeaderCommitTime). MM2
// and RemoteClusterUtils read only key and value, so they are harmless, and
// everything else stays out of the record.
var recordHeaders = []string{"traceparent", "tracestate", envelope.HeaderCommitTime}

// CheckpointMarshaler writes a message as an MM2 checkpoint record: the
// payload is the value, metadata envelope.MetaKey is the key, the partition
// is 0 (the checkpoints topic has one; the producer must use
// sarama.NewManualPartitioner) and the only headers are the W3C trace
// context and the source commit time. Unlike kafka.DefaultMarshaler it adds
// no _watermill_message_uuid, so key and value are byte for byte what MM2 writes. A message whose
// metadata marks a tombstone (envelope.MetaTombstone) gets a null value.
type CheckpointMarshaler struct{}

var _ kafka.Marshaler = CheckpointMarshaler{}

// Marshal implements kafka.Marshaler.
func (CheckpointMarshaler) Marshal(topic string, msg *message.Message) (*sarama.ProducerMessage, error) {
	key, ok := msg.Metadata[envelope.MetaKey]
	if !ok || key == "" {
		return nil, fmt.Errorf("checkpoint message %s has no record key (metadata %q)", msg.UUID, envelope.MetaKey)
	}
	pm := &sarama.ProducerMessage{
		Topic:     topic,
		Partition: 0,
		Key:       sarama.ByteEncoder(key),
	}
	if msg.Metadata.Get(envelope.MetaTombstone) != "true" {
		value := msg.Payload
		if value == nil {
			value = []byte{} // an empty value is not a tombstone
		}
		pm.Value = sarama.ByteEncoder(value)
	}
	for _, h := range recordHeaders {
		if v, ok := msg.Metadata[h]; ok {
			pm.Headers = append(pm.Headers, sarama.RecordHeader{Key: []byte(h), Value: []byte(v)})
		}
	}
	return pm, nil
}
