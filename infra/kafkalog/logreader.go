package kafkalog

import (
	"context"
	"fmt"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"
)

// LogReaderConfig configures a LogReader.
type LogReaderConfig struct {
	ReaderConfig
	// PartitionRefresh is how often the reader looks for partitions added to
	// the topic; it reads them from their oldest offset. Default 30s.
	PartitionRefresh time.Duration
}

// LogReader is a Watermill subscriber that reads every partition of a topic
// from its oldest offset, with no consumer group and no commits, so that
// every instance sees the whole log. Once it has delivered every record that
// existed when it began reading (at once if there were none) it sends one
// envelope.CaughtUp control message for the topic (partition -1), then keeps
// tailing.
//
// A missing topic is waited for, never created. Partitions are read
// concurrently, each with one message in flight: the next is sent only once
// the previous is acked, and a nacked one is sent again after a pause. A
// message is one record, or with ReaderConfig.BatchRecords several.
type LogReader struct {
	cfg    LogReaderConfig
	sarama *sarama.Config
	subs   subscriptions
}

// NewLogReader checks cfg and makes a reader. It does not connect: each
// Subscribe does, in the background.
func NewLogReader(cfg LogReaderConfig) (*LogReader, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("log reader config: %w", err)
	}
	cfg.setDefaults()
	if cfg.PartitionRefresh <= 0 {
		cfg.PartitionRefresh = 30 * time.Second
	}
	saramaCfg := cfg.saramaConfig()
	if err := saramaCfg.Validate(); err != nil {
		return nil, fmt.Errorf("log reader sarama config: %w", err)
	}
	return &LogReader{cfg: cfg, sarama: saramaCfg}, nil
}

// Subscribe starts reading topic. The channel is closed when ctx ends or the
// reader is closed.
func (r *LogReader) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	return r.subs.start(ctx, func(ctx context.Context, out chan<- *message.Message) {
		s := &logSubscription{cfg: &r.cfg, sarama: r.sarama, topic: topic, out: out, log: r.cfg.logger(topic)}
		s.run(ctx)
	})
}

// Close stops every subscription and waits until their channels are closed.
func (r *LogReader) Close() error {
	r.subs.close()
	return nil
}
