package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/handlers/filter"
	"github.com/checkpointd/checkpointd/infra/adminpoll"
	"github.com/checkpointd/checkpointd/infra/config"
	"github.com/checkpointd/checkpointd/infra/health"
	"github.com/checkpointd/checkpointd/infra/kafkalog"
	"github.com/checkpointd/checkpointd/messages"
)

// Commit source modes (checkpointd.commit.source).
const (
	SourceAuto       = "auto"
	SourceOffsetsLog = "offsets-log"
	SourceAdminPoll  = "admin-poll"
)

// commitSource picks and builds the reader of source group commits: the
// __consumer_offsets tail where it can be read, else the admin poller.
func (p *Pipeline) commitSource(ctx context.Context, groups filter.Matcher) (message.Subscriber, string, error) {
	mode := p.cfg.CommitSource
	if mode == SourceAuto {
		readable, why, err := p.offsetsLogReadable(ctx)
		if err != nil {
			// Not a mode decision: the source did not answer. Either mode
			// would fail the same way; say why.
			return nil, "", fmt.Errorf("source cluster %q at %v: %w", p.cfg.SourceAlias, p.cfg.Source.BootstrapServers, err)
		}
		if readable {
			mode = SourceOffsetsLog
		} else {
			mode = SourceAdminPoll
			p.logger.Info("__consumer_offsets is not readable on the source; polling group offsets instead",
				"reason", why, "interval", p.cfg.AdminPollInterval)
		}
	}
	p.logger.Info("commit source", "mode", mode, "cluster", p.cfg.SourceAlias)
	switch mode {
	case SourceOffsetsLog:
		sub, err := p.shardedReader(config.SourceConsumer, p.cfg.Source.BootstrapServers, p.cfg.SourceAlias, p.cfg.GroupID, true,
			p.commitSourceBatching(), p.sourceCommitStage(), p.sourceSession())
		if err != nil {
			return nil, "", fmt.Errorf("__consumer_offsets reader: %w", err)
		}
		return sub, kafkalog.ConsumerOffsetsTopic, nil
	case SourceAdminPoll:
		adminCfg, err := p.cfg.SaramaConfig(config.SourceAdmin)
		if err != nil {
			return nil, "", fmt.Errorf("source admin client config: %w", err)
		}
		client, err := kafkalog.NewClient(p.cfg.Source.BootstrapServers, adminCfg)
		if err != nil {
			return nil, "", fmt.Errorf("connect to source cluster %q at %v: %w", p.cfg.SourceAlias, p.cfg.Source.BootstrapServers, err)
		}
		p.closers = append(p.closers, client.Close)
		if err := p.pollShardsOn(ctx); err != nil {
			return nil, "", err
		}
		poller, err := adminpoll.New(adminpoll.Config{
			Client:   client,
			Groups:   groups,
			Interval: p.cfg.AdminPollInterval,
			Logger:   p.logger,
			OnPoll:   reportTo(p.sourceCommitStage()),
			Shards:   p.pollShards,
		})
		if err != nil {
			return nil, "", fmt.Errorf("admin poller: %w", err)
		}
		return poller, adminpoll.Topic, nil
	default:
		return nil, "", fmt.Errorf("checkpointd.commit.source=%q: want %s, %s or %s", mode, SourceAuto, SourceOffsetsLog, SourceAdminPoll)
	}
}

// adminPollShards is how many shards the groups are spread over in
// admin-poll mode: the partitions of the shard topic, as many as
// __consumer_offsets has by default. An existing topic keeps its count.
const adminPollShards = 50

// pollShardsOn makes the admin poller's share of the groups follow a
// consumer group (checkpointd.group.id) over the shard topic on the target,
// which holds no records: the group only hands out its partitions.
func (p *Pipeline) pollShardsOn(ctx context.Context) error {
	topic := kafkalog.ShardTopic(p.cfg.SourceAlias)
	err := p.writes.ensureTopic(ctx, p.targetAdmin, topic, adminPollShards, p.internalTopicRF(p.targetAdmin),
		compactedTopic())
	switch {
	case err == nil:
	case errors.Is(err, kafkalog.ErrTopicNotVisible):
		// Not visible to this principal: its reader says what is missing,
		// in /readyz, and takes the shards once it is granted.
		p.logger.Warn("shard topic not visible; the instance owns no groups until it is", "topic", topic, "error", err)
	default:
		return fmt.Errorf("shard topic on target cluster %q (admin-poll mode shares the groups among instances through it): %w",
			p.cfg.TargetAlias, err)
	}
	reader, err := p.shardedReader(config.TargetConsumer, p.cfg.Target.BootstrapServers, p.cfg.TargetAlias, p.cfg.GroupID, false,
		batching{}, p.health.Stage(StageShardOwner, clusterName("target", p.cfg.TargetAlias), readerRetryGap), p.leaseSession())
	if err != nil {
		return fmt.Errorf("shard topic reader: %w", err)
	}
	p.pollShardReader = reader
	p.pollShards = adminpoll.NewShards(func(group string) int32 { return messages.GroupPartition(group, reader.Partitions()) })
	return nil
}

// offsetsLogReadable asks the source whether this instance's principal can
// read __consumer_offsets (see kafkalog.OffsetsLogReadable).
func (p *Pipeline) offsetsLogReadable(ctx context.Context) (bool, string, error) {
	cfg, err := p.cfg.SaramaConfig(config.SourceConsumer)
	if err != nil {
		return false, "", fmt.Errorf("source consumer config: %w", err)
	}
	return kafkalog.OffsetsLogReadable(ctx, p.cfg.Source.BootstrapServers, cfg, p.cfg.GroupID)
}

func (p *Pipeline) logReader(role config.Role, brokers []string, cluster string, stage *health.Stage) (message.Subscriber, error) {
	return p.filteredLogReader(role, brokers, cluster, stage, nil)
}

// checkpointsTail reads the checkpoints topic for a stage that keeps its own
// shards' records: every instance reads every record, and the others'
// are dropped as they are read (they still count as read), not made into
// messages first. A shard assigned later is restored by a read of its own.
//
// In shadow mode nothing is dropped: the comparison reads MM2's records of
// every group through the tail, those read before the shards are assigned
// too.
func (p *Pipeline) checkpointsTail(stage *health.Stage) (message.Subscriber, error) {
	var filter func(*sarama.ConsumerMessage) bool
	if p.shadow == nil {
		filter = func(m *sarama.ConsumerMessage) bool { return p.shards.MayHoldKey(m.Key) }
	}
	return p.filteredLogReader(config.TargetConsumer, p.cfg.Target.BootstrapServers, p.cfg.TargetAlias, stage, filter)
}

func (p *Pipeline) filteredLogReader(role config.Role, brokers []string, cluster string, stage *health.Stage,
	filter func(*sarama.ConsumerMessage) bool) (message.Subscriber, error) {
	cfg, err := p.cfg.SaramaConfig(role)
	if err != nil {
		return nil, err
	}
	return kafkalog.NewLogReader(kafkalog.LogReaderConfig{
		ReaderConfig: kafkalog.ReaderConfig{Brokers: brokers, Sarama: cfg, Cluster: cluster, Logger: p.logger, Observer: p.stageObserver(stage, ""),
			BatchRecords: wholeTopicBatch, Filter: filter},
	})
}

// wholeTopicBatch is how many records of the offset-syncs or checkpoints
// topic one message may carry. Both are replayed whole at start (1M syncs
// are common), and a Watermill message costs a handler goroutine, the
// middleware and an ack round trip; a sync costs well under a microsecond
// to index. The reader only groups records it has fetched already, so a
// tailed record is never held back.
const wholeTopicBatch = 500

// commitSourceBatch is how many __consumer_offsets records one message may
// carry while a partition replays at start or has fallen more than that
// many records behind (with tracing off, always; see commitSourceBatching):
// then a commit costs a fraction of a Watermill message, and the reader
// catches up instead of lagging further.
const commitSourceBatch = 500

// commitSourceBatching is how the __consumer_offsets reader batches. With
// tracing on, a partition that keeps up sends one record per message, so
// each live commit has a `process` span of its own. With tracing off no
// span is kept, and the records a fetch brought (about 8 per fetch at 400
// commits/s) go in one message: one handler goroutine, middleware pass and
// ack instead of one each, and never a wait for more records.
func (p *Pipeline) commitSourceBatching() batching {
	if p.opts.tracer == nil {
		return batching{records: commitSourceBatch}
	}
	return batching{records: commitSourceBatch, behind: commitSourceBatch}
}

// batching is the ReaderConfig.BatchRecords and BatchBehind of a reader;
// the zero value sends one record per message.
type batching struct {
	records int
	behind  int64
}

func (p *Pipeline) shardedReader(role config.Role, brokers []string, cluster, group string, readCommitted bool, batch batching, stage *health.Stage, session groupSession) (*kafkalog.ShardedReader, error) {
	cfg, err := p.cfg.SaramaConfig(role)
	if err != nil {
		return nil, err
	}
	return kafkalog.NewShardedReader(kafkalog.ShardedReaderConfig{
		ReaderConfig: kafkalog.ReaderConfig{Brokers: brokers, Sarama: cfg, Cluster: cluster, Logger: p.logger,
			ReadCommitted: readCommitted, Observer: p.stageObserver(stage, group), BatchRecords: batch.records, BatchBehind: batch.behind},
		GroupID:           group,
		SessionTimeout:    session.timeout,
		HeartbeatInterval: session.heartbeat,
		// Cooperative: a member joining or leaving moves only the partitions
		// that change owner, so the others need not replay theirs. Chosen
		// before the first release because switching a live group later takes
		// a two-step rolling change.
		Rebalance: kafkalog.RebalanceCooperativeSticky,
	})
}

// sourceCommitStage is the health of the source commit reader, either kind.
func (p *Pipeline) sourceCommitStage() *health.Stage {
	return p.health.Stage(StageSourceCommitReader, clusterName("source", p.cfg.SourceAlias), max(readerRetryGap, p.cfg.AdminPollInterval))
}

// reportTo turns an outcome into a stage's Success or Failure.
func reportTo(stage *health.Stage) func(error) {
	return func(err error) {
		if err != nil {
			stage.Failure(err)
			return
		}
		stage.Success()
	}
}

// groupSession overrides a reader group's session timeout and heartbeat
// interval; the zero value keeps the consumer config's.
type groupSession struct{ timeout, heartbeat time.Duration }

// leaseSession is the session of the groups that share shards in
// admin-poll mode and of users' checkpoint handlers: a member that died
// loses its partitions after checkpointd.commit.lease.session.timeout.ms (the
// name is kept from the commit lease), and the others, heartbeating twenty
// times per session, join the rebalance within a twentieth of it.
func (p *Pipeline) leaseSession() groupSession {
	return sessionOf(p.cfg.CommitLeaseSessionTimeout)
}

// sourceSession is the session of the group that shares __consumer_offsets:
// the same key's, unless the source consumer config sets
// session.timeout.ms.
func (p *Pipeline) sourceSession() groupSession {
	if _, set := p.cfg.Source.Consumer["session.timeout.ms"]; set {
		return groupSession{}
	}
	s := sessionOf(p.cfg.CommitLeaseSessionTimeout)
	if _, set := p.cfg.Source.Consumer["heartbeat.interval.ms"]; set {
		s.heartbeat = 0
	}
	return s
}

// sessionOf heartbeats twenty times a session: the survivors of a member
// that died learn of the rebalance at their next heartbeat after its
// session expired, which a hand-over waits for on top of the session (a
// heartbeat is a small request to the coordinator).
func sessionOf(t time.Duration) groupSession {
	if t <= 0 {
		return groupSession{}
	}
	return groupSession{timeout: t, heartbeat: max(t/20, 100*time.Millisecond)}
}
