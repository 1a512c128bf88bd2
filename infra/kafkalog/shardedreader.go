package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"
)

// Rebalance names a partition assignment strategy of the consumer group.
type Rebalance string

const (
	// RebalanceSticky keeps partitions where they were as far as it can, but
	// like every eager strategy takes all partitions away from every member
	// at each rebalance, so all are replayed from the oldest offset again.
	RebalanceSticky Rebalance = "sticky"
	// RebalanceCooperativeSticky (KIP-429) takes away only the partitions
	// that move; the others keep their state. Needs Kafka 2.4 or later.
	RebalanceCooperativeSticky Rebalance = "cooperative-sticky"
	// RebalanceRange is Kafka's classic default.
	RebalanceRange Rebalance = "range"
)

// strategy returns a fresh strategy: sarama's sticky strategies keep state
// and must not be shared between consumer groups.
func (r Rebalance) strategy() (sarama.BalanceStrategy, error) {
	switch r {
	case RebalanceSticky:
		return sarama.NewBalanceStrategySticky(), nil
	case RebalanceCooperativeSticky:
		return sarama.NewBalanceStrategyCooperativeSticky(), nil
	case RebalanceRange:
		return sarama.NewBalanceStrategyRange(), nil
	default:
		return nil, fmt.Errorf("unknown rebalance strategy %q", string(r))
	}
}

// ShardedReaderConfig configures a ShardedReader.
type ShardedReaderConfig struct {
	ReaderConfig
	// GroupID is the consumer group the instances share. Required.
	GroupID string
	// Rebalance is the assignment strategy; it replaces any in the Sarama
	// config. Default RebalanceSticky.
	Rebalance Rebalance
	// RebalanceTimeout and SessionTimeout override the Sarama config's
	// Consumer.Group.Rebalance.Timeout and Session.Timeout when set.
	RebalanceTimeout, SessionTimeout time.Duration
	// HeartbeatInterval overrides Consumer.Group.Heartbeat.Interval when
	// set; with only SessionTimeout set it is at most a third of it. The
	// members still in the group learn of a rebalance with their next
	// heartbeat.
	HeartbeatInterval time.Duration
	// RevokeTimeout bounds how long a claim that ends waits for the handler
	// to ack Revoked before letting the partition go. Default the smaller of
	// 10s and half the rebalance timeout.
	RevokeTimeout time.Duration
}

// ShardedReader is a Watermill subscriber that shares a topic's partitions
// among the instances of a consumer group and never commits a position: each
// claim replays its partition from the oldest offset, whatever the group has
// committed. For each claim it sends, in order: envelope.Assigned for the
// partition; its records; envelope.CaughtUp once every record that existed
// when the claim began has been delivered (at once for an empty partition);
// then new records as they come; and, when the claim ends, envelope.Revoked.
// It waits for Revoked to be acked (up to RevokeTimeout) before letting the
// partition go, so the handler has dropped the partition's state before
// another instance starts on it.
//
// One message per partition is in flight at a time.
type ShardedReader struct {
	cfg    ShardedReaderConfig
	sarama *sarama.Config
	subs   subscriptions
	member memberSlot // the current session, for Verify; nil between sessions
	// partitions is how many partitions the topic had when the last
	// session began: 0 before the first.
	partitions atomic.Int32
}

// SessionTimeout is the group session's timeout: a member that has not
// heartbeated for that long is out of the group.
func (r *ShardedReader) SessionTimeout() time.Duration {
	return r.sarama.Consumer.Group.Session.Timeout
}

// Partitions returns how many partitions the topic read had when the
// current session began (0 before the first session). It is set before the
// first Assigned is delivered, so a handler may use it to map keys to
// partitions as the producer's partitioner does.
func (r *ShardedReader) Partitions() int32 { return r.partitions.Load() }

// NewShardedReader checks cfg and makes a reader. It does not connect: each
// Subscribe does, in the background.
func NewShardedReader(cfg ShardedReaderConfig) (*ShardedReader, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("sharded reader config: %w", err)
	}
	if cfg.GroupID == "" {
		return nil, errors.New("sharded reader config: no group id")
	}
	cfg.setDefaults()
	if cfg.Rebalance == "" {
		cfg.Rebalance = RebalanceSticky
	}
	if _, err := cfg.Rebalance.strategy(); err != nil {
		return nil, fmt.Errorf("sharded reader config: %w", err)
	}

	saramaCfg := cfg.saramaConfig()
	// Never commit: not periodically, not on close, not on rebalance. Each
	// claim replays from the oldest offset, and commits would land in
	// __consumer_offsets, which this reader may itself be reading.
	saramaCfg.Consumer.Offsets.AutoCommit.Enable = false
	if cfg.RebalanceTimeout > 0 {
		saramaCfg.Consumer.Group.Rebalance.Timeout = cfg.RebalanceTimeout
	}
	if cfg.SessionTimeout > 0 {
		saramaCfg.Consumer.Group.Session.Timeout = cfg.SessionTimeout
		saramaCfg.Consumer.Group.Heartbeat.Interval = min(saramaCfg.Consumer.Group.Heartbeat.Interval, cfg.SessionTimeout/3)
	}
	if cfg.HeartbeatInterval > 0 {
		saramaCfg.Consumer.Group.Heartbeat.Interval = cfg.HeartbeatInterval
	}
	if cfg.RevokeTimeout <= 0 {
		cfg.RevokeTimeout = min(10*time.Second, saramaCfg.Consumer.Group.Rebalance.Timeout/2)
	}
	// Validate with the strategy each subscription will use.
	check := *saramaCfg
	check.Consumer.Group.Rebalance.Strategy = nil
	check.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{must(cfg.Rebalance.strategy())}
	if err := check.Validate(); err != nil {
		return nil, fmt.Errorf("sharded reader sarama config: %w", err)
	}
	return &ShardedReader{cfg: cfg, sarama: saramaCfg}, nil
}

// Subscribe joins the group for topic. The channel is closed when ctx ends
// or the reader is closed, after the claims still held have ended with
// Revoked.
func (r *ShardedReader) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	saramaCfg := *r.sarama
	saramaCfg.Consumer.Group.Rebalance.Strategy = nil
	saramaCfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{must(r.cfg.Rebalance.strategy())}
	return r.subs.start(ctx, func(ctx context.Context, out chan<- *message.Message) {
		s := &shardedSubscription{
			cfg:    &r.cfg,
			sarama: &saramaCfg,
			topic:  topic,
			out:    out,
			log:    r.cfg.logger(topic).With("group", r.cfg.GroupID),
			member: &r.member,
			parts:  &r.partitions,
		}
		s.run(ctx)
	})
}

// Close stops every subscription, leaves the group and waits until the
// channels are closed. Claims still held end with Revoked, as on a
// rebalance, so Close can take up to RevokeTimeout if nobody acks.
func (r *ShardedReader) Close() error {
	r.subs.close()
	return nil
}

// must is for values checked already.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
