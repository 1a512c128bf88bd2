package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/infra/health"
	"github.com/checkpointd/checkpointd/infra/kafkaerr"
	"github.com/checkpointd/checkpointd/infra/metrics"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

// Stage names in /readyz and the logs.
const (
	StageOffsetSyncsReader  = "offset-syncs reader"
	StageCheckpointsReader  = "checkpoints reader"
	StageSourceCommitReader = "source commit reader"
	StageCheckpointWriter   = "checkpoint publisher"
	StageCommitReader       = "commit reader" // the checkpoints tail of the commit stage
	StageShardRestore       = "shard restore" // reading the checkpoints back for newly owned shards
	StageShardOwner         = "shard owner"   // admin-poll mode: the group sharing the shard topic
	StageTargetCommits      = "target commits"
	StageCommitLogReader    = "commit log reader"
	StageCommitLogWriter    = "commit log writer"
)

// readerRetryGap is the longest pause of the readers' and the outbox's
// retries (kafkalog.ReaderConfig.MaxRetryBackoff, the outbox's 10 s).
const readerRetryGap = 10 * time.Second

// clusterName names a cluster by its role and alias, e.g. `target "us"`.
func clusterName(role, alias string) string { return fmt.Sprintf("%s %q", role, alias) }

// stageObserver feeds a reader's records and failures to its stage and, if
// any, the metrics. group is the reader's consumer group ("" for none): an
// authorization failure names READ on the topic read, or on the group.
type stageObserver struct {
	stage   *health.Stage
	group   string
	metrics *metrics.Metrics // nil: none
}

func (p *Pipeline) stageObserver(stage *health.Stage, group string) stageObserver {
	return stageObserver{stage: stage, group: group, metrics: p.opts.metrics}
}

func (o stageObserver) RecordRead(topic string, partition int32, offset, hwm int64) {
	if o.metrics != nil {
		o.metrics.ReaderRecord(topic, partition, offset, hwm)
	}
	o.stage.Success()
}

func (o stageObserver) ReadFailed(topic string, err error) {
	o.stage.Failure(readNeeds(err, topic, o.group))
}

func (o stageObserver) ReadReady(string) { o.stage.Success() }

// healthPublisher reports each Publish call to the checkpoint publisher's
// stage.
type healthPublisher struct {
	message.Publisher
	stage *health.Stage
}

func (h healthPublisher) Publish(topic string, msgs ...*message.Message) error {
	err := h.Publisher.Publish(topic, msgs...)
	if err != nil {
		err = kafkaerr.Needs(err, kafkaerr.Permission{Operation: "WRITE", ResourceType: "topic", Name: topic})
		h.stage.Failure(err)
	} else {
		h.stage.Success()
	}
	return err
}

// healthTargetGroups reports the commit stage's calls to the target: a call
// that failed for every group (or topic) it covered is a failure, a commit
// that wrote something a success. One group failing among others that work
// is that group's problem (metrics and logs show it), not the stage's. An
// authorization failure names the permission the call needs: DESCRIBE on the
// group to describe it or fetch its offsets, DESCRIBE on a topic to look up
// its partitions, READ on the group (and its topics) to commit.
type healthTargetGroups struct {
	targetgroup.Groups
	stage *health.Stage
}

func (h healthTargetGroups) Describe(ctx context.Context, groups []string) (map[string]targetgroup.Group, error) {
	states, err := h.Groups.Describe(ctx, groups)
	if err != nil {
		h.stage.Failure(fmt.Errorf("describe target groups: %w", err))
		return states, err
	}
	var first error
	for _, g := range groups {
		st, ok := states[g]
		if ok && st.DescribeErr == nil {
			return states, nil
		}
		if first == nil && ok && st.DescribeErr != nil {
			first = kafkaerr.Needs(st.DescribeErr, describeOn("group", g))
		}
	}
	if len(groups) > 0 && first != nil {
		h.stage.Failure(fmt.Errorf("describe target groups: every group failed: %w", first))
	}
	return states, nil
}

func (h healthTargetGroups) Offsets(ctx context.Context, groups []string) (map[string]map[messages.TopicPartition]int64, map[string]error) {
	current, errs := h.Groups.Offsets(ctx, groups)
	if len(errs) > 0 && len(current) == 0 {
		for g, err := range errs {
			h.stage.Failure(fmt.Errorf("fetch offsets of target group %q (and %d more): %w", g, len(errs)-1, kafkaerr.Needs(err, describeOn("group", g))))
			break
		}
	}
	return current, errs
}

func (h healthTargetGroups) ExistingPartitions(ctx context.Context, topics []string) (map[messages.TopicPartition]bool, map[string]error) {
	existing, errs := h.Groups.ExistingPartitions(ctx, topics)
	if len(errs) > 0 && len(errs) == len(topics) {
		for topic, err := range errs {
			h.stage.Failure(fmt.Errorf("look up partitions of target topic %q (and %d more): %w", topic, len(errs)-1, kafkaerr.Needs(err, describeOn("topic", topic))))
			break
		}
	}
	return existing, errs
}

func (h healthTargetGroups) Commit(ctx context.Context, group string, offsets map[messages.TopicPartition]targetgroup.Checkpoint) (map[messages.TopicPartition]targetgroup.Reason, error) {
	res, err := h.Groups.Commit(ctx, group, offsets)
	if err != nil {
		h.stage.Failure(fmt.Errorf("commit target group %q: %w", group, kafkaerr.Needs(err, readOn("group", group))))
		return res, err
	}
	var failed targetgroup.Reason
	for _, r := range res {
		switch r {
		case targetgroup.Committed:
			h.stage.Success()
			return res, nil
		case targetgroup.Unauthorized, targetgroup.CommitFailed, targetgroup.Retriable:
			failed = r
		}
	}
	if failed != "" {
		h.stage.Failure(fmt.Errorf("commit target group %q: %s", group, failed))
	}
	return res, nil
}

// readOn is READ on a resource.
func readOn(resourceType, name string) kafkaerr.Permission {
	return kafkaerr.Permission{Operation: "READ", ResourceType: resourceType, Name: name}
}

// describeOn is DESCRIBE on a resource.
func describeOn(resourceType, name string) kafkaerr.Permission {
	return kafkaerr.Permission{Operation: "DESCRIBE", ResourceType: resourceType, Name: name}
}

// readNeeds is a reader's err naming, if it is an authorization failure,
// READ on the topic it reads or on its group (group "" for none).
func readNeeds(err error, topic, group string) error {
	perms := []kafkaerr.Permission{readOn("topic", topic)}
	if group != "" {
		perms = append(perms, readOn("group", group))
	}
	return kafkaerr.Needs(err, perms...)
}

// errGateClosed is the readiness error before the start-up replay is done.
var errGateClosed = errors.New("gate closed: offset syncs and checkpoints not read to their end yet")

// joinReasons makes one error of several readiness reasons, on one line.
func joinReasons(reasons []error) error {
	switch len(reasons) {
	case 0:
		return nil
	case 1:
		return reasons[0]
	}
	msg := reasons[0].Error()
	for _, r := range reasons[1:] {
		msg += "; " + r.Error()
	}
	return errors.New(msg)
}

// probeConfig is a probe client's config: one quick attempt per check, so
// a cluster that does not answer is reported as such within seconds.
func probeConfig(cfg *sarama.Config) *sarama.Config {
	c := *cfg
	c.Net.DialTimeout = min(c.Net.DialTimeout, 2*time.Second)
	c.Net.ReadTimeout = min(c.Net.ReadTimeout, 2*time.Second)
	c.Net.WriteTimeout = min(c.Net.WriteTimeout, 2*time.Second)
	c.Metadata.Retry.Max = 0
	return &c
}
