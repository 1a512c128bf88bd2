package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/infra/kafkalog"
	"github.com/checkpointd/checkpointd/infra/targetgroups"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

// targetWrites is every way the pipeline writes to the target cluster or
// creates something on it: topics, checkpoint records, commit-log records,
// target group commits. The pipeline reaches the target's write side only
// through it (TestTargetWritesOnlyThroughPorts checks that no other file of
// the package calls the adapters that write), so shadow mode swaps the whole
// write side at once (shadowWrites) instead of testing a flag at each write.
type targetWrites interface {
	// ensureTopic makes sure a topic checkpointd needs exists.
	ensureTopic(ctx context.Context, admin sarama.ClusterAdmin, name string, partitions int32, rf int16, configs map[string]*string) error
	// checkpointPublisher writes checkpoint records (the outbox's).
	checkpointPublisher(brokers []string, cfg *sarama.Config, logger *slog.Logger) (message.Publisher, error)
	// commitLogPublisher writes the commit log's records.
	commitLogPublisher(brokers []string, cfg *sarama.Config, logger *slog.Logger) (message.Publisher, error)
	// groups is the commit stage's port to the target groups: reads pass
	// through, commits are the write.
	groups(c *targetgroups.Client) targetgroup.Groups
}

// kafkaWrites is production: everything goes to the target.
type kafkaWrites struct{}

func (kafkaWrites) ensureTopic(ctx context.Context, admin sarama.ClusterAdmin, name string, partitions int32, rf int16, configs map[string]*string) error {
	return kafkalog.EnsureTopic(ctx, admin, name, partitions, rf, configs)
}

func (kafkaWrites) checkpointPublisher(brokers []string, cfg *sarama.Config, logger *slog.Logger) (message.Publisher, error) {
	return kafkalog.NewCheckpointPublisher(brokers, cfg, logger)
}

func (kafkaWrites) commitLogPublisher(brokers []string, cfg *sarama.Config, logger *slog.Logger) (message.Publisher, error) {
	return kafkalog.NewCheckpointPublisher(brokers, cfg, logger)
}

func (kafkaWrites) groups(c *targetgroups.Client) targetgroup.Groups {
	return targetgroups.SyncTarget{Client: c}
}

// shadowWrites is shadow mode: nothing reaches the target. No producer is
// made (an idempotent producer alone needs IDEMPOTENT_WRITE on the
// cluster); checkpoint records go to the comparison instead, and every
// record or commit withheld is counted.
type shadowWrites struct {
	// decided takes each checkpoint record the outbox would have written.
	decided func(messages.Checkpoint)
	logger  *slog.Logger

	checkpoints atomic.Int64 // checkpoint records withheld
	commitLog   atomic.Int64 // commit-log records withheld
	commits     atomic.Int64 // target group commits withheld
	topics      atomic.Int64 // topics not created
}

func (s *shadowWrites) ensureTopic(_ context.Context, admin sarama.ClusterAdmin, name string, _ int32, _ int16, _ map[string]*string) error {
	// Only look: a missing topic is waited for by its reader, as in
	// production before MM2 creates it.
	md, err := admin.DescribeTopics([]string{name})
	if err == nil && len(md) == 1 && md[0].Err == sarama.ErrNoError {
		return nil
	}
	s.topics.Add(1)
	s.logger.Warn("shadow mode: topic missing or not visible on the target, not created", "topic", name, "error", describeErr(md, err))
	return nil
}

func describeErr(md []*sarama.TopicMetadata, err error) error {
	if err != nil {
		return err
	}
	if len(md) == 1 {
		return md[0].Err
	}
	return fmt.Errorf("%d topics described", len(md))
}

func (s *shadowWrites) checkpointPublisher([]string, *sarama.Config, *slog.Logger) (message.Publisher, error) {
	return &shadowSink{count: &s.checkpoints, decided: s.decided}, nil
}

func (s *shadowWrites) commitLogPublisher([]string, *sarama.Config, *slog.Logger) (message.Publisher, error) {
	return &shadowSink{count: &s.commitLog}, nil
}

func (s *shadowWrites) groups(c *targetgroups.Client) targetgroup.Groups {
	return shadowGroups{Groups: targetgroups.SyncTarget{Client: c}, withheld: &s.commits}
}

// withheld is how many writes shadow mode kept from the target, by kind.
func (s *shadowWrites) withheld() map[string]int64 {
	return map[string]int64{"checkpoint": s.checkpoints.Load(), "commit_log": s.commitLog.Load(),
		"target_commit": s.commits.Load(), "topic": s.topics.Load()}
}

// shadowSink takes checkpoint records in place of the target: each is
// counted and, for the checkpoints topic, handed to the comparison.
type shadowSink struct {
	count   *atomic.Int64
	decided func(messages.Checkpoint) // nil: only counted
}

func (s *shadowSink) Publish(topic string, msgs ...*message.Message) error {
	for _, msg := range msgs {
		s.count.Add(1)
		if s.decided == nil {
			continue
		}
		cp, err := messages.DecodeCheckpoint([]byte(msg.Metadata.Get(envelope.MetaKey)), msg.Payload)
		if err != nil {
			return fmt.Errorf("shadow: checkpoint for %s: %w", topic, err)
		}
		s.decided(cp)
	}
	return nil
}

func (s *shadowSink) Close() error { return nil }

// shadowGroups reads the target groups as production does and commits
// nothing: each commit is counted and answered as not written.
type shadowGroups struct {
	targetgroup.Groups
	withheld *atomic.Int64
}

func (g shadowGroups) Commit(_ context.Context, group string, offsets map[messages.TopicPartition]targetgroup.Checkpoint) (map[messages.TopicPartition]targetgroup.Reason, error) {
	g.withheld.Add(1)
	return nil, fmt.Errorf("shadow mode: commit into target group %q withheld", group)
}
