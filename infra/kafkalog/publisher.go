package kafkalog

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"
)

// NewCheckpointPublisher returns a Watermill publisher that writes
// checkpoint records with CheckpointMarshaler to partition 0, waiting for all
// in-sync replicas. One Publish call with many messages is one batch: the
// records share produce requests (as many as fit, one request in flight), so
// the write rate follows what the broker acknowledges instead of one round
// trip per record. watermill-kafka's own publisher sends each message with a
// synchronous SendMessage, which caps a single writer at a few thousand
// records a second; this one keeps its marshaler and its Publisher shape.
//
// saramaCfg is copied, never modified (nil means sarama's defaults with
// Version V4_1_0_0). The producer is idempotent unless the broker refuses
// (brokers before 3.0 want the IDEMPOTENT_WRITE ACL; brokers before 0.11
// cannot), in which case it logs a warning and goes on without: a duplicate
// checkpoint has the same key and value, and compaction keeps one. It never
// creates a topic by publishing to it; see EnsureTopic.
func NewCheckpointPublisher(brokers []string, saramaCfg *sarama.Config, logger *slog.Logger) (message.Publisher, error) {
	if len(brokers) == 0 {
		return nil, errors.New("checkpoint publisher: no brokers")
	}
	if logger == nil {
		logger = slog.Default()
	}
	cfg, err := producerConfig(saramaCfg)
	if err != nil {
		return nil, fmt.Errorf("checkpoint publisher: %w", err)
	}
	idempotent := *cfg
	idempotent.Producer.Idempotent = true

	pub, err := newPublisher(brokers, &idempotent)
	if err == nil {
		return pub, nil
	}
	if !errors.Is(err, sarama.ErrClusterAuthorizationFailed) && !errors.Is(err, sarama.ErrUnsupportedVersion) {
		return nil, err
	}
	logger.Warn("broker refuses an idempotent producer; writing checkpoints without idempotence", "error", err)
	return newPublisher(brokers, cfg)
}

// producerConfig copies the caller's config and sets what checkpoint
// records need.
func producerConfig(saramaCfg *sarama.Config) (*sarama.Config, error) {
	var cfg sarama.Config
	if saramaCfg != nil {
		cfg = *saramaCfg
	} else {
		cfg = *sarama.NewConfig()
		cfg.Version = defaultVersion()
	}
	if !cfg.Version.IsAtLeast(sarama.V0_11_0_0) {
		return nil, fmt.Errorf("sarama Version %s is below 0.11.0.0, which record headers need", cfg.Version)
	}
	// An auto-created checkpoints topic would have the broker's default
	// cleanup policy, not compact, and might have more than one partition.
	cfg.Metadata.AllowAutoTopicCreation = false
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	cfg.Producer.Retry.Max = max(cfg.Producer.Retry.Max, 1)
	// One request in flight, idempotent or not: a retried older checkpoint
	// must not land after a newer one for the same key.
	cfg.Net.MaxOpenRequests = 1
	return &cfg, nil
}

func newPublisher(brokers []string, cfg *sarama.Config) (*batchPublisher, error) {
	producer, err := sarama.NewSyncProducer(brokers, cfg)
	if err != nil {
		return nil, fmt.Errorf("checkpoint publisher: %w", err)
	}
	return &batchPublisher{producer: producer}, nil
}

// batchPublisher is a message.Publisher over a sarama SyncProducer that
// hands a whole Publish call to the producer at once.
type batchPublisher struct {
	producer sarama.SyncProducer
	mu       sync.Mutex
	closed   bool
}

var _ message.Publisher = (*batchPublisher)(nil)

// Publish writes msgs and returns when every one is acknowledged, or with an
// error naming how many failed and the first cause. Records of a failed call
// may still have been written; writing them again is harmless (same key and
// value on a compacted topic).
func (p *batchPublisher) Publish(topic string, msgs ...*message.Message) error {
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return errors.New("checkpoint publisher is closed")
	}
	if len(msgs) == 0 {
		return nil
	}
	records := make([]*sarama.ProducerMessage, len(msgs))
	for i, msg := range msgs {
		pm, err := CheckpointMarshaler{}.Marshal(topic, msg)
		if err != nil {
			return err
		}
		records[i] = pm
	}
	err := p.producer.SendMessages(records)
	var perrs sarama.ProducerErrors
	if errors.As(err, &perrs) && len(perrs) > 0 {
		return fmt.Errorf("write checkpoints to %s: %d of %d records failed: %w", topic, len(perrs), len(msgs), perrs[0].Err)
	}
	if err != nil {
		return fmt.Errorf("write checkpoints to %s: %w", topic, err)
	}
	return nil
}

// Close flushes what the producer holds and closes it.
func (p *batchPublisher) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	if err := p.producer.Close(); err != nil {
		return fmt.Errorf("close checkpoint producer: %w", err)
	}
	return nil
}
