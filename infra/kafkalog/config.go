package kafkalog

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/IBM/sarama"
)

// defaultVersion is the protocol version used when the caller gives no
// sarama config. sarama clamps every request to what the broker advertises,
// so a recent version is safe against older brokers.
func defaultVersion() sarama.KafkaVersion { return sarama.V4_1_0_0 }

// Observer hears a reader's progress. Its calls run on the partition's
// delivery goroutine, so they must be quick. Embed NopObserver to implement
// only some.
type Observer interface {
	// RecordRead: a record has been acked (or dropped by the filter);
	// highWatermark is the partition's as the consumer last saw it, so the
	// partition's lag is highWatermark-offset-1. For a message of several
	// records (ReaderConfig.BatchRecords) it is called once, with the offset
	// of the last record the message covered.
	RecordRead(topic string, partition int32, offset, highWatermark int64)
	// ReadFailed: the reader failed to reach the cluster, the topic, a
	// partition or its consumer group (it retries with backoff).
	ReadFailed(topic string, err error)
	// ReadReady: the reader has (again) connected, or joined its consumer
	// group: what ReadFailed reported is over.
	ReadReady(topic string)
}

// NopObserver ignores everything.
type NopObserver struct{}

func (NopObserver) RecordRead(string, int32, int64, int64) {}
func (NopObserver) ReadFailed(string, error)               {}
func (NopObserver) ReadReady(string)                       {}

// ReaderConfig is what both readers share.
type ReaderConfig struct {
	// Brokers to bootstrap from. Required.
	Brokers []string
	// Sarama is the caller's client config. It is copied, never modified; the
	// reader turns off topic auto-creation and sets what it needs to read
	// from the oldest offset. Version must be at least V0_11 (headers,
	// transactions). Nil means sarama's defaults with Version V4_1_0_0.
	Sarama *sarama.Config
	// Cluster names the cluster in logs, e.g. "source".
	Cluster string
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// ReadCommitted forces the read_committed isolation level (needed for
	// __consumer_offsets, where aborted transactional commits must not
	// count). False keeps the Sarama config's level.
	ReadCommitted bool
	// Filter, if set, drops the records it returns false for. They still
	// count as read: they move the position towards CaughtUp.
	Filter func(*sarama.ConsumerMessage) bool
	// Observer hears the reader's progress; nil: NopObserver.
	Observer Observer
	// NackResendDelay is the pause before a nacked message is sent again.
	// Default 100ms.
	NackResendDelay time.Duration
	// RetryBackoff is the first pause after a failure to reach the cluster,
	// the topic or a partition; it doubles up to MaxRetryBackoff. Defaults
	// 250ms and 10s.
	RetryBackoff, MaxRetryBackoff time.Duration
	// BatchRecords > 1 lets the reader put up to that many consecutive
	// records of a partition, of those the consumer has already fetched, in
	// one message (envelope.FromRecords; handlers read them with
	// envelope.Records), so one handler call and one ack cover them all. It
	// never waits for records to fill a message. A record Solo picks still
	// goes alone, and a message never spans the end offset CaughtUp waits
	// for. 0 or 1: one record per message.
	BatchRecords int
	// Solo tells, for a record with headers, whether it must have a message
	// of its own when BatchRecords batches. Other records carry their
	// headers inside the batch. Nil: a record whose W3C traceparent header
	// says sampled goes alone, so that its `process` span can be the child
	// of the span that wrote it.
	Solo func(headers []*sarama.RecordHeader) bool
	// BatchBehind > 0 limits BatchRecords, once a partition has caught up,
	// to the times it is more than that many records behind its high
	// watermark: a reader that keeps up delivers one record per message
	// (one trace span per record), and one that fell behind catches up in
	// batches. During the replay before CaughtUp it always batches. 0:
	// BatchRecords applies throughout.
	BatchBehind int64
	// ProbeInterval is how long a partition that has not caught up may stay
	// idle before the reader asks the broker whether anything deliverable is
	// left below the end offset. A partition that ends in transaction markers
	// or aborted records has no record at end-1 to deliver. Default 1s.
	ProbeInterval time.Duration
}

func (c *ReaderConfig) setDefaults() {
	if c.Observer == nil {
		c.Observer = NopObserver{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.NackResendDelay <= 0 {
		c.NackResendDelay = 100 * time.Millisecond
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = 250 * time.Millisecond
	}
	if c.MaxRetryBackoff <= 0 {
		c.MaxRetryBackoff = 10 * time.Second
	}
	c.MaxRetryBackoff = max(c.MaxRetryBackoff, c.RetryBackoff)
	if c.ProbeInterval <= 0 {
		c.ProbeInterval = time.Second
	}
}

func (c *ReaderConfig) validate() error {
	if len(c.Brokers) == 0 {
		return errors.New("no brokers")
	}
	if c.Sarama != nil && !c.Sarama.Version.IsAtLeast(sarama.V0_11_0_0) {
		return fmt.Errorf("sarama Version %s is below 0.11.0.0, which headers and transactions need", c.Sarama.Version)
	}
	return nil
}

// saramaConfig copies the caller's config and sets what every reader relies
// on. The copy is shallow; fields the readers change are values, and slices
// they change are replaced, not modified.
func (c *ReaderConfig) saramaConfig() *sarama.Config {
	var cfg sarama.Config
	if c.Sarama != nil {
		cfg = *c.Sarama
	} else {
		cfg = *sarama.NewConfig()
		cfg.Version = defaultVersion()
	}
	// A reader waits for a missing topic; it must never create one by asking.
	cfg.Metadata.AllowAutoTopicCreation = false
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	if c.ReadCommitted {
		cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	}
	return &cfg
}

// logger returns the config's logger with the cluster and topic attached.
func (c *ReaderConfig) logger(topic string) *slog.Logger {
	return c.Logger.With("cluster", c.Cluster, "topic", topic)
}
