package kafkalog

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/messages/targetgroup"
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
// checkpoint has the same key and value, and compaction keeps one. While it
// goes without, it asks again for an idempotent producer with the first batch
// after each retry interval (WithIdempotenceRetry, default 1 minute) and
// switches back once the broker allows it. It never creates a topic by
// publishing to it; see EnsureTopic.
func NewCheckpointPublisher(brokers []string, saramaCfg *sarama.Config, logger *slog.Logger, opts ...PublisherOption) (message.Publisher, error) {
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
	p := &batchPublisher{brokers: brokers, plain: cfg, idem: &idempotent, logger: logger,
		retryEvery: DefaultIdempotenceRetry, now: time.Now}
	for _, o := range opts {
		o(p)
	}

	producer, err := newProducer(brokers, &idempotent)
	if err == nil {
		p.producer, p.idempotent = producer, true
		return p, nil
	}
	if !refusesIdempotence(err) {
		return nil, err
	}
	logger.Warn("broker refuses an idempotent producer; writing checkpoints without idempotence until it allows one",
		"error", err, "retry_every", p.retryEvery)
	if p.producer, err = newProducer(brokers, cfg); err != nil {
		return nil, err
	}
	p.retryAt = p.now().Add(p.retryEvery)
	return p, nil
}

// DefaultIdempotenceRetry is how long a publisher that fell back to a
// producer without idempotence waits before asking for one again.
const DefaultIdempotenceRetry = time.Minute

// PublisherOption configures NewCheckpointPublisher.
type PublisherOption func(*batchPublisher)

// WithIdempotenceRetry sets how long a publisher without idempotence waits
// before it asks the broker for an idempotent producer again.
func WithIdempotenceRetry(d time.Duration) PublisherOption {
	return func(p *batchPublisher) {
		if d > 0 {
			p.retryEvery = d
		}
	}
}

// refusesIdempotence reports whether making an idempotent producer failed
// because the broker will not give one (an ACL, an old broker), rather than
// because it could not be reached.
func refusesIdempotence(err error) bool {
	return errors.Is(err, sarama.ErrClusterAuthorizationFailed) || errors.Is(err, sarama.ErrUnsupportedVersion)
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

func newProducer(brokers []string, cfg *sarama.Config) (sarama.SyncProducer, error) {
	producer, err := sarama.NewSyncProducer(brokers, cfg)
	if err != nil {
		return nil, fmt.Errorf("checkpoint publisher: %w", err)
	}
	return producer, nil
}

// batchPublisher is a message.Publisher over a sarama SyncProducer that
// hands a whole Publish call to the producer at once.
type batchPublisher struct {
	brokers     []string
	plain, idem *sarama.Config
	logger      *slog.Logger
	retryEvery  time.Duration
	now         func() time.Time

	mu         sync.Mutex
	producer   sarama.SyncProducer
	idempotent bool
	retryAt    time.Time // next attempt at an idempotent producer, while without
	closed     bool
}

var _ message.Publisher = (*batchPublisher)(nil)

// Idempotent reports whether the publisher writes with an idempotent producer.
func (p *batchPublisher) Idempotent() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.idempotent
}

// Publish writes msgs and returns when every one is acknowledged, or with an
// error naming how many failed and the first cause. When the producer tells
// which records failed, the error is a *PartialWriteError listing them: the
// others were acknowledged, and only those need writing again. Records
// reported failed may still have been written; writing them again is
// harmless (same key and value on a compacted topic).
func (p *batchPublisher) Publish(topic string, msgs ...*message.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	producer, err := p.current()
	if err != nil {
		return err
	}
	records := make([]*sarama.ProducerMessage, len(msgs))
	for i, msg := range msgs {
		pm, err := CheckpointMarshaler{}.Marshal(topic, msg)
		if err != nil {
			return err
		}
		records[i] = pm
	}
	// The writer's last word, right before the records leave: a process
	// paused since it decided to write learns here that it may not.
	if err := targetgroup.CheckBeforeSend(msgs[0].Context()); err != nil {
		return fmt.Errorf("write checkpoints to %s: %w", topic, err)
	}
	err = producer.SendMessages(records)
	var perrs sarama.ProducerErrors
	if errors.As(err, &perrs) && len(perrs) > 0 {
		return &PartialWriteError{
			err:       fmt.Errorf("write checkpoints to %s: %d of %d records failed: %w", topic, len(perrs), len(msgs), perrs[0].Err),
			unwritten: unwritten(msgs, records, perrs),
		}
	}
	if err != nil {
		return fmt.Errorf("write checkpoints to %s: %w", topic, err)
	}
	return nil
}

// current returns the producer for the next batch. Without idempotence, once
// the retry interval has passed, it first asks for an idempotent producer
// and, if the broker gives one, switches to it: the batch before has been
// acknowledged (or failed) by then, so no record of the old producer is in
// flight, and with one request in flight per producer the order per key
// holds across the switch.
func (p *batchPublisher) current() (sarama.SyncProducer, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errors.New("checkpoint publisher is closed")
	}
	producer := p.producer
	retry := !p.idempotent && !p.now().Before(p.retryAt)
	if retry {
		p.retryAt = p.now().Add(p.retryEvery)
	}
	p.mu.Unlock()
	if !retry {
		return producer, nil
	}
	idem, err := newProducer(p.brokers, p.idem)
	if err != nil {
		p.logger.Debug("broker still refuses an idempotent producer", "error", err, "retry_in", p.retryEvery)
		return producer, nil
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		_ = idem.Close()
		return nil, errors.New("checkpoint publisher is closed")
	}
	old := p.producer
	p.producer, p.idempotent = idem, true
	p.mu.Unlock()
	if err := old.Close(); err != nil {
		p.logger.Debug("closing the producer without idempotence", "error", err)
	}
	p.logger.Info("broker allows an idempotent producer again; writing checkpoints with idempotence")
	return idem, nil
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

// PartialWriteError is a Publish call of which some records were not
// acknowledged (Unwritten); the broker acknowledged all the others.
type PartialWriteError struct {
	err       error
	unwritten []*message.Message
}

func (e *PartialWriteError) Error() string { return e.err.Error() }
func (e *PartialWriteError) Unwrap() error { return e.err }

// Unwritten are the messages given to Publish whose records failed.
func (e *PartialWriteError) Unwritten() []*message.Message { return e.unwritten }

// unwritten maps the producer's failed records back to the messages they
// were made from.
func unwritten(msgs []*message.Message, records []*sarama.ProducerMessage, perrs sarama.ProducerErrors) []*message.Message {
	of := make(map[*sarama.ProducerMessage]*message.Message, len(records))
	for i, r := range records {
		of[r] = msgs[i]
	}
	out := make([]*message.Message, 0, len(perrs))
	seen := make(map[*message.Message]bool, len(perrs))
	for _, pe := range perrs {
		m, ok := of[pe.Msg]
		if !ok {
			return msgs // a record not ours: all of them, to be safe
		}
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out
}
