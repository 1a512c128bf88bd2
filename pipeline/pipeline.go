package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"golang.org/x/sync/errgroup"

	"github.com/checkpointd/checkpointd/handlers"
	"github.com/checkpointd/checkpointd/handlers/events"
	"github.com/checkpointd/checkpointd/handlers/filter"
	"github.com/checkpointd/checkpointd/handlers/policy"
	"github.com/checkpointd/checkpointd/infra/adminpoll"
	"github.com/checkpointd/checkpointd/infra/config"
	"github.com/checkpointd/checkpointd/infra/health"
	"github.com/checkpointd/checkpointd/infra/kafkaerr"
	"github.com/checkpointd/checkpointd/infra/kafkalog"
	"github.com/checkpointd/checkpointd/infra/metrics"
	"github.com/checkpointd/checkpointd/infra/targetgroups"
	"github.com/checkpointd/checkpointd/infra/telemetry"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

// Pipeline is one checkpointd instance: built by New, run by Run.
type Pipeline struct {
	cfg    *config.Config
	opts   options
	logger *slog.Logger

	groupFilter  filter.Matcher
	commitTopic  string
	checkpointer *handlers.Checkpointer
	outbox       *handlers.Outbox
	syncer       *handlers.OffsetSyncer
	commitLog    *kafkalog.CommitLog // with FollowSourceRewinds
	// shards is which source groups this instance owns; commitSub (the
	// __consumer_offsets reader, or the shard topic's in admin-poll mode)
	// shares them among instances and fences the writes.
	shards    *handlers.Shards
	commitSub *kafkalog.ShardedReader
	fence     *handlers.OwnershipCheck
	// restoreLog reads the checkpoints topic back at hand-overs, for the
	// checkpointer and the commit stage alike.
	restoreLog *kafkalog.CheckpointLog
	// pollShards and pollShardReader share the groups among instances in
	// admin-poll mode: a consumer group over the shard topic on the target.
	pollShards      *adminpoll.Shards
	pollShardReader *kafkalog.ShardedReader
	targetAdmin     sarama.ClusterAdmin
	// writes is the target's write side: the cluster, or in shadow mode
	// the comparison (shadow), which then holds what it needs.
	writes targetWrites
	shadow *shadowMode

	translate *message.Router
	commit    *message.Router // nil when sync.group.offsets.enabled=false
	events    *events.Bus     // the users' typed event handlers; nil if none
	running   chan struct{}   // closed once the routers run
	// exactOutcome counts the live exact translations by outcome; nil
	// without metrics or without checkpointd.exact.idle.ms.
	exactOutcome func(outcome string)

	traceGroups map[string]string       // handler -> consumer group, for span attributes
	probes      []*metrics.ClusterProbe // clusters /readyz checks
	health      *health.Registry        // stages /readyz checks

	closers []func() error
}

// Topics names what the pipeline reads and writes, resolved from the config.
type Topics struct {
	OffsetSyncs         string
	OffsetSyncsOnTarget bool
	Checkpoints         string
	CommitSource        string // __consumer_offsets or the admin-poll stream
}

// New connects to both clusters, makes sure the checkpoints topic exists and
// builds the routers. It fails with a message naming the cluster and the
// reason when a cluster cannot be reached or a permission is missing.
func New(ctx context.Context, cfg *config.Config, opt ...Option) (*Pipeline, error) {
	var o options
	for _, f := range opt {
		f(&o)
	}
	if o.logger == nil {
		o.logger = slog.Default()
	}
	if err := checkExtensions(cfg, &o); err != nil {
		return nil, err
	}
	p := &Pipeline{cfg: cfg, opts: o, logger: o.logger, traceGroups: make(map[string]string),
		health: health.New(cfg.StageFailureTimeout, o.logger, health.WithUnreachable(kafkaerr.Unreachable)), running: make(chan struct{})}
	p.writes = kafkaWrites{}
	if cfg.Shadow {
		p.shadow = newShadowMode(cfg, o.logger)
		p.writes = p.shadow.writes
	}
	var err error
	if p.events, err = p.newEventBus(); err != nil {
		return nil, err
	}
	if err := p.build(ctx); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// Topics reports the topics the pipeline uses.
func (p *Pipeline) Topics() Topics { return p.topics() }

func (p *Pipeline) topics() Topics {
	syncs := p.cfg.OffsetSyncs()
	return Topics{OffsetSyncs: syncs.Topic, OffsetSyncsOnTarget: syncs.OnTarget,
		Checkpoints: p.cfg.Policy.CheckpointsTopic(p.cfg.SourceAlias), CommitSource: p.commitTopic}
}

func (p *Pipeline) build(ctx context.Context) error {
	topics := p.topics()
	log := p.logger

	topicFilter, groupFilter, err := p.filters()
	if err != nil {
		return err
	}
	p.groupFilter = groupFilter

	targetAdminCfg, err := p.cfg.SaramaConfig(config.TargetAdmin)
	if err != nil {
		return fmt.Errorf("target admin client config: %w", err)
	}
	targetClient, err := kafkalog.NewClient(p.cfg.Target.BootstrapServers, targetAdminCfg)
	if err != nil {
		return fmt.Errorf("connect to target cluster %q at %v: %w", p.cfg.TargetAlias, p.cfg.Target.BootstrapServers, err)
	}
	p.closers = append(p.closers, targetClient.Close)
	targetAdmin, err := sarama.NewClusterAdminFromClient(targetClient)
	if err != nil {
		return fmt.Errorf("target admin: %w", err)
	}
	p.targetAdmin = targetAdmin
	if err := p.writes.ensureTopic(ctx, targetAdmin, topics.Checkpoints, 1, p.cfg.CheckpointsTopicReplicationFactor,
		compactedTopic()); err != nil {
		return fmt.Errorf("checkpoints topic on target cluster %q: %w", p.cfg.TargetAlias, err)
	}

	// Checkpoints go out through a coalescing outbox to a batching publisher.
	producerCfg, err := p.cfg.SaramaConfig(config.TargetProducer)
	if err != nil {
		return fmt.Errorf("target producer config: %w", err)
	}
	pub, err := p.writes.checkpointPublisher(p.cfg.Target.BootstrapServers, producerCfg, log)
	if err != nil {
		return fmt.Errorf("checkpoint publisher on target cluster %q: %w", p.cfg.TargetAlias, err)
	}
	p.closers = append(p.closers, pub.Close)
	target := clusterName("target", p.cfg.TargetAlias)
	pub = healthPublisher{Publisher: pub, stage: p.health.Stage(StageCheckpointWriter, target, readerRetryGap)}
	if p.events != nil && p.shadow == nil { // in shadow mode nothing is written
		pub = events.WrittenPublisher{Publisher: pub, Bus: p.events}
	}

	observer := p.observer()

	// The source commits decide how work is shared: by __consumer_offsets
	// partition, or (admin poll) by a partition of the shard topic.
	commitSub, commitTopic, err := p.commitSource(ctx, groupFilter)
	if err != nil {
		return err
	}
	p.commitTopic = commitTopic
	// Whichever group shares the shards (the __consumer_offsets reader's,
	// or the shard topic's in admin-poll mode) owns them and fences.
	owner, _ := commitSub.(*kafkalog.ShardedReader)
	if p.pollShardReader != nil {
		owner = p.pollShardReader
	}
	if owner == nil {
		return fmt.Errorf("commit source %s shares no shards", commitTopic)
	}
	// The reader learns the partition count when it joins, before it
	// assigns any shard; until then no group is owned here.
	p.shards = handlers.NewShards(func(group string) int32 { return messages.GroupPartition(group, owner.Partitions()) }).
		WithKeyOf(func(key []byte) (int32, bool) { return messages.GroupPartitionOfKey(key, owner.Partitions()) })
	p.commitSub = owner
	// One confirmation cache for the outbox and the commit stage, fresh
	// for a third of the session (at most a second): see OwnershipCheck.
	p.fence = handlers.NewOwnershipCheck(owner, min(time.Second, owner.SessionTimeout()/3))
	p.outbox = handlers.NewOutbox(pub, topics.Checkpoints, handlers.DefaultOutboxBatch, log,
		handlers.WithPropagator(p.opts.propagator), handlers.WithOwnership(p.shards, p.fence))
	if p.restoreLog, err = p.checkpointLog(); err != nil {
		return err
	}

	partitions, err := p.sourcePartitionCounts()
	if err != nil {
		return err
	}
	p.checkpointer, err = handlers.NewCheckpointer(handlers.CheckpointerConfig{
		SourceAlias:     p.cfg.SourceAlias,
		TargetAlias:     p.cfg.TargetAlias,
		Policy:          p.cfg.Policy,
		Topics:          topicFilter,
		Groups:          groupFilter,
		Emitter:         p.outbox,
		Observer:        observer,
		Logger:          log,
		RefreshInterval: p.cfg.RefreshInterval,
		Shards:          p.shards,
		CheckpointLog:   p.restoreLog,
		RestoreRetry:    p.cfg.SyncGroupOffsetsInterval,
		Veto:            p.opts.policy().Veto,
		Partitions:      partitions.Has,
	})
	if err != nil {
		return err
	}

	p.translate, err = p.newRouter("translate", p.opts.translateMW)
	if err != nil {
		return err
	}

	// Index stage: the offset syncs, read whole by every instance.
	syncs := p.cfg.OffsetSyncs()
	syncName := clusterName("source", syncs.Alias)
	if syncs.OnTarget {
		syncName = target
	}
	syncReader, err := p.logReader(syncs.Reader, syncs.Cluster.BootstrapServers, syncs.Alias,
		p.health.Stage(StageOffsetSyncsReader, syncName, readerRetryGap))
	if err != nil {
		return fmt.Errorf("offset-syncs reader: %w", err)
	}
	p.translate.AddConsumerHandler("index_offset_syncs", topics.OffsetSyncs, syncReader, p.checkpointer.HandleOffsetSync)

	// Restore what was emitted before: the checkpoints topic, read whole.
	tailReader, err := p.checkpointsTail(p.health.Stage(StageCheckpointsReader, target, readerRetryGap))
	if err != nil {
		return fmt.Errorf("checkpoints reader: %w", err)
	}
	restore := p.checkpointer.HandleCheckpointRecord
	if p.shadow != nil {
		restore = p.shadow.tap(restore)
	}
	p.translate.AddConsumerHandler("restore_checkpoints", topics.Checkpoints, tailReader, restore)

	// Translate stage: the source commits.
	p.translate.AddConsumerHandler("translate_commits", commitTopic, commitSub, p.checkpointer.HandleSourceCommit)
	if p.pollShards != nil {
		p.translate.AddConsumerHandler("own_shards", kafkalog.ShardTopic(p.cfg.SourceAlias), p.pollShardReader, p.pollShards.Handle)
		p.traceGroups["own_shards"] = p.cfg.GroupID
	}
	if commitTopic == kafkalog.ConsumerOffsetsTopic {
		p.traceGroups["translate_commits"] = p.cfg.GroupID
	}
	if err := runHooks("translate", p.translate, p.opts.translateHooks); err != nil {
		return err
	}

	// Commit stage. In shadow mode there is none: the checkpoints topic it
	// reads holds MM2's checkpoints, not checkpointd's.
	if p.shadow != nil {
		if err := p.shadow.build(p, targetClient); err != nil {
			return err
		}
		return p.instrument(targetClient)
	}
	if p.cfg.SyncGroupOffsets && p.cfg.FollowSourceRewinds {
		if p.commitLog, err = p.newCommitLog(ctx, targetAdmin, producerCfg); err != nil {
			return err
		}
	}
	if p.cfg.SyncGroupOffsets || len(p.opts.checkpointHandlers) > 0 {
		if err := p.buildCommitRouter(topics, targetClient); err != nil {
			return err
		}
	}
	return p.instrument(targetClient)
}

// instrument sets up the readiness probes and, WithMetrics, the metrics that
// are read from the pipeline's parts.
func (p *Pipeline) instrument(targetClient sarama.Client) error {
	sourceCfg, err := p.cfg.SaramaConfig(config.SourceAdmin)
	if err != nil {
		return fmt.Errorf("source admin client config: %w", err)
	}
	targetCfg, err := p.cfg.SaramaConfig(config.TargetAdmin)
	if err != nil {
		return fmt.Errorf("target admin client config: %w", err)
	}
	// Each probe has a client of its own: behind the pipeline's requests on
	// a shared connection, a probe would wait as long as they do.
	source := metrics.DialClusterProbe(clusterName("source", p.cfg.SourceAlias), func() (sarama.Client, error) {
		return kafkalog.NewClient(p.cfg.Source.BootstrapServers, probeConfig(sourceCfg))
	})
	target := metrics.DialClusterProbe(clusterName("target", p.cfg.TargetAlias), func() (sarama.Client, error) {
		return kafkalog.NewClient(p.cfg.Target.BootstrapServers, probeConfig(targetCfg))
	})
	p.closers = append(p.closers, source.Close, target.Close)
	p.probes = []*metrics.ClusterProbe{source, target}

	m := p.opts.metrics
	if m == nil {
		return nil
	}
	m.AddRouter(p.translate)
	if p.commit != nil {
		m.AddRouter(p.commit)
	}
	if p.cfg.ExactIdle > 0 {
		p.exactOutcome = m.ExactTranslations()
	}
	ix := p.checkpointer.Index()
	m.GaugeFunc(metrics.GaugeIndexPartitions, "Partitions with at least one offset sync in the translation index.",
		func() float64 { return float64(ix.Stats().Partitions) })
	m.GaugeFunc(metrics.GaugeIndexSyncs, "Offset syncs held in the translation index over all partitions.",
		func() float64 { return float64(ix.Stats().Syncs) })
	m.GaugeFunc(metrics.GaugeOutboxQueued, "Checkpoints decided and waiting to be published (at most one per group and partition).",
		func() float64 { return float64(p.outbox.Len()) })
	m.CounterFunc(metrics.CounterOffsetSyncsTrailingBytes, "Offset-sync records applied though their key or value goes on after the last field (MirrorMaker ignores such bytes too).",
		func() float64 { return float64(p.checkpointer.SyncsWithTrailingBytes()) })
	m.CounterFunc(metrics.CounterCheckpointsPublished, "Checkpoint records the target acknowledged.",
		func() float64 { return float64(p.outbox.Stats().Published) })
	m.CounterFunc(metrics.CounterCheckpointsSuperseded, "Queued checkpoints replaced by a newer one of the same group and partition before they were written.",
		func() float64 { return float64(p.outbox.Stats().Superseded) })
	m.CounterFunc(metrics.CounterCheckpointBatches, "Batches of checkpoint records written to the target.",
		func() float64 { return float64(p.outbox.Stats().Batches) })
	m.CounterFunc(metrics.CounterCheckpointBatchErrors, "Checkpoint batches the target refused or did not acknowledge (each is retried).",
		func() float64 { return float64(p.outbox.Stats().Failures) })
	m.GaugeFunc(metrics.GaugeShardsOwned, "Shards of source groups this instance owns now (partitions of __consumer_offsets, or of the shard topic in admin-poll mode).",
		func() float64 { return float64(len(p.shards.Owned())) })
	m.CounterFunc(metrics.CounterCheckpointsDisowned, "Decided checkpoints dropped unwritten because their group's shard moved to another instance.",
		func() float64 { return float64(p.outbox.Stats().Disowned) })
	if p.events != nil {
		sum := func(f func(events.Stats) int64) func() float64 {
			return func() float64 {
				var n int64
				for _, st := range p.events.Stats() {
					n += f(st)
				}
				return float64(n)
			}
		}
		m.GaugeFunc(metrics.GaugeEventsQueued, "Events waiting for the users' event handlers, over all handlers.",
			sum(func(st events.Stats) int64 { return int64(st.Queued) }))
		m.CounterFunc(metrics.CounterEventsDropped, "Events an event handler lost because its queue was full (the pipeline never waits for a handler).",
			sum(func(st events.Stats) int64 { return st.Dropped }))
		m.CounterFunc(metrics.CounterEventsFailed, "Events an event handler failed on after its last retry.",
			sum(func(st events.Stats) int64 { return st.Failed }))
	}
	if p.shadow != nil {
		p.shadow.instrument(m)
	}
	if p.syncer != nil {
		m.GaugeFunc(metrics.GaugeTargetGroupsPending, "Target groups with checkpoints not yet committed (commit stage).",
			func() float64 { return float64(p.syncer.Pending()) })
	}
	return nil
}

// Ready reports nil once the gate is open (the offset syncs and the
// checkpoints were read to their end), both clusters answer and no stage has
// been failing for longer than checkpointd.health.stage.failure.timeout.ms;
// else every reason, naming the cluster and the stage: the check behind
// /readyz. It takes no lock of the pipeline's handlers and waits for a
// cluster at most a few hundred milliseconds (metrics.ClusterProbe), so it
// answers within a second whatever the clusters do.
func (p *Pipeline) Ready(ctx context.Context) error {
	var reasons []error
	if !p.checkpointer.GateOpen() {
		reasons = append(reasons, errGateClosed)
	}
	for _, probe := range p.probes {
		if err := probe.Check(ctx); err != nil {
			reasons = append(reasons, err)
			continue
		}
		// The cluster answers: stages that failed only to reach it before
		// that, and have been idle since, are no longer failing.
		p.health.ClusterAnswered(probe.Name(), probe.Answered())
	}
	if err := p.health.Check(); err != nil {
		reasons = append(reasons, err)
	}
	return joinReasons(reasons)
}

func (p *Pipeline) buildCommitRouter(topics Topics, targetClient sarama.Client) error {
	r, err := p.newRouter("commit", p.opts.commitMW)
	if err != nil {
		return err
	}
	targetName := clusterName("target", p.cfg.TargetAlias)
	newLeaseReader := func(suffix, stage string, batch batching) (message.Subscriber, error) {
		return p.shardedReader(config.TargetConsumer, p.cfg.Target.BootstrapServers, p.cfg.TargetAlias,
			p.cfg.GroupID+"-"+suffix, false, batch,
			p.health.Stage(stage, clusterName("target", p.cfg.TargetAlias), readerRetryGap), p.leaseSession())
	}
	if p.cfg.SyncGroupOffsets {
		conns := cmp.Or(p.cfg.TargetCommitConnections, targetgroups.DefaultCommitConnections)
		tg, err := targetgroups.New(targetClient, p.logger, targetgroups.WithCommitConnections(conns))
		if err != nil {
			return fmt.Errorf("target groups: %w", err)
		}
		p.closers = append(p.closers, tg.Close) // its commit connections; closed before targetClient
		var target targetgroup.Groups = healthTargetGroups{Groups: policy.RenameGroups(p.writes.groups(tg), p.opts.policy().TargetGroup, p.logger),
			stage: p.health.Stage(StageTargetCommits, clusterName("target", p.cfg.TargetAlias), p.cfg.SyncGroupOffsetsInterval)}
		if p.opts.tracer != nil {
			target = telemetry.TraceTargetGroups(target, p.opts.tracer)
		}
		var commitLog handlers.CommitLog
		if p.commitLog != nil { // a nil *CommitLog in the interface would not be nil
			commitLog = p.commitLog
		}
		syncCfg := handlers.OffsetSyncerConfig{
			Target:        target,
			Groups:        p.groupFilter,
			RetryInterval: p.cfg.SyncGroupOffsetsInterval,
			// Twice the connections: a commit waiting for a connection has
			// its request ready when one frees up.
			CommitConcurrency: 2 * conns,
			Observer:          p.observer(),
			Propagator:        p.opts.propagator,
			FollowRewinds:     p.cfg.FollowSourceRewinds,
			CommitLog:         commitLog,
			Logger:            p.logger,
			Shards:            p.shards,
			Fence:             p.fence,
			CheckpointLog:     p.restoreLog,
		}
		p.syncer = handlers.NewOffsetSyncer(syncCfg)
		// The commit stage takes checkpoints in batches (each record with
		// its own headers): it sees as many as the translate stage writes.
		// Every instance tails the topic and keeps its own groups', and a
		// shard's state is read back when it is assigned.
		sub, err := p.checkpointsTail(p.health.Stage(StageCommitReader, targetName, readerRetryGap))
		if err != nil {
			return fmt.Errorf("commit-router reader: %w", err)
		}
		r.AddConsumerHandler("sync_target_offsets", topics.Checkpoints, sub, p.syncer.HandleCheckpoint)
	}
	for _, h := range p.opts.checkpointHandlers {
		// Each handler holds its own lease: handlers sharing one group would
		// split the topic's single partition between them.
		// One checkpoint per message: users' handlers take single records.
		sub, err := newLeaseReader("handler-"+h.name, "checkpoint handler "+h.name+" lease", batching{})
		if err != nil {
			return fmt.Errorf("reader for handler %s: %w", h.name, err)
		}
		r.AddConsumerHandler(h.name, topics.Checkpoints, sub, h.fn)
		p.traceGroups[h.name] = p.cfg.GroupID + "-handler-" + h.name
	}
	if err := runHooks("commit", r, p.opts.commitHooks); err != nil {
		return err
	}
	p.commit = r
	return nil
}

func (p *Pipeline) newRouter(name string, extra []message.HandlerMiddleware) (*message.Router, error) {
	r, err := message.NewRouter(message.RouterConfig{CloseTimeout: 15 * time.Second},
		newRouterLogger(p.logger.With("router", name)))
	if err != nil {
		return nil, fmt.Errorf("%s router: %w", name, err)
	}
	r.AddMiddleware(middleware.Recoverer)
	if p.opts.tracer != nil {
		r.AddMiddleware(telemetry.Middleware(p.opts.tracer, p.opts.propagator, p.traceGroups))
	}
	r.AddMiddleware(extra...)
	return r, nil
}

func (p *Pipeline) filters() (filter.Matcher, filter.Matcher, error) {
	topics, groups := p.opts.topicFilter, p.opts.groupFilter
	var err error
	if topics == nil {
		if topics, err = filter.New(p.cfg.Topics, p.cfg.TopicsExclude); err != nil {
			return nil, nil, fmt.Errorf("topic filter: %w", err)
		}
	}
	if groups == nil {
		if groups, err = filter.New(p.cfg.Groups, p.cfg.GroupsExclude); err != nil {
			return nil, nil, fmt.Errorf("group filter: %w", err)
		}
	}
	return topics, groups, nil
}

// Run runs the routers, the refresh and target-group sync jobs and the outbox
// until ctx ends or one of them fails, which stops the others. The routers let
// their handlers finish the message in hand (up to their close timeout); only
// once every stage has stopped does the outbox get 10 s of its own to publish
// what is queued, and what is left then is dropped with a warning, to be
// decided again on restart. Connections close last. Run returns nil when ctx
// ended it, else the first stage's error.
func (p *Pipeline) Run(ctx context.Context) error {
	defer p.close()
	// The stages stop together: the first to fail cancels the others.
	g, gctx := errgroup.WithContext(ctx)
	outboxCtx, stopOutbox := context.WithCancel(context.WithoutCancel(ctx))
	defer stopOutbox()
	outboxDone := make(chan struct{})
	go func() {
		defer close(outboxDone)
		_ = p.outbox.Run(outboxCtx, 10*time.Second)
	}()

	g.Go(func() error { return runRouter(gctx, p.translate) })
	g.Go(func() error { return p.checkpointer.RunRefresh(gctx) })
	g.Go(func() error { return p.checkpointer.RunRestore(gctx) })
	if p.commit != nil {
		g.Go(func() error { return runRouter(gctx, p.commit) })
	}
	if p.syncer != nil {
		g.Go(func() error { return p.syncer.Run(gctx) })
	}
	if p.shadow != nil {
		g.Go(func() error { return p.shadow.run(gctx) })
	}
	g.Go(func() error { return p.runEvents(gctx) })
	if p.cfg.ExactIdle > 0 {
		g.Go(func() error { return p.runExactLive(gctx) })
	}
	go p.markRunning(gctx)
	err := g.Wait()
	stopOutbox() // routers are closed: nothing more is decided; drain what is queued
	<-outboxDone
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil
	}
	return err
}

func runRouter(ctx context.Context, r *message.Router) error {
	if err := r.Run(ctx); err != nil {
		return err
	}
	if ctx.Err() == nil {
		return errors.New("router stopped unexpectedly")
	}
	return nil
}

// Checkpointer exposes the translate state (for explain and tests).
func (p *Pipeline) Checkpointer() *handlers.Checkpointer { return p.checkpointer }

func (p *Pipeline) close() {
	for i := len(p.closers) - 1; i >= 0; i-- {
		if err := p.closers[i](); err != nil {
			p.logger.Debug("close", "error", err)
		}
	}
	p.closers = nil
}

func ptr[T any](v T) *T { return &v }

// compactedTopic is the config of the compacted topics checkpointd creates.
// Kafka compacts only closed segments, and by default a segment stays open
// for 7 days or 1 GiB: a new owner of a shard reads the checkpoints topic
// and the commit log back whole, so they roll every hour or 128 MiB (about
// 650,000 checkpoint records; at 4,000 a second an hour would reach the
// 1 GiB, five million records to read at a hand-over). Smaller segments
// roll and get cleaned every few tens of seconds under load, which on the
// scale-out bench cost the single instance's p99 freshness about 50 ms.
func compactedTopic() map[string]*string {
	return map[string]*string{"cleanup.policy": ptr("compact"), "segment.ms": ptr("3600000"),
		"segment.bytes": ptr(strconv.Itoa(128 << 20))}
}

// observer joins the user's observer (WithObserver), the metrics and the
// event handlers' bus, if any.
func (p *Pipeline) observer() handlers.Observer {
	obs := []handlers.Observer{p.opts.observer}
	if p.opts.metrics != nil { // a nil *Metrics in the interface would not be nil
		obs = append(obs, p.opts.metrics)
	}
	if p.shadow != nil {
		obs = append(obs, shadowObserver{cmp: p.shadow.cmp})
	}
	if p.events != nil {
		obs = append(obs, &events.Observer{Bus: p.events, TargetGroup: p.opts.policy().TargetGroup,
			UpstreamTopic: p.cfg.Policy.UpstreamTopic})
	}
	return handlers.JoinObservers(obs...)
}

// Running is closed once the routers are running, like a Watermill
// router's Running.
func (p *Pipeline) Running() <-chan struct{} { return p.running }

func (p *Pipeline) markRunning(ctx context.Context) {
	routers := []*message.Router{p.translate}
	if p.commit != nil {
		routers = append(routers, p.commit)
	}
	for _, r := range routers {
		select {
		case <-r.Running():
		case <-ctx.Done():
			return
		}
	}
	close(p.running)
}

// Close releases the connections of a pipeline that New built and Run was
// not called on; Run releases them itself when it returns.
func (p *Pipeline) Close() error {
	p.close()
	return nil
}

// newCommitLog makes sure the commit log topic exists on the target and
// returns the log, with a producer of its own: the commit stage waits for
// each write, and must not wait behind the outbox's checkpoint batches.
func (p *Pipeline) newCommitLog(ctx context.Context, targetAdmin sarama.ClusterAdmin, producerCfg *sarama.Config) (*kafkalog.CommitLog, error) {
	topic := kafkalog.CommitLogTopic(p.cfg.SourceAlias)
	if err := p.writes.ensureTopic(ctx, targetAdmin, topic, 1, p.internalTopicRF(targetAdmin),
		compactedTopic()); err != nil {
		return nil, fmt.Errorf("commit log topic on target cluster %q (checkpointd.sync.follow.source.rewinds=true needs it; false turns it off): %w",
			p.cfg.TargetAlias, err)
	}
	sc, err := p.cfg.SaramaConfig(config.TargetConsumer)
	if err != nil {
		return nil, fmt.Errorf("target consumer config: %w", err)
	}
	target := clusterName("target", p.cfg.TargetAlias)
	reader := kafkalog.ReaderConfig{Brokers: p.cfg.Target.BootstrapServers, Sarama: sc, Cluster: target, Logger: p.logger, BatchRecords: restoreBatch,
		Observer: p.stageObserver(p.health.Stage(StageCommitLogReader, target, readerRetryGap), "")}
	pub, err := p.writes.commitLogPublisher(p.cfg.Target.BootstrapServers, producerCfg, p.logger)
	if err != nil {
		return nil, fmt.Errorf("commit log writer on target cluster %q: %w", p.cfg.TargetAlias, err)
	}
	p.closers = append(p.closers, pub.Close)
	pub = healthPublisher{Publisher: pub, stage: p.health.Stage(StageCommitLogWriter, target, readerRetryGap)}
	return kafkalog.NewCommitLog(topic, reader, pub, p.logger), nil
}

// restoreBatch is how many records one message of a restore read carries:
// a hand-over reads the checkpoints topic and the commit log whole, often
// hundreds of thousands of records not compacted yet, while its shards wait.
const restoreBatch = 4096

// checkpointLog reads the checkpoints topic back for a new owner of shards;
// the checkpointer and the commit stage share the one made at build, and so
// share the reads of a hand-over: both start theirs from the same
// assignment, after the same restore gather, so 10 ms lets them meet.
func (p *Pipeline) checkpointLog() (*kafkalog.CheckpointLog, error) {
	sc, err := p.cfg.SaramaConfig(config.TargetConsumer)
	if err != nil {
		return nil, fmt.Errorf("target consumer config: %w", err)
	}
	target := clusterName("target", p.cfg.TargetAlias)
	return &kafkalog.CheckpointLog{Topic: p.topics().Checkpoints, Gather: 10 * time.Millisecond, Reader: kafkalog.ReaderConfig{
		Brokers: p.cfg.Target.BootstrapServers, Sarama: sc, Cluster: target, Logger: p.logger, BatchRecords: restoreBatch,
		Observer: stageObserver{stage: p.health.Stage(StageShardRestore, target, readerRetryGap)}}}, nil
}

// internalTopicRF is the replication factor of the topics checkpointd
// creates beside the checkpoints topic: the checkpoints topic's, which may
// have been created beforehand with another factor than
// checkpoints.topic.replication.factor.
func (p *Pipeline) internalTopicRF(targetAdmin sarama.ClusterAdmin) int16 {
	rf := p.cfg.CheckpointsTopicReplicationFactor
	if md, err := targetAdmin.DescribeTopics([]string{p.topics().Checkpoints}); err == nil && len(md) == 1 && len(md[0].Partitions) > 0 {
		rf = int16(len(md[0].Partitions[0].Replicas))
	}
	return rf
}
