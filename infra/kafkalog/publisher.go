package kafkalog

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"
)

// NewCheckpointPublisher returns a watermill-kafka publisher that writes
// checkpoint records with CheckpointMarshaler to partition 0, waiting for all
// in-sync replicas. saramaCfg is copied, never modified (nil means sarama's
// defaults with Version V4_1_0_0). The producer is idempotent unless the broker
// refuses (brokers before 3.0 want the IDEMPOTENT_WRITE ACL; brokers before 0.11 cannot), in which
// case it logs a warning and goes on without: a duplicate checkpoint has the
// same key and value, and compaction keeps one. It never creates a topic by
// publishing to it; see EnsureTopic.
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

	wlog := watermill.NewSlogLogger(logger)
	pub, err := newPublisher(brokers, &idempotent, wlog)
	if err == nil {
		return pub, nil
	}
	if !errors.Is(err, sarama.ErrClusterAuthorizationFailed) && !errors.Is(err, sarama.ErrUnsupportedVersion) {
		return nil, err
	}
	logger.Warn("broker refuses an idempotent producer; writing checkpoints without idempotence", "error", err)
	return newPublisher(brokers, cfg, wlog)
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

func newPublisher(brokers []string, cfg *sarama.Config, logger watermill.LoggerAdapter) (message.Publisher, error) {
	pub, err := kafka.NewPublisher(kafka.PublisherConfig{
		Brokers:               brokers,
		Marshaler:             CheckpointMarshaler{},
		OverwriteSaramaConfig: cfg,
	}, logger)
	if err != nil {
		return nil, fmt.Errorf("checkpoint publisher: %w", err)
	}
	return pub, nil
}
