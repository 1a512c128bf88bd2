package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sort"
	"strconv"
	"sync"
	"time"
	"unique"

	"github.com/ThreeDotsLabs/watermill/message"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/checkpointd/checkpointd/handlers/filter"
	"github.com/checkpointd/checkpointd/handlers/groupsync"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

// OffsetSyncerConfig configures the commit stage.
type OffsetSyncerConfig struct {
	Target targetgroup.Groups
	// Groups selects the groups to sync (groups/groups.exclude): the topic
	// also holds checkpoints other writers (Java MM2) made for other groups.
	// Nil syncs every group.
	Groups filter.Matcher
	// RetryInterval is how long a group that could not be synced (active on
	// the target, errors, missing topics) waits before the next attempt:
	// sync.group.offsets.interval.seconds. New checkpoints are committed at once.
	RetryInterval time.Duration
	// BatchSize is how many due groups one step of a round covers: one
	// describe, one offset fetch and one topic lookup for all of them.
	BatchSize int
	// CommitConcurrency bounds the commits in flight at once, one group each.
	CommitConcurrency int
	// FollowRewinds moves an idle target group back when its source group
	// went back (reset, or deleted and re-created lower) and the target's
	// offset is still the one checkpointd last committed there
	// (checkpointd.sync.follow.source.rewinds). It needs CommitLog; without
	// one it is off.
	FollowRewinds bool
	// CommitLog keeps what checkpointd committed, on the target cluster, so
	// that the knowledge survives restarts and shard hand-overs.
	CommitLog CommitLog
	// Shards is which groups this instance commits: only the owned shards'
	// groups are kept and committed. Nil: one shard, owned while the
	// reader of HandleCheckpoint has its partition assigned (a commit lease:
	// Assigned, the replay, CaughtUp).
	Shards *Shards
	// CheckpointLog, with Shards, restores a newly owned shard's pending
	// checkpoints from the checkpoints topic; HandleCheckpoint then gets
	// the topic's live tail (read whole by every instance) and keeps the
	// owned groups' records. Nil: the reader's replay is the restore.
	CheckpointLog CheckpointLog
	// Fence, when set, is asked just before each batch of commits whether
	// this instance still owns the batch's shards; nothing is committed
	// when it says no or cannot tell.
	Fence Fence
	// Propagator reads the trace context a checkpoint record carries, for
	// the commit span's links. Nil: W3C Trace Context.
	Propagator propagation.TextMapPropagator
	// Observer hears the outcome of every (group, partition) attempt
	// (Observer.TargetResult). Nil: NopObserver.
	Observer Observer
	Logger   *slog.Logger
}

// CommitLog records which offsets checkpointd committed into target groups.
// A record lost (a crash between a commit and its record) only makes the
// commit stage more careful: the target offset then no longer matches, and
// the group is not moved back.
type CommitLog interface {
	// Load returns, per group and target partition, what checkpointd last
	// committed: the offset, and the source commit it translated; only of
	// the groups keep accepts (all with a nil keep).
	Load(ctx context.Context, keepKey func(key []byte) bool, keep func(group string) bool) (map[string]map[messages.TopicPartition]targetgroup.Checkpoint, error)
	// Append records offsets about to be committed (the downstream offset
	// and metadata of each checkpoint), and returns once they are written.
	Append(ctx context.Context, commits []messages.Checkpoint) error
}

// Defaults of OffsetSyncerConfig.
const (
	DefaultSyncBatchSize     = 500
	DefaultCommitConcurrency = 64
)

// OffsetSyncer is the commit stage: it keeps the latest checkpoint of every
// (group, target partition) not yet settled and commits them into idle target
// groups. Each instance runs one for the shards of groups it owns (Shards);
// a shard's state is restored from the compacted checkpoints topic and the
// CommitLog when the shard is assigned, before any of its groups is decided.
type OffsetSyncer struct {
	cfg         OffsetSyncerConfig
	wake        chan struct{}
	restoreWake chan struct{}
	// lease: ownership follows the reader's assignment (no Shards given).
	lease bool

	mu sync.Mutex
	// tailRead: the checkpoints reader reached the end it saw at start
	// (with a lease: the replay of the current lease).
	tailRead bool
	pending  map[string]*pendingGroup
	// shards are the owned shards; a group is decided only when its
	// shard is ready (restored).
	shards   map[int32]*syncShard
	restores restoreSet
	// ours is what checkpointd last committed per group and partition, with
	// FollowRewinds: loaded from the CommitLog for each shard as it is
	// restored, then kept up to date by the commits.
	ours map[string]map[messages.TopicPartition]targetgroup.Checkpoint
}

// syncShard is an owned shard of the commit stage.
type syncShard struct {
	epoch uint64
	ready bool // restored: its groups may be decided
}

type pendingGroup struct {
	shard       int32
	checkpoints map[messages.TopicPartition]pendingCheckpoint
	changed     bool      // a checkpoint arrived since the last attempt
	retryAt     time.Time // earliest next attempt when nothing changed
	lastReason  targetgroup.Reason
}

// pendingCheckpoint is kept small (48 bytes): a first start queues one per
// (group, partition), 100,000 at 1k groups × 100 partitions.
type pendingCheckpoint struct {
	targetgroup.Checkpoint
	atMs          int64              // record timestamp of the checkpoint, Unix ms; 0 if none
	committedAtMs int64              // source commit time from the record's header, Unix ms; 0 if none
	trace         *trace.SpanContext // the trace context the record carries; nil if none
}

func (p pendingCheckpoint) at() time.Time          { return unixMilli(p.atMs) }
func (p pendingCheckpoint) committedAt() time.Time { return unixMilli(p.committedAtMs) }

// span is the trace context the record carries, invalid if none.
func (p pendingCheckpoint) span() trace.SpanContext {
	if p.trace == nil {
		return trace.SpanContext{}
	}
	return *p.trace
}

// unixMilli is time.UnixMilli with 0 as the zero time.
func unixMilli(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// same reports whether two pending checkpoints came from the same record.
func (p pendingCheckpoint) same(q pendingCheckpoint) bool {
	return p.Checkpoint == q.Checkpoint && p.atMs == q.atMs && p.committedAtMs == q.committedAtMs && p.span().Equal(q.span())
}

// NewOffsetSyncer makes an idle syncer; it starts working when the commit
// lease's replay has caught up.
func NewOffsetSyncer(cfg OffsetSyncerConfig) *OffsetSyncer {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.RetryInterval <= 0 {
		cfg.RetryInterval = time.Minute
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultSyncBatchSize
	}
	if cfg.CommitConcurrency <= 0 {
		cfg.CommitConcurrency = DefaultCommitConcurrency
	}
	if cfg.Observer == nil {
		cfg.Observer = NopObserver{}
	}
	if cfg.Propagator == nil {
		cfg.Propagator = propagation.TraceContext{}
	}
	if cfg.CommitLog == nil {
		cfg.FollowRewinds = false
	}
	s := &OffsetSyncer{cfg: cfg, wake: make(chan struct{}, 1), restoreWake: make(chan struct{}, 1),
		pending: make(map[string]*pendingGroup), shards: make(map[int32]*syncShard), restores: make(restoreSet),
		ours: make(map[string]map[messages.TopicPartition]targetgroup.Checkpoint)}
	if s.cfg.Shards == nil {
		s.cfg.Shards = NewShards(nil)
		s.cfg.CheckpointLog = nil
		s.lease = true
	}
	s.cfg.Shards.listen(s)
	return s
}

// assigned starts a shard: its state is restored before it is decided.
func (s *OffsetSyncer) assigned(p int32, epoch uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropShard(p)
	s.shards[p] = &syncShard{epoch: epoch}
	if s.lease {
		s.tailRead = false // the lease's replay comes first
		return
	}
	s.restores.start(p, epoch)
	pokeChan(s.restoreWake)
}

func (s *OffsetSyncer) revoked(p int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropShard(p)
}

// dropShard forgets the groups of shard p. The caller holds s.mu.
func (s *OffsetSyncer) dropShard(p int32) {
	delete(s.shards, p)
	delete(s.restores, p)
	for group, g := range s.pending {
		if g.shard == p {
			delete(s.pending, group)
		}
	}
	for group := range s.ours {
		if s.cfg.Shards.Of(group) == p {
			delete(s.ours, group)
		}
	}
}

func pokeChan(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// HandleCheckpoint is the Watermill handler over the checkpoints topic.
func (s *OffsetSyncer) HandleCheckpoint(msg *message.Message) error {
	if ctl, _, _, ok := envelope.ControlOf(msg); ok {
		s.control(ctl)
		return nil
	}
	// A reader may batch checkpoints (kafkalog.ReaderConfig.BatchRecords):
	// each record then carries its own headers; a lone record's are the
	// message's metadata.
	recs, err := envelope.Records(msg)
	if err != nil {
		return fmt.Errorf("checkpoint message: %w", err)
	}
	batch := envelope.IsBatch(msg)
	queued := false
	for _, rec := range recs {
		headers := rec.Headers
		if !batch {
			headers = msg.Metadata
		}
		queued = s.queueCheckpoint(msg.Context(), rec, headers, !batch) || queued
	}
	if queued {
		s.poke()
	}
	return nil
}

// control applies a control message of the checkpoints reader. With a lease
// the reader's assignment is the ownership of the one shard; else it is the
// tail every instance reads, and only its first CaughtUp matters.
func (s *OffsetSyncer) control(ctl envelope.Control) {
	if s.lease {
		switch ctl {
		case envelope.Assigned:
			s.cfg.Shards.Assign(0)
		case envelope.Revoked:
			s.cfg.Shards.Revoke(0)
		case envelope.CaughtUp:
			s.mu.Lock()
			s.tailRead = true
			if sh := s.shards[0]; sh != nil {
				s.cfg.Logger.Info("commit stage caught up with the checkpoints topic", "groups_pending", len(s.pending))
				if s.cfg.FollowRewinds {
					s.restores.start(0, sh.epoch) // the commit log is still to read
					pokeChan(s.restoreWake)
				} else {
					sh.ready = true
				}
			}
			s.mu.Unlock()
			s.poke()
		}
		return
	}
	if ctl == envelope.CaughtUp {
		s.mu.Lock()
		if !s.tailRead {
			s.cfg.Logger.Info("commit stage read the checkpoints topic to its end", "groups_pending", len(s.pending))
		}
		s.tailRead = true
		s.mu.Unlock()
		s.poke()
	}
}

// queueCheckpoint makes one checkpoint record the group's pending target
// offset for its partition and reports whether the commit stage is live
// (the caller then wakes it). annotate puts the checkpoint on the span in
// ctx, which is the record's own.
func (s *OffsetSyncer) queueCheckpoint(ctx context.Context, rec envelope.Record, headers map[string]string, annotate bool) bool {
	if rec.Tombstone() {
		s.cfg.Logger.Warn("skipping tombstone in checkpoints topic", "topic", rec.Topic, "offset", rec.Offset)
		return false
	}
	if !s.cfg.Shards.MayHoldKey(rec.Key) {
		return false // another instance commits it: not even decoded
	}
	cp, err := messages.DecodeCheckpoint(rec.Key, rec.Value)
	if err != nil {
		s.cfg.Logger.Warn("skipping malformed checkpoint", "topic", rec.Topic, "offset", rec.Offset, "error", err)
		return false
	}
	if s.cfg.Groups != nil && !s.cfg.Groups.Match(cp.Group) {
		return false
	}
	shard, _, owned := s.cfg.Shards.Owner(cp.Group)
	if !owned {
		return false // another instance commits it
	}
	if span := trace.SpanFromContext(ctx); annotate && span.IsRecording() {
		annotateCheckpoint(span, cp)
	}
	pc := s.pendingOf(cp, rec, headers)
	s.mu.Lock()
	defer s.mu.Unlock()
	sh := s.shards[shard]
	if sh == nil {
		return false // revoked since Owner answered
	}
	s.restores.saw(shard, groupPartition{cp.Group, cp.TopicPartition}, rec.Offset)
	s.put(shard, cp.Group, cp.TopicPartition, pc)
	return s.tailRead && sh.ready
}

// put makes pc the pending checkpoint of (group, tp). The caller holds s.mu.
func (s *OffsetSyncer) put(shard int32, group string, tp messages.TopicPartition, pc pendingCheckpoint) {
	g := s.pending[group]
	if g == nil {
		g = &pendingGroup{shard: shard, checkpoints: make(map[messages.TopicPartition]pendingCheckpoint)}
		s.pending[group] = g
	}
	if _, ok := g.checkpoints[tp]; !ok {
		// The decoded topic is a new string per record; a first start
		// queues 100,000 of them, over a handful of topics.
		tp.Topic = unique.Make(tp.Topic).Value()
	}
	g.checkpoints[tp] = pc
	g.changed = true
}

// pendingOf is the pending checkpoint of cp, read from rec with headers.
func (s *OffsetSyncer) pendingOf(cp messages.Checkpoint, rec envelope.Record, headers map[string]string) pendingCheckpoint {
	pc := pendingCheckpoint{Checkpoint: targetgroup.Checkpoint{Downstream: cp.DownstreamOffset, Upstream: cp.UpstreamOffset, Metadata: cp.Metadata}}
	if !rec.Timestamp.IsZero() {
		pc.atMs = rec.Timestamp.UnixMilli()
	}
	// The context of the span that wrote the checkpoint (its creation
	// context), which the commit span links to.
	if sc := trace.SpanContextFromContext(
		s.cfg.Propagator.Extract(context.Background(), propagation.MapCarrier(headers))); sc.IsValid() {
		pc.trace = &sc
	}
	if ms, err := strconv.ParseInt(headers[envelope.HeaderCommitTime], 10, 64); err == nil && ms > 0 {
		pc.committedAtMs = ms
	}
	return pc
}

// annotateCheckpoint puts cp on the span of the message that carried it;
// out of line to keep HandleCheckpoint's frame small (see addDecisionEvent).
//
//go:noinline
func annotateCheckpoint(span trace.Span, cp messages.Checkpoint) {
	span.SetAttributes(GroupKey.String(cp.Group), DownstreamTopicKey.String(cp.TopicPartition.Topic),
		PartitionKey.Int(int(cp.TopicPartition.Partition)),
		UpstreamOffsetKey.Int64(cp.UpstreamOffset), DownstreamOffsetKey.Int64(cp.DownstreamOffset))
}

func (s *OffsetSyncer) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run syncs until ctx ends: at once when checkpoints arrive, and every
// RetryInterval for groups that could not be synced. It restores newly
// owned shards meanwhile.
func (s *OffsetSyncer) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	if !s.lease {
		wg.Go(func() { runRestores(ctx, s.restoreWake, s.cfg.RetryInterval, s.restoreOnce) })
	}
	tick := time.NewTicker(s.cfg.RetryInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.wake:
		case <-tick.C:
		}
		s.Round(ctx, time.Now())
	}
}

// Round makes one sync attempt for every group that is due, BatchSize
// groups at a time.
//
// With a lease, the one shard's commit log is read here, before its first
// round; sharded, Run restores shards on the side, so that a shard being
// restored holds up no other.
func (s *OffsetSyncer) Round(ctx context.Context, now time.Time) {
	if s.lease {
		s.restoreOnce(ctx)
	}
	due := s.dueGroups(now)
	began := time.Now()
	for start := 0; start < len(due) && ctx.Err() == nil; start += s.cfg.BatchSize {
		s.syncBatch(ctx, due[start:min(start+s.cfg.BatchSize, len(due))], now)
	}
	if len(due) > 0 {
		s.cfg.Logger.Debug("commit round", "groups", len(due), "took", time.Since(began).Round(time.Millisecond))
	}
}

// minRestoreRead is the least time a restore read gets before it is given
// up and tried again.
const minRestoreRead = 30 * time.Second

// restoreOnce reads back, for every shard waiting, the last checkpoint of
// each of its pairs (without a lease: with a lease the replay did) and what
// checkpointd committed into its groups (with FollowRewinds), then makes
// the shards ready. Nothing of a shard is decided before: a partition
// settled without that knowledge would not be moved back later. It reports
// whether the reads succeeded.
func (s *OffsetSyncer) restoreOnce(ctx context.Context) bool {
	s.mu.Lock()
	want := s.restores.take()
	s.mu.Unlock()
	if len(want) == 0 {
		return true
	}
	// Bounded: a reader waits for a topic it cannot see or read, and the
	// shard would wait with it, silently.
	readCtx, cancel := context.WithTimeout(ctx, max(s.cfg.RetryInterval, minRestoreRead))
	defer cancel()
	keep := func(group string) bool { _, ok := want[s.cfg.Shards.Of(group)]; return ok }
	began := time.Now()
	found := newRestoreTarget[pendingCheckpoint](want)
	// The two reads are independent: side by side, a hand-over waits for
	// the longer one only.
	var ours map[string]map[messages.TopicPartition]targetgroup.Checkpoint
	var logErr error
	var wg sync.WaitGroup
	if s.cfg.FollowRewinds {
		wg.Go(func() { ours, logErr = s.cfg.CommitLog.Load(readCtx, found.keepKey(s.cfg.Shards), keep) })
	}
	var readErr error
	if s.cfg.CheckpointLog != nil {
		readErr = s.cfg.CheckpointLog.ReadCheckpoints(readCtx, found.keepKey(s.cfg.Shards), func(rec envelope.Record) {
			cp, ok := decodeCheckpointRecord(rec)
			if !ok || !keep(cp.Group) || (s.cfg.Groups != nil && !s.cfg.Groups.Match(cp.Group)) {
				return
			}
			found.add(groupPartition{cp.Group, cp.TopicPartition}, rec.Offset, s.pendingOf(cp, rec, rec.Headers))
		})
	}
	wg.Wait()
	if readErr != nil || logErr != nil {
		s.mu.Lock()
		s.restores.release(want)
		s.mu.Unlock()
	}
	if readErr != nil {
		if ctx.Err() == nil {
			s.cfg.Logger.Error("restoring the checkpoints of newly owned shards failed; their groups wait",
				"shards", len(want), "retry_in", s.cfg.RetryInterval, "error", readErr)
		}
		return false
	}
	if logErr != nil {
		if ctx.Err() == nil {
			s.cfg.Logger.Error("reading what checkpointd committed into target groups failed; target groups are synced once it can be read",
				"shards", len(want), "retry_in", s.cfg.RetryInterval, "error", logErr)
		}
		return false
	}
	s.mu.Lock()
	restored := 0
	for key, r := range found.found {
		p := s.cfg.Shards.Of(key.group)
		if waits, newer := s.restores.current(p, want[p], key, r.offset); !waits || !newer {
			continue
		}
		s.put(p, key.group, key.tp, r.value)
		restored++
	}
	ready := 0
	for p, epoch := range want {
		st, sh := s.restores[p], s.shards[p]
		if st == nil || st.epoch != epoch || sh == nil || sh.epoch != epoch {
			continue
		}
		delete(s.restores, p)
		sh.ready = true
		ready++
	}
	for group, g := range ours {
		p := s.cfg.Shards.Of(group)
		if sh := s.shards[p]; sh != nil && sh.epoch == want[p] {
			s.ours[group] = g
		}
	}
	s.mu.Unlock()
	s.cfg.Logger.Info("restored newly owned shards of the commit stage", "shards", ready, "pairs", restored,
		"groups_committed_before", len(ours), "took", time.Since(began).Round(time.Millisecond))
	s.poke()
	return true
}

// syncBatch syncs a batch of due groups: it describes them, reads the
// offsets of the writable ones and the partitions of their topics in one
// call each, decides every group, and commits the groups with something to
// write in parallel.
func (s *OffsetSyncer) syncBatch(ctx context.Context, batch []work, now time.Time) {
	states := s.describe(ctx, batch)
	var writable []work
	for _, w := range batch {
		if states[w.group].Writable() {
			writable = append(writable, w)
		}
	}
	current, existing, unreadable := s.readTargets(ctx, writable)
	var commits []commitJob
	for _, w := range batch {
		if err := unreadable[w.group]; err != nil {
			s.settle(w, allReason(w, targetgroup.Retriable), now)
			continue
		}
		plan := groupsync.Decide(s.input(w, states[w.group], current[w.group], existing))
		if len(plan.Commit) == 0 {
			s.settle(w, plan.Skipped, now)
			continue
		}
		commits = append(commits, commitJob{work: w, plan: plan, seen: current[w.group]})
	}
	if commits = s.stillOwned(commits); len(commits) == 0 || !s.writeAhead(ctx, commits, now) {
		return
	}
	s.confirmRewinds(ctx, commits)
	if !s.fenced(ctx, commits, now) {
		return
	}
	s.commitAll(ctx, commits, now)
}

// stillOwned keeps the jobs whose shard is still owned under the epoch they
// were taken under: after a hand-over the new owner decides them again, and
// this round must not commit over what it does.
func (s *OffsetSyncer) stillOwned(jobs []commitJob) []commitJob {
	out := jobs[:0]
	for _, j := range jobs {
		if s.cfg.Shards.Held(j.shard, j.epoch) {
			out = append(out, j)
		}
	}
	return out
}

// fenced asks the Fence, just before committing, whether the jobs' shards
// are still this instance's at Kafka, and reports whether to go on. When
// they are not, or Kafka cannot tell, nothing is committed: the groups are
// retried, by this instance if it still owns them once it knows, else by
// their new owner.
func (s *OffsetSyncer) fenced(ctx context.Context, jobs []commitJob, now time.Time) bool {
	if s.cfg.Fence == nil || len(jobs) == 0 {
		return true
	}
	seen := make(map[int32]bool)
	var shards []int32
	for _, j := range jobs {
		if !seen[j.shard] {
			seen[j.shard] = true
			shards = append(shards, j.shard)
		}
	}
	sort.Slice(shards, func(i, k int) bool { return shards[i] < shards[k] })
	err := s.cfg.Fence.Verify(ctx, shards)
	if err == nil {
		return true
	}
	s.cfg.Logger.Warn("not committing: this instance's ownership of the shards could not be confirmed", "shards", len(shards),
		"groups", len(jobs), "error", err)
	for _, j := range jobs {
		s.notConfirmed(j, now)
	}
	return false
}

// errShardMoved stops a commit whose shard changed hands while it waited.
var errShardMoved = errors.New("the group's shard changed hands: its new owner commits it")

// fenceRetry is how soon groups whose shard could not be confirmed are
// tried again: a rebalance or a coordinator moving takes a moment, and the
// shard is either confirmed then or revoked.
const fenceRetry = 200 * time.Millisecond

// notConfirmed settles a job whose shard the fence did not confirm as
// retriable, to be tried again after fenceRetry.
func (s *OffsetSyncer) notConfirmed(j commitJob, now time.Time) {
	outcome := allReason(j.work, targetgroup.Retriable)
	maps.Copy(outcome, j.plan.Skipped)
	s.settle(j.work, outcome, now)
	s.mu.Lock()
	if g := s.pending[j.group]; g != nil {
		g.retryAt = now.Add(fenceRetry)
	}
	s.mu.Unlock()
	time.AfterFunc(fenceRetry, s.poke)
}

// confirmRewinds reads again, after the write-ahead, the offsets of the
// groups about to be moved back, and keeps a rewind only where the offset is
// still the one decided on: a consumer that committed (and left) in between
// is not moved back.
func (s *OffsetSyncer) confirmRewinds(ctx context.Context, jobs []commitJob) {
	var groups []string
	for _, j := range jobs {
		if len(j.plan.Rewinds) > 0 {
			groups = append(groups, j.group)
		}
	}
	if len(groups) == 0 {
		return
	}
	current, failed := s.cfg.Target.Offsets(ctx, groups)
	for _, j := range jobs {
		for tp := range j.plan.Rewinds {
			reason := targetgroup.Reason("")
			cur, ok := current[j.group][tp]
			switch {
			case failed[j.group] != nil || current[j.group] == nil:
				reason = targetgroup.Retriable
			case !ok || cur != j.seen[tp]:
				reason = targetgroup.TargetAheadMovedByConsumer
			}
			if reason != "" {
				delete(j.plan.Commit, tp)
				delete(j.plan.Rewinds, tp)
				j.plan.Skipped[tp] = reason
			}
		}
	}
}

// writeAhead records, with FollowRewinds, the offsets about to be committed
// in the CommitLog before committing them, in one write for the batch: a
// commit that then fails leaves a record the target does not match, which
// only keeps that group from being moved back. When the write fails nothing
// is committed (the groups are retried), so that the log never misses an
// offset checkpointd wrote.
func (s *OffsetSyncer) writeAhead(ctx context.Context, jobs []commitJob, now time.Time) bool {
	if !s.cfg.FollowRewinds || len(jobs) == 0 {
		return true
	}
	var planned []messages.Checkpoint
	for _, j := range jobs {
		for tp, cp := range j.plan.Commit {
			planned = append(planned, messages.Checkpoint{Group: j.group, TopicPartition: tp,
				UpstreamOffset: cp.Upstream, DownstreamOffset: cp.Downstream, Metadata: cp.Metadata})
		}
	}
	if err := s.cfg.CommitLog.Append(ctx, planned); err != nil {
		s.cfg.Logger.Error("recording the offsets to commit in the commit log failed; not committing them, retrying later",
			"groups", len(jobs), "error", err)
		for _, j := range jobs {
			outcome := allReason(j.work, targetgroup.Retriable)
			maps.Copy(outcome, j.plan.Skipped) // decided without the log: keep why
			s.settle(j.work, outcome, now)
		}
		return false
	}
	return true
}

// describe returns the target state of every group of batch; a group the
// target did not describe gets DescribeErr, never "not found".
func (s *OffsetSyncer) describe(ctx context.Context, batch []work) map[string]targetgroup.Group {
	states, err := s.cfg.Target.Describe(ctx, names(batch))
	if err != nil {
		s.cfg.Logger.Error("describing target groups failed; retrying later", "groups", len(batch), "error", err)
	}
	out := make(map[string]targetgroup.Group, len(batch))
	for _, w := range batch {
		st, ok := states[w.group]
		if err != nil || !ok {
			st = targetgroup.Group{DescribeErr: fmt.Errorf("no description of group %q: %v", w.group, err)}
		}
		out[w.group] = st
	}
	return out
}

// readTargets reads what the decision needs about writable groups: their
// committed offsets and the partitions of their topics. Groups whose offsets
// or topics could not be read are returned with the reason, and retried later.
func (s *OffsetSyncer) readTargets(ctx context.Context, writable []work) (current map[string]map[messages.TopicPartition]int64, existing map[messages.TopicPartition]bool, unreadable map[string]error) {
	if len(writable) == 0 {
		return nil, nil, nil
	}
	current, offsetErrs := s.cfg.Target.Offsets(ctx, names(writable))
	existing, topicErrs := s.cfg.Target.ExistingPartitions(ctx, topicsOfAll(writable))
	unreadable = make(map[string]error)
	for _, w := range writable {
		if err := offsetErrs[w.group]; err != nil {
			unreadable[w.group] = err
			continue
		}
		if _, ok := current[w.group]; !ok {
			unreadable[w.group] = fmt.Errorf("no offsets of group %q in the answer", w.group)
			continue
		}
		for _, topic := range topicsOf(w) {
			if err := topicErrs[topic]; err != nil {
				unreadable[w.group] = err
				break
			}
		}
	}
	// One line per batch: a coordinator that is down fails every group on it.
	if len(offsetErrs) > 0 {
		group, err := firstError(offsetErrs)
		s.cfg.Logger.Error("fetching target group offsets failed; retrying later", "groups", len(offsetErrs), "group", group, "error", err)
	}
	if len(topicErrs) > 0 {
		topic, err := firstError(topicErrs)
		s.cfg.Logger.Error("looking up target partitions failed; retrying later", "topics", len(topicErrs), "topic", topic, "error", err)
	}
	return current, existing, unreadable
}

// firstError returns the error of the first key in order, so that the log
// names the same example every time.
func firstError(errs map[string]error) (string, error) {
	keys := make([]string, 0, len(errs))
	for k := range errs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys[0], errs[keys[0]]
}

func (s *OffsetSyncer) input(w work, target targetgroup.Group, current map[messages.TopicPartition]int64, existing map[messages.TopicPartition]bool) groupsync.Input {
	in := groupsync.Input{Checkpoints: make(map[messages.TopicPartition]targetgroup.Checkpoint, len(w.checkpoints)), Target: target}
	for tp, cp := range w.checkpoints {
		in.Checkpoints[tp] = cp.Checkpoint
	}
	if target.Writable() {
		in.Current, in.Existing = current, existing
	}
	if s.cfg.FollowRewinds {
		in.FollowRewinds = true
		s.mu.Lock()
		in.Ours = maps.Clone(s.ours[w.group])
		s.mu.Unlock()
	}
	return in
}

// commitJob is one group's decided commit.
type commitJob struct {
	work
	plan groupsync.Plan
	seen map[messages.TopicPartition]int64 // the target offsets decided on
}

// commitAll runs the commits, at most CommitConcurrency at once: each waits
// a round trip to its group's coordinator, and groups on different
// coordinators, or many on one, need not wait for each other.
func (s *OffsetSyncer) commitAll(ctx context.Context, jobs []commitJob, now time.Time) {
	next := make(chan commitJob)
	var wg sync.WaitGroup
	for range min(s.cfg.CommitConcurrency, len(jobs)) {
		wg.Go(func() {
			for j := range next {
				s.commit(ctx, j, now)
			}
		})
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
}

// commit writes one group's plan and settles every partition of it.
func (s *OffsetSyncer) commit(ctx context.Context, j commitJob, now time.Time) {
	outcome := make(map[messages.TopicPartition]targetgroup.Reason, len(j.checkpoints))
	for tp, r := range j.plan.Skipped {
		outcome[tp] = r
	}
	if len(j.plan.Commit) == 0 { // every rewind of it was called off (confirmRewinds)
		s.settle(j.work, outcome, now)
		return
	}
	// Right before the request: the batch's confirmation may have gone
	// stale while the process was paused (an OwnershipCheck asks again).
	owned := func(ctx context.Context) error {
		if !s.cfg.Shards.Held(j.shard, j.epoch) {
			return errShardMoved
		}
		if s.cfg.Fence != nil {
			return s.cfg.Fence.Verify(ctx, []int32{j.shard})
		}
		return nil
	}
	switch err := owned(ctx); {
	case errors.Is(err, errShardMoved):
		return // the shard's new owner decides it
	case err != nil:
		s.notConfirmed(j, now)
		return
	}
	// And again right before the request leaves, after any wait for a
	// connection: a process paused there must not send a plan from before
	// the pause over the new owner's commits (TestShardedHandover's SIGSTOP
	// caught exactly that).
	cctx := targetgroup.WithBeforeSend(ctx, owned)
	res, err := s.cfg.Target.Commit(targetgroup.WithCommitLinks(cctx, commitLinks(j.work, j.plan.Commit)), j.group, j.plan.Commit)
	if err != nil {
		s.cfg.Logger.Error("committing target group offsets failed; retrying later", "group", j.group, "error", err)
	}
	written := make(map[messages.TopicPartition]targetgroup.Checkpoint)
	for tp, cp := range j.plan.Commit {
		r, ok := res[tp]
		if !ok {
			r = targetgroup.Retriable
		}
		if r == targetgroup.Committed {
			written[tp] = cp
			if j.plan.Rewinds[tp] {
				r = targetgroup.Rewound
			}
		}
		outcome[tp] = r
	}
	s.settle(j.work, outcome, now)
	s.remember(j.work, written)
}

// remember keeps what was just committed into group, for FollowRewinds (the
// CommitLog has it already: writeAhead).
func (s *OffsetSyncer) remember(w work, written map[messages.TopicPartition]targetgroup.Checkpoint) {
	if !s.cfg.FollowRewinds || len(written) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sh := s.shards[w.shard]; sh == nil || sh.epoch != w.epoch {
		return
	}
	g := s.ours[w.group]
	if g == nil {
		g = make(map[messages.TopicPartition]targetgroup.Checkpoint, len(written))
		s.ours[w.group] = g
	}
	for tp, cp := range written {
		g[tp] = targetgroup.Checkpoint{Downstream: cp.Downstream, Upstream: cp.Upstream} // the rule needs no metadata
	}
}

// work is a snapshot of one group's pending checkpoints.
type work struct {
	group       string
	checkpoints map[messages.TopicPartition]pendingCheckpoint
	shard       int32
	epoch       uint64 // of the shard's assignment it was taken under
}

func (s *OffsetSyncer) dueGroups(now time.Time) []work {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.tailRead {
		return nil
	}
	var due []work
	for group, g := range s.pending {
		sh := s.shards[g.shard]
		if sh == nil || !sh.ready {
			continue // restored first: nothing is decided without what Kafka holds
		}
		if !g.changed && now.Before(g.retryAt) {
			continue
		}
		g.changed = false
		snap := make(map[messages.TopicPartition]pendingCheckpoint, len(g.checkpoints))
		for tp, cp := range g.checkpoints {
			snap[tp] = cp
		}
		due = append(due, work{group: group, checkpoints: snap, shard: g.shard, epoch: sh.epoch})
	}
	sort.Slice(due, func(i, j int) bool { return due[i].group < due[j].group })
	return due
}

func names(ws []work) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.group
	}
	return out
}

// commitLinks links a commit to the trace context of each checkpoint record
// it covers, in partition order.
func commitLinks(w work, commit map[messages.TopicPartition]targetgroup.Checkpoint) []trace.Link {
	var tps []messages.TopicPartition
	for tp := range commit {
		if w.checkpoints[tp].trace != nil {
			tps = append(tps, tp)
		}
	}
	if len(tps) == 0 {
		return nil
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	links := make([]trace.Link, len(tps))
	for i, tp := range tps {
		links[i] = trace.Link{SpanContext: w.checkpoints[tp].span()}
	}
	return links
}

func allReason(w work, r targetgroup.Reason) map[messages.TopicPartition]targetgroup.Reason {
	out := make(map[messages.TopicPartition]targetgroup.Reason, len(w.checkpoints))
	for tp := range w.checkpoints {
		out[tp] = r
	}
	return out
}

// topicsOfAll returns the topics of all of ws, each once, in order.
func topicsOfAll(ws []work) []string {
	seen := make(map[string]struct{})
	var out []string
	for _, w := range ws {
		for tp := range w.checkpoints {
			if _, ok := seen[tp.Topic]; !ok {
				seen[tp.Topic] = struct{}{}
				out = append(out, tp.Topic)
			}
		}
	}
	sort.Strings(out)
	return out
}

func topicsOf(w work) []string { return topicsOfAll([]work{w}) }

// settled reports whether a partition needs no further attempt for the
// checkpoint that was tried: it was written, or the target is already there.
func settled(r targetgroup.Reason) bool {
	switch r {
	case targetgroup.Committed, targetgroup.Rewound, targetgroup.TargetAhead, targetgroup.TargetAheadMovedByConsumer,
		targetgroup.TargetAheadNotOurs, targetgroup.InvalidCheckpoint:
		return true
	}
	return false
}

// settle records the outcome: settled partitions leave the pending set unless
// a newer checkpoint arrived meanwhile; the rest wait for the retry interval.
func (s *OffsetSyncer) settle(w work, outcome map[messages.TopicPartition]targetgroup.Reason, now time.Time) {
	var groupReason targetgroup.Reason
	s.mu.Lock()
	g := s.pending[w.group]
	if sh := s.shards[w.shard]; sh == nil || sh.epoch != w.epoch {
		g = nil // the shard changed hands since: its restore decides again
	}
	for tp, r := range outcome {
		tried := w.checkpoints[tp]
		if g == nil {
			continue
		}
		if settled(r) {
			if cur, ok := g.checkpoints[tp]; ok && cur.same(tried) {
				delete(g.checkpoints, tp)
			}
		} else {
			groupReason = r
		}
	}
	if g != nil {
		if len(g.checkpoints) == 0 {
			delete(s.pending, w.group)
		} else {
			g.retryAt = now.Add(s.cfg.RetryInterval)
			if groupReason != g.lastReason && groupReason != "" {
				// One line per state change, not per attempt.
				s.cfg.Logger.Info("target group not synced yet", "group", w.group, "reason", string(groupReason),
					"retry_in", s.cfg.RetryInterval)
			}
			g.lastReason = groupReason
		}
	}
	s.mu.Unlock()
	// Observers hear it outside the lock: a user's observer that is slow, or
	// calls back into the syncer, must not hold up the checkpoints.
	for tp, r := range outcome {
		tried := w.checkpoints[tp]
		s.cfg.Observer.TargetResult(trace.ContextWithSpanContext(context.Background(), tried.span()), w.group, tp, r, tried.at(), tried.committedAt())
	}
}

// Pending reports how many groups have checkpoints not yet settled.
func (s *OffsetSyncer) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending)
}
