// Package adminpoll is the commit source for source clusters that hide
// __consumer_offsets (Confluent Cloud and other managed services): it lists
// the consumer groups and fetches their committed offsets on an interval,
// and delivers only what changed, as Watermill messages that look exactly
// like __consumer_offsets commit records, so one handler consumes both
// sources.
package adminpoll

import (
	"errors"
	"log/slog"
	"time"

	"github.com/IBM/sarama"
)

// Topic is the synthetic topic the poller's records and control messages
// carry; subscribe to it.
const Topic = "checkpointd.admin-poll"

// GroupFilter selects the source groups to poll.
type GroupFilter interface {
	Match(group string) bool
}

// Config configures a Subscriber.
type Config struct {
	// Client is a client of the source cluster. The Subscriber borrows it
	// and never closes it.
	Client sarama.Client
	// Groups selects groups by id; nil polls every consumer group.
	Groups GroupFilter
	// Interval is the time from the start of one poll to the start of the
	// next; a poll that takes longer is followed at once. Default 1 s.
	Interval time.Duration
	// BatchSize is how many groups one OffsetFetch asks about. Default 100.
	BatchSize int
	// NackResendDelay is the pause before a nacked message is sent again.
	// Default 100 ms.
	NackResendDelay time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// OnPoll, if set, hears each poll's outcome: nil when it read offsets
	// (or there was nothing to read), else why nothing could be read.
	OnPoll func(err error)
	// Shards, if set, shares the groups among instances: only the owned
	// shards' groups are fetched and delivered, each in its shard's
	// partition. Nil: every group, in partition 0.
	Shards *Shards
}

const (
	defaultInterval        = time.Second
	defaultBatchSize       = 100
	defaultNackResendDelay = 100 * time.Millisecond
)

func (c *Config) setDefaults() {
	if c.Interval == 0 {
		c.Interval = defaultInterval
	}
	if c.BatchSize == 0 {
		c.BatchSize = defaultBatchSize
	}
	if c.NackResendDelay == 0 {
		c.NackResendDelay = defaultNackResendDelay
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate reports a config the Subscriber cannot run with.
func (c Config) Validate() error {
	var errs []error
	if c.Client == nil {
		errs = append(errs, errors.New("admin poll: a source cluster client is required"))
	}
	if c.Interval < 0 {
		errs = append(errs, errors.New("admin poll: interval must not be negative"))
	}
	if c.BatchSize < 0 {
		errs = append(errs, errors.New("admin poll: batch size must not be negative"))
	}
	if c.NackResendDelay < 0 {
		errs = append(errs, errors.New("admin poll: nack resend delay must not be negative"))
	}
	return errors.Join(errs...)
}
