package handlers

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/checkpointd/checkpointd/handlers/filter"
	"github.com/checkpointd/checkpointd/handlers/translate"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
)

// Emitter takes decided checkpoints in decision order and gets them onto the
// target's checkpoints topic. It is called under the decision lock, so the
// order it sees is the order records must land in.
//
// committedAt is when the source commit behind the checkpoint was written
// (zero if unknown); the Outbox sends it along in a record header.
type Emitter interface {
	Emit(ctx context.Context, cp messages.Checkpoint, committedAt time.Time)
}

// CheckpointerConfig is what the Checkpointer needs to translate and decide.
type CheckpointerConfig struct {
	SourceAlias string
	TargetAlias string
	Policy      messages.ReplicationPolicy
	Topics      filter.Matcher // upstream topics whose commits are checkpointed
	Groups      filter.Matcher // source groups that are checkpointed
	Emitter     Emitter
	Observer    Observer     // nil: NopObserver
	Logger      *slog.Logger // nil: slog.Default()
	// RefreshInterval paces what offset syncs do to groups that have not
	// committed since their last decision. The first sync to reach a
	// (group, partition) in an interval decides it at once; later ones in
	// the same interval only mark it, and the marked pairs are decided
	// together at the interval's end. So a pair gets at most one
	// sync-driven decision per interval plus the one that opened it,
	// however fast syncs arrive (MM2 re-translates every group once per
	// emit.checkpoints.interval.seconds), and a sync that comes after a
	// quiet spell is acted on without waiting. A source commit is always
	// decided at once. Zero decides on every sync.
	RefreshInterval time.Duration
	// Shards is which groups this instance owns: their commits, decisions
	// and checkpoint state live here, and no other group's. Nil: one shard
	// per commit-source partition, every group kept (admin poll, explain).
	Shards *Shards
	// CheckpointLog, when set, restores a shard's checkpoint state from the
	// checkpoints topic when the shard is assigned, before any of its
	// groups is decided, and the tail keeps only the owned groups'
	// checkpoints. Nil: the tail keeps every group's.
	CheckpointLog CheckpointLog
	// RestoreRetry is the wait before a failed restore read is tried
	// again. Zero: a second.
	RestoreRetry time.Duration
	// Veto, when set, is asked about every checkpoint about to be emitted
	// and refuses it by returning true (SkipVetoed). It runs under the
	// decision lock. A vetoed checkpoint still counts as the last one of
	// its pair for MM2's rules, as if written.
	Veto func(ctx context.Context, cp messages.Checkpoint) bool
	// Partitions, when set, tells whether the source topic of an offset
	// sync has the sync's partition (known false: it cannot tell, the sync
	// is applied). It must answer from a metadata cache, as it is asked
	// per sync. A sync for a partition the topic does not have is skipped
	// as malformed.
	Partitions func(topic string, partition int32) (has, known bool)
}

// Checkpointer is the state shared by the index, tail and translate handlers:
// the translation index, the latest source commits of the groups this instance
// owns, and the last checkpoint emitted per (group, renamed partition).
//
// Decisions follow MM2's rules (see translate); what differs is when they are
// made: on every source commit and on every offset sync that can move a
// group's translation, instead of once a minute.
type Checkpointer struct {
	cfg   CheckpointerConfig
	index *translate.Index

	mu      sync.Mutex
	commits *translate.Commits
	emitted *translate.Checkpoints
	// shards are the partitions of the commit source this instance owns; a
	// group lives in exactly one shard (Kafka puts all of a group's commits in
	// one __consumer_offsets partition).
	shards     map[int32]*shard
	groupShard map[string]int32
	// syncsTrailing counts offset syncs applied though they carry bytes
	// after their last field (see SyncsWithTrailingBytes).
	syncsTrailing atomic.Int64
	// emittedHere holds the groups this instance emitted checkpoints for
	// since it was assigned their shard.
	emittedHere map[string]struct{}
	// undecided holds, when tracing, the span context of each commit record
	// that arrived before it could be decided (replay not caught up, gate
	// closed), so the checkpoint decided later still continues the commit's
	// trace. Span contexts, not spans: a replay may hold millions.
	undecided map[groupPartition]trace.SpanContext
	tracer    trace.TracerProvider // of the spans in undecided
	// refresh holds the (group, partition) pairs an offset sync may have
	// moved since the last Refresh, with the span context of the sync's
	// record when it was sampled (zero otherwise).
	refresh map[groupPartition]trace.SpanContext
	// syncDecided holds the pairs a sync or a refresh decided in the
	// current interval: a further sync for one of them waits for the
	// refresh. Refresh starts it anew.
	syncDecided map[groupPartition]struct{}
	// topics caches, per upstream topic, the topic filter's verdict and the
	// downstream name: both are fixed for the life of the process, and a
	// sync re-decides thousands of groups on one topic.
	topics map[string]topicInfo

	// restores holds the shards assigned and not yet restored from the
	// CheckpointLog; restoreWake starts RunRestore's next read.
	restores    restoreSet
	restoreWake chan struct{}

	syncsRead       bool
	checkpointsRead bool
	misplaced       bool // a group came from another partition than its shard (logged once)
	// gateOpen is written under mu but read without it, so readiness never
	// waits for a decision in progress.
	gateOpen atomic.Bool
}

type topicInfo struct {
	checkpointed bool   // the topic filter matches
	downstream   string // its name on the target
}

type groupPartition struct {
	group string
	tp    messages.TopicPartition
}

type shard struct {
	caughtUp bool // replay reached the end seen at assignment
	restored bool // the shard's checkpoints were read back (or need not be)
	live     bool // both: decisions may be made
	groups   map[string]struct{}
}

// NewCheckpointer makes a Checkpointer whose gate is closed until both the
// offset syncs and the previous checkpoints have been read to their end.
func NewCheckpointer(cfg CheckpointerConfig) (*Checkpointer, error) {
	switch {
	case cfg.Policy == nil:
		return nil, fmt.Errorf("checkpointer: replication policy is required")
	case cfg.Topics == nil || cfg.Groups == nil:
		return nil, fmt.Errorf("checkpointer: topic and group filters are required")
	case cfg.Emitter == nil:
		return nil, fmt.Errorf("checkpointer: emitter is required")
	case cfg.SourceAlias == "" || cfg.TargetAlias == "":
		return nil, fmt.Errorf("checkpointer: source and target cluster aliases are required")
	}
	if cfg.Observer == nil {
		cfg.Observer = NopObserver{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Shards == nil {
		cfg.Shards = NewShards(nil)
	}
	if cfg.RestoreRetry <= 0 {
		cfg.RestoreRetry = time.Second
	}
	c := &Checkpointer{
		cfg: cfg,
		// The gate opens only after the checkpoints topic was read to its end,
		// so checkpoints are always loaded before the first decision.
		index:       translate.NewIndex(translate.Options{CheckpointsLoaded: true}),
		commits:     translate.NewCommits(),
		emitted:     translate.NewCheckpoints(),
		shards:      make(map[int32]*shard),
		groupShard:  make(map[string]int32),
		emittedHere: make(map[string]struct{}),
		undecided:   make(map[groupPartition]trace.SpanContext),
		topics:      make(map[string]topicInfo),
		refresh:     make(map[groupPartition]trace.SpanContext),
		syncDecided: make(map[groupPartition]struct{}),
		restores:    make(restoreSet),
		restoreWake: make(chan struct{}, 1),
	}
	cfg.Shards.listen(c)
	return c, nil
}

// Index exposes the translation index, read-only use intended (stats, explain).
func (c *Checkpointer) Index() *translate.Index { return c.index }

// GateOpen reports whether translation has started.
func (c *Checkpointer) GateOpen() bool { return c.gateOpen.Load() }

// ApplySync adds an offset sync to the index and re-decides the groups whose
// translation it may have moved forward: those committed at or above the
// sync's upstream offset. Below it, a translation uses older syncs only, and
// the sync can at most evict some of them, which moves the translation back,
// never to a checkpoint that would be emitted (same upstream, lower
// downstream). Skipping them keeps a sync's cost to the groups at the head.
func (c *Checkpointer) ApplySync(ctx context.Context, s messages.OffsetSync) {
	if !c.index.Apply(s.TopicPartition, s.UpstreamOffset, s.DownstreamOffset) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.gateOpen.Load() {
		return
	}
	var groups []string
	var offsets []int64
	c.commits.ForEachGroupOn(s.TopicPartition, func(group string, cm translate.Commit) {
		if cm.Offset >= s.UpstreamOffset && c.isLive(group) {
			groups = append(groups, group)
			offsets = append(offsets, cm.Offset)
		}
	})
	if c.cfg.RefreshInterval <= 0 {
		for _, group := range groups {
			c.evaluate(ctx, group, s.TopicPartition)
		}
		return
	}
	span := trace.SpanFromContext(ctx)
	var sc trace.SpanContext
	if span.SpanContext().IsSampled() {
		sc, c.tracer = span.SpanContext(), span.TracerProvider()
	}
	for i, group := range groups {
		key := groupPartition{group, s.TopicPartition}
		if _, paced := c.syncDecided[key]; !paced {
			c.syncDecided[key] = struct{}{}
			c.evaluate(ctx, group, s.TopicPartition)
			continue
		}
		c.refresh[key] = sc
		recordDecision(ctx, group, s.TopicPartition, messages.TopicPartition{}, DecisionDeferred, "", offsets[i], -1)
	}
}

// Refresh decides the (group, partition) pairs that offset syncs may have
// moved since the last Refresh. RunRefresh calls it every RefreshInterval.
func (c *Checkpointer) Refresh(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// The pairs decided now stay paced through the next interval; the
	// others may be decided by their next sync at once.
	clear(c.syncDecided)
	if len(c.refresh) == 0 {
		return
	}
	due := c.refresh
	c.refresh = make(map[groupPartition]trace.SpanContext, len(due))
	for key, sc := range due {
		c.syncDecided[key] = struct{}{}
		if !c.isLive(key.group) {
			continue
		}
		if sc.IsValid() {
			c.decideLate(ctx, sc, key.group, key.tp)
			continue
		}
		c.evaluate(ctx, key.group, key.tp)
	}
}

// RunRefresh calls Refresh every RefreshInterval until ctx ends; without an
// interval it only waits for ctx.
func (c *Checkpointer) RunRefresh(ctx context.Context) error {
	if c.cfg.RefreshInterval <= 0 {
		<-ctx.Done()
		return nil
	}
	tick := time.NewTicker(c.cfg.RefreshInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			c.Refresh(ctx)
		}
	}
}

// SyncsReadToEnd records that the offset-syncs topic was read to the end
// offsets it had at start.
func (c *Checkpointer) SyncsReadToEnd(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.syncsRead = true
	c.maybeOpenGate(ctx)
}

// CheckpointsReadToEnd records that the checkpoints topic was read to the end
// offsets it had at start, so the last emitted checkpoints are known.
func (c *Checkpointer) CheckpointsReadToEnd(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checkpointsRead = true
	c.maybeOpenGate(ctx)
}

// CheckpointSeen restores a checkpoint read from the checkpoints topic (MM2's
// CheckpointStore). Groups this instance has emitted for since it took them
// over are skipped: their state is ahead of the log, whose tail may still
// hold older records of ours. With a CheckpointLog, only the groups of owned
// shards are kept.
func (c *Checkpointer) CheckpointSeen(cp messages.Checkpoint) { c.CheckpointSeenAt(cp, -1) }

// CheckpointSeenAt is CheckpointSeen for the record at offset of the
// checkpoints topic; a restore in progress keeps it over older records.
func (c *Checkpointer) CheckpointSeenAt(cp messages.Checkpoint, offset int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sharded() {
		p := c.cfg.Shards.Of(cp.Group)
		if c.shards[p] == nil {
			return // another instance's group
		}
		c.restores.saw(p, groupPartition{cp.Group, cp.TopicPartition}, offset)
	}
	if _, ours := c.emittedHere[cp.Group]; ours {
		return
	}
	c.emitted.Load(cp.Group, cp.TopicPartition, cp.UpstreamOffset, cp.DownstreamOffset)
}

// sharded reports whether checkpoint state is kept per owned shard.
func (c *Checkpointer) sharded() bool { return c.cfg.CheckpointLog != nil }

// ShardAssigned starts the replay of a commit-source partition.
func (c *Checkpointer) ShardAssigned(p int32) { c.cfg.Shards.Assign(p) }

// ShardRevoked forgets the groups of a partition another instance now owns.
func (c *Checkpointer) ShardRevoked(p int32) { c.cfg.Shards.Revoke(p) }

func (c *Checkpointer) assigned(p int32, epoch uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropShard(p)
	sh := &shard{groups: make(map[string]struct{}), restored: !c.sharded()}
	c.shards[p] = sh
	if c.sharded() {
		c.restores.start(p, epoch)
		select {
		case c.restoreWake <- struct{}{}:
		default:
		}
	}
}

func (c *Checkpointer) revoked(p int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropShard(p)
}

// ShardCaughtUp ends the replay of a partition: from now on its groups are
// decided on every change, and all of them are decided once now (or once
// its checkpoints are restored). Deciding only after the replay keeps a
// compacted log's older duplicates from being taken for a rewind of the
// group.
func (c *Checkpointer) ShardCaughtUp(ctx context.Context, p int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sh := c.shards[p]
	if sh == nil {
		return
	}
	sh.caughtUp = true
	c.maybeLive(ctx, sh)
}

// maybeLive makes a shard live once it is caught up and restored, and
// decides its groups. The caller holds c.mu.
func (c *Checkpointer) maybeLive(ctx context.Context, sh *shard) {
	if sh.live || !sh.caughtUp || !sh.restored {
		return
	}
	sh.live = true
	if c.gateOpen.Load() {
		for group := range sh.groups {
			c.evaluateGroup(ctx, group)
		}
	}
}

// RunRestore restores, until ctx ends, the checkpoint state of the shards
// assigned to this instance from the CheckpointLog: one read of the topic
// for all the shards waiting, before any of their groups is decided. It
// returns at once without a CheckpointLog.
func (c *Checkpointer) RunRestore(ctx context.Context) error {
	if !c.sharded() {
		<-ctx.Done()
		return nil
	}
	runRestores(ctx, c.restoreWake, c.cfg.RestoreRetry, c.restoreOnce)
	return nil
}

// restoreOnce reads the checkpoints topic once for every shard waiting and
// reports whether the read succeeded.
func (c *Checkpointer) restoreOnce(ctx context.Context) bool {
	c.mu.Lock()
	want := c.restores.take()
	c.mu.Unlock()
	if len(want) == 0 {
		return true
	}
	began := time.Now()
	t := newRestoreTarget[translate.Checkpoint](want)
	err := c.cfg.CheckpointLog.ReadCheckpoints(ctx, t.keepKey(c.cfg.Shards), func(rec envelope.Record) {
		cp, ok := decodeCheckpointRecord(rec)
		if !ok || !t.keep(c.cfg.Shards.Of(cp.Group)) {
			return
		}
		t.add(groupPartition{cp.Group, cp.TopicPartition}, rec.Offset,
			translate.Checkpoint{Upstream: cp.UpstreamOffset, Downstream: cp.DownstreamOffset})
	})
	if err != nil {
		if ctx.Err() == nil {
			c.cfg.Logger.Error("restoring the checkpoints of newly owned shards failed; their groups wait",
				"shards", len(want), "retry_in", c.cfg.RestoreRetry, "error", err)
		}
		c.mu.Lock()
		c.restores.release(want)
		c.mu.Unlock()
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	loaded := 0
	for key, r := range t.found {
		p := c.cfg.Shards.Of(key.group)
		// Skipped: a shard revoked or assigned again meanwhile, and a
		// record older than one the tail applied.
		if waits, newer := c.restores.current(p, want[p], key, r.offset); !waits || !newer {
			continue
		}
		if _, ours := c.emittedHere[key.group]; ours {
			continue
		}
		c.emitted.Load(key.group, key.tp, r.value.Upstream, r.value.Downstream)
		loaded++
	}
	for p, epoch := range want {
		if st := c.restores[p]; st == nil || st.epoch != epoch {
			continue
		}
		delete(c.restores, p)
		if sh := c.shards[p]; sh != nil {
			sh.restored = true
			c.maybeLive(ctx, sh)
		}
	}
	c.cfg.Logger.Info("restored the checkpoints of newly owned shards", "shards", len(want), "pairs", loaded,
		"took", time.Since(began).Round(time.Millisecond))
	return true
}

func (c *Checkpointer) dropShard(p int32) {
	delete(c.restores, p)
	sh := c.shards[p]
	if sh == nil {
		return
	}
	for group := range sh.groups {
		c.commits.ForEachOf(group, func(tp messages.TopicPartition, _ translate.Commit) {
			delete(c.undecided, groupPartition{group, tp})
			delete(c.refresh, groupPartition{group, tp})
			delete(c.syncDecided, groupPartition{group, tp})
		})
		c.commits.DeleteGroup(group)
		delete(c.groupShard, group)
		delete(c.emittedHere, group)
	}
	delete(c.shards, p)
	if c.sharded() {
		ofShard := func(group string) bool { return c.cfg.Shards.Of(group) == p }
		c.emitted.DeleteGroups(ofShard)
		if f, ok := c.cfg.Emitter.(interface{ Forget(func(string) bool) int }); ok {
			f.Forget(ofShard)
		}
	}
}

// SourceCommit applies a group's commit (or its deletion) read from shard p.
func (c *Checkpointer) SourceCommit(ctx context.Context, p int32, rec messages.OffsetsRecord, at time.Time) {
	if rec.Kind != messages.OffsetCommitRecord || !c.cfg.Groups.Match(rec.Group) {
		return
	}
	c.cfg.Observer.SourceCommitRead(ctx, rec, at)
	c.mu.Lock()
	defer c.mu.Unlock()
	sh := c.shards[p]
	if sh == nil {
		// A record for a partition we were never told we own: the reader
		// sends Assigned first, so this is a reader bug; keep going safely.
		c.cfg.Logger.Warn("commit record from an unassigned partition", "partition", p, "group", rec.Group)
		sh = &shard{groups: make(map[string]struct{}), restored: !c.sharded()}
		c.shards[p] = sh
	}
	if c.sharded() && c.cfg.Shards.Of(rec.Group) != p && !c.misplaced {
		// The checkpoints and target commits of this group would be kept
		// by the wrong instance: say so once.
		c.misplaced = true
		c.cfg.Logger.Error("a group's commits came from another partition than its shard: ownership of its checkpoints and target commits is wrong",
			"group", rec.Group, "partition", p, "shard", c.cfg.Shards.Of(rec.Group))
	}
	sh.groups[rec.Group] = struct{}{}
	c.groupShard[rec.Group] = p
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		annotateCommit(span, &rec)
	}
	// A commit is decided now (or after the replay): a refresh queued
	// by an earlier sync has nothing left to do.
	delete(c.refresh, groupPartition{rec.Group, rec.TopicPartition})
	if rec.Tombstone {
		c.commits.Delete(rec.Group, rec.TopicPartition)
		delete(c.undecided, groupPartition{rec.Group, rec.TopicPartition})
		return
	}
	// A negative offset means "no offset" and deletes the entry (Commits.Set).
	c.commits.Set(rec.Group, rec.TopicPartition, translate.Commit{Offset: rec.Offset, Metadata: rec.Metadata, Time: at})
	if rec.Offset < 0 {
		delete(c.undecided, groupPartition{rec.Group, rec.TopicPartition})
		return
	}
	if sh.live && c.gateOpen.Load() {
		c.evaluate(ctx, rec.Group, rec.TopicPartition)
		return
	}
	if span := trace.SpanFromContext(ctx); span.SpanContext().IsSampled() {
		c.undecided[groupPartition{rec.Group, rec.TopicPartition}] = span.SpanContext()
		c.tracer = span.TracerProvider()
	}
}

// annotateCommit puts rec on the span of the message that carried it; out
// of line to keep SourceCommit's frame small (see addDecisionEvent).
//
//go:noinline
func annotateCommit(span trace.Span, rec *messages.OffsetsRecord) {
	span.SetAttributes(GroupKey.String(rec.Group), UpstreamTopicKey.String(rec.TopicPartition.Topic),
		PartitionKey.Int(int(rec.TopicPartition.Partition)), UpstreamOffsetKey.Int64(rec.Offset))
}

func (c *Checkpointer) isLive(group string) bool {
	p, ok := c.groupShard[group]
	if !ok {
		return false
	}
	sh := c.shards[p]
	return sh != nil && sh.live
}

func (c *Checkpointer) maybeOpenGate(ctx context.Context) {
	if c.gateOpen.Load() || !c.syncsRead || !c.checkpointsRead {
		return
	}
	c.gateOpen.Store(true)
	c.index.OpenGate()
	c.cfg.Observer.GateOpened()
	c.cfg.Logger.Info("translation gate opened: offset syncs and checkpoints read to end",
		"partitions_indexed", c.index.Partitions(), "groups", c.groupCount())
	for group := range c.groupShard {
		if c.isLive(group) {
			c.evaluateGroup(ctx, group)
		}
	}
}

func (c *Checkpointer) groupCount() int {
	groups, _ := c.commits.Len()
	return groups
}

func (c *Checkpointer) evaluateGroup(ctx context.Context, group string) {
	var parts []messages.TopicPartition
	c.commits.ForEachOf(group, func(tp messages.TopicPartition, _ translate.Commit) { parts = append(parts, tp) })
	for _, tp := range parts {
		if sc, ok := c.undecided[groupPartition{group, tp}]; ok {
			delete(c.undecided, groupPartition{group, tp})
			c.decideLate(ctx, sc, group, tp)
			continue
		}
		c.evaluate(ctx, group, tp)
	}
}

// decideLate decides a commit whose record's span has ended, in a `decide`
// span that is that span's child: the decision event and the checkpoint's
// send span stay in the commit's trace.
func (c *Checkpointer) decideLate(ctx context.Context, commit trace.SpanContext, group string, tp messages.TopicPartition) {
	ctx = trace.ContextWithSpanContext(ctx, commit)
	ctx, span := c.tracer.Tracer(messages.TracerScope).Start(ctx, "decide", trace.WithSpanKind(trace.SpanKindInternal))
	defer span.End()
	if span.IsRecording() {
		span.SetAttributes(GroupKey.String(group), UpstreamTopicKey.String(tp.Topic), PartitionKey.Int(int(tp.Partition)))
	}
	c.evaluate(ctx, group, tp)
}

// evaluate decides one (group, upstream partition) and emits its checkpoint.
// The decision and its reason go to the span in ctx as a DecisionEvent. The
// caller holds c.mu.
func (c *Checkpointer) evaluate(ctx context.Context, group string, tp messages.TopicPartition) {
	cm, ok := c.commits.Get(group, tp)
	if !ok {
		c.skip(ctx, group, tp, translate.ReasonNoCommit, -1)
		return
	}
	topic := c.topicInfo(tp.Topic)
	if !topic.checkpointed {
		c.skip(ctx, group, tp, translate.ReasonFilteredTopic, cm.Offset)
		return
	}
	tr := c.index.Translate(tp, cm.Offset)
	if tr.Outcome != translate.Translated {
		c.skip(ctx, group, tp, tr.Reason, cm.Offset)
		return
	}
	renamed := messages.TopicPartition{Topic: topic.downstream, Partition: tp.Partition}
	if emit, reason := c.emitted.Decide(group, renamed, cm.Offset, tr.Downstream); !emit {
		c.skip(ctx, group, tp, reason, cm.Offset)
		return
	}
	cp := messages.Checkpoint{
		Group:            group,
		TopicPartition:   renamed,
		UpstreamOffset:   cm.Offset,
		DownstreamOffset: tr.Downstream,
		Metadata:         cm.Metadata,
	}
	if c.cfg.Veto != nil && c.cfg.Veto(ctx, cp) {
		c.skip(ctx, group, tp, translate.ReasonVetoed, cm.Offset)
		return
	}
	c.emittedHere[group] = struct{}{}
	recordDecision(ctx, group, tp, renamed, DecisionEmitted, "", cm.Offset, tr.Downstream)
	c.cfg.Emitter.Emit(ctx, cp, cm.Time)
	c.cfg.Observer.CheckpointEmitted(ctx, cp, cm.Time)
}

// topicInfo returns the cached facts about an upstream topic. The caller
// holds c.mu.
func (c *Checkpointer) topicInfo(topic string) topicInfo {
	if ti, ok := c.topics[topic]; ok {
		return ti
	}
	ti := topicInfo{checkpointed: c.cfg.Topics.Match(topic)}
	if ti.checkpointed {
		ti.downstream = messages.DownstreamTopic(c.cfg.Policy, c.cfg.SourceAlias, c.cfg.TargetAlias, topic)
	}
	c.topics[topic] = ti
	return ti
}

func (c *Checkpointer) skip(ctx context.Context, group string, tp messages.TopicPartition, reason translate.Reason, upstream int64) {
	recordDecision(ctx, group, tp, messages.TopicPartition{}, DecisionSkipped, reason.String(), upstream, -1)
	c.cfg.Observer.CheckpointSkipped(ctx, group, tp, upstream, reason)
}
