package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/handlers"
	"github.com/checkpointd/checkpointd/handlers/groupsync"
	"github.com/checkpointd/checkpointd/infra/config"
	"github.com/checkpointd/checkpointd/infra/kafkalog"
	"github.com/checkpointd/checkpointd/infra/targetgroups"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

// Actions of an ApplyRow.
const (
	ActionCommit    = "commit"    // planned: a dry run would commit it
	ActionCommitted = "committed" // executed: the target group has it now
	ActionSkip      = "skip"      // left alone on purpose, see Reason
	ActionFailed    = "failed"    // executed, but the commit did not take, see Reason and Err
)

// ApplyRow is what becomes of one (group, target partition) when the
// translated offsets are applied to the target cluster's groups.
type ApplyRow struct {
	Group      string
	Topic      string // the target topic
	Partition  int32
	GroupState string // the target group's state; "" when the describe failed
	Current    int64  // the group's committed offset on the target; -1 for none or unknown
	Translated int64  // the checkpoint's downstream offset
	Metadata   string
	Action     string             // ActionCommit, ActionCommitted, ActionSkip or ActionFailed
	Reason     targetgroup.Reason // why it was skipped or failed; "" for commit and committed
	Err        error              // what went wrong when reading or committing, if anything
}

// Failed reports whether the row is a partition that should have been
// committed and is not: anything but a commit, or a target already at or
// past the translation (a group is never lowered, and that is not a failure).
func (r ApplyRow) Failed() bool {
	switch r.Action {
	case ActionCommit, ActionCommitted:
		return false
	}
	switch r.Reason {
	case targetgroup.TargetAhead, targetgroup.TargetAheadMovedByConsumer, targetgroup.TargetAheadNotOurs:
		return false // left alone on purpose
	}
	return true
}

// ApplyCheckpoints commits the checkpoints cps (from ReadCheckpoints) into
// the target cluster's consumer groups with the commit stage's rules
// (groupsync.Decide): never into a group with members or one that could not
// be described, skipping partitions missing on the target, and never
// lowering a group's offset unless, with checkpointd.sync.follow.source.rewinds,
// it is still the one checkpointd committed there (its commit log on the
// target says so; a commit executed here is written ahead to that log too).
// Checkpoint policies (WithCheckpointPolicy) are not applied: each
// checkpoint goes into the target group of its own name, as MM2 names it.
// With execute false nothing is written: the rows are the plan. The rows are sorted by group, topic and partition; the error is only
// for what stopped the whole run (no connection to the target).
func ApplyCheckpoints(ctx context.Context, cfg *config.Config, logger *slog.Logger, cps []messages.Checkpoint, execute bool) ([]ApplyRow, error) {
	sc, err := cfg.SaramaConfig(config.TargetAdmin)
	if err != nil {
		return nil, fmt.Errorf("target admin client config: %w", err)
	}
	client, err := kafkalog.NewClient(cfg.Target.BootstrapServers, sc)
	if err != nil {
		return nil, fmt.Errorf("connect to target cluster %q at %v: %w", cfg.TargetAlias, cfg.Target.BootstrapServers, err)
	}
	defer client.Close()
	// A one-shot run reads each topic once: no cache to outlive it.
	tg, err := targetgroups.New(client, logger, targetgroups.WithTopicCacheTTL(0, 0))
	if err != nil {
		return nil, fmt.Errorf("target groups on cluster %q: %w", cfg.TargetAlias, err)
	}
	defer tg.Close()
	rewinds, closeLog, err := openCommitLog(ctx, cfg, logger, client, execute)
	if err != nil {
		return nil, err
	}
	defer closeLog()
	return applyCheckpoints(ctx, targetgroups.SyncTarget{Client: tg}, cps, execute, rewinds)
}

// applyRewinds is what following source rewinds needs in a one-shot run:
// what checkpointd committed, and the log to write ahead to.
type applyRewinds struct {
	ours map[string]map[messages.TopicPartition]targetgroup.Checkpoint
	log  handlers.CommitLog // nil in a dry run
}

// openCommitLog reads the commit log when rewinds are followed and the log
// exists (nil without: MM2's rule, never lower), and opens it for writing
// ahead when executing. A one-shot run does not create the topic: without
// it no commit was ever recorded, and the rule is MM2's.
func openCommitLog(ctx context.Context, cfg *config.Config, logger *slog.Logger, client sarama.Client, execute bool) (*applyRewinds, func(), error) {
	nothing := func() {}
	if !cfg.FollowSourceRewinds {
		return nil, nothing, nil
	}
	topic := kafkalog.CommitLogTopic(cfg.SourceAlias)
	if _, err := client.Partitions(topic); errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
		logger.Info("no commit log on the target: a target group ahead of its translation is left alone", "topic", topic)
		return nil, nothing, nil
	} else if err != nil {
		return nil, nothing, fmt.Errorf("commit log %s on target cluster %q: %w", topic, cfg.TargetAlias, err)
	}
	sc, err := cfg.SaramaConfig(config.TargetConsumer)
	if err != nil {
		return nil, nothing, fmt.Errorf("target consumer config: %w", err)
	}
	reader := kafkalog.ReaderConfig{Brokers: cfg.Target.BootstrapServers, Sarama: sc, Cluster: cfg.TargetAlias, Logger: logger}
	var pub message.Publisher // a dry run only reads the log
	closeLog := nothing
	if execute {
		pc, err := cfg.SaramaConfig(config.TargetProducer)
		if err != nil {
			return nil, nothing, fmt.Errorf("target producer config: %w", err)
		}
		if pub, err = kafkalog.NewCheckpointPublisher(cfg.Target.BootstrapServers, pc, logger); err != nil {
			return nil, nothing, fmt.Errorf("commit log writer on target cluster %q: %w", cfg.TargetAlias, err)
		}
		closeLog = func() { _ = pub.Close() }
	}
	log := kafkalog.NewCommitLog(topic, reader, pub, logger)
	ours, err := log.Load(ctx, nil, nil)
	if err != nil {
		closeLog()
		return nil, nothing, err
	}
	r := &applyRewinds{ours: ours}
	if execute {
		r.log = log
	}
	return r, closeLog, nil
}

// applyCheckpoints is ApplyCheckpoints over any targetgroup.Groups; rewinds
// is nil when source rewinds are not followed.
func applyCheckpoints(ctx context.Context, target targetgroup.Groups, cps []messages.Checkpoint, execute bool, rewinds *applyRewinds) ([]ApplyRow, error) {
	byGroup := make(map[string]map[messages.TopicPartition]targetgroup.Checkpoint)
	topicSet := make(map[string]bool)
	for _, cp := range cps {
		if byGroup[cp.Group] == nil {
			byGroup[cp.Group] = make(map[messages.TopicPartition]targetgroup.Checkpoint)
		}
		byGroup[cp.Group][cp.TopicPartition] = targetgroup.Checkpoint{Downstream: cp.DownstreamOffset, Upstream: cp.UpstreamOffset, Metadata: cp.Metadata}
		topicSet[cp.Topic] = true
	}
	groups := slices.Sorted(maps.Keys(byGroup))
	if len(groups) == 0 {
		return nil, nil
	}

	states, err := target.Describe(ctx, groups)
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("describe target groups: %w", err)
	}
	// Offsets of every described group, not only the writable ones: the
	// plan shows where an active group is too. Only a writable group's
	// offsets feed the decision.
	current, offsetErrs := target.Offsets(ctx, groups)
	existing, topicErrs := target.ExistingPartitions(ctx, slices.Sorted(maps.Keys(topicSet)))

	var rows []ApplyRow
	for _, g := range groups {
		st, ok := states[g]
		if !ok {
			st = targetgroup.Group{DescribeErr: fmt.Errorf("no description of group %q from the target: %v", g, err)}
		}
		in := groupsync.Input{Checkpoints: byGroup[g], Target: st}
		// readErr keeps a writable group whose offsets or topics are unknown
		// out of the decision: without them Decide could lower an offset or
		// call a topic missing.
		var readErr error
		if st.Writable() {
			readErr = offsetErrs[g]
			if _, ok := current[g]; !ok && readErr == nil {
				readErr = fmt.Errorf("no offsets of group %q in the target's answer", g)
			}
			for tp := range byGroup[g] {
				if e := topicErrs[tp.Topic]; e != nil && readErr == nil {
					readErr = fmt.Errorf("partitions of topic %q on the target: %w", tp.Topic, e)
				}
			}
			in.Current, in.Existing = current[g], existing
		}
		if rewinds != nil {
			in.FollowRewinds, in.Ours = true, rewinds.ours[g]
		}
		var plan groupsync.Plan
		if readErr == nil {
			plan = groupsync.Decide(in)
		}
		var results map[messages.TopicPartition]targetgroup.Reason
		var commitErr error
		if execute && len(plan.Commit) > 0 {
			// As the commit stage does: the commit log first, so that it
			// never misses an offset checkpointd wrote.
			if commitErr = writeAhead(ctx, rewinds, g, plan.Commit); commitErr == nil {
				results, commitErr = target.Commit(ctx, g, plan.Commit)
			}
		}
		for tp, cp := range byGroup[g] {
			row := ApplyRow{Group: g, Topic: tp.Topic, Partition: tp.Partition, GroupState: st.State,
				Current: -1, Translated: cp.Downstream, Metadata: cp.Metadata}
			if off, ok := current[g][tp]; ok {
				row.Current = off
			}
			switch {
			case readErr != nil:
				row.Action, row.Reason, row.Err = ActionSkip, targetgroup.Retriable, readErr
			case st.DescribeErr != nil:
				row.Action, row.Reason, row.Err = ActionSkip, targetgroup.DescribeFailed, st.DescribeErr
			case plan.Skipped[tp] != "":
				row.Action, row.Reason = ActionSkip, plan.Skipped[tp]
			case !execute:
				row.Action = ActionCommit
			default:
				r, ok := results[tp]
				if !ok {
					r = targetgroup.Retriable
				}
				if r == targetgroup.Committed {
					row.Action = ActionCommitted
					if plan.Rewinds[tp] {
						row.Reason = targetgroup.Rewound
					}
				} else {
					row.Action, row.Reason, row.Err = ActionFailed, r, commitErr
				}
			}
			rows = append(rows, row)
		}
	}
	slices.SortFunc(rows, func(a, b ApplyRow) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return rows, nil
}

// ApplyFailures summarizes the rows that failed (ApplyRow.Failed) as one
// error naming how many partitions of which groups and why, or nil.
func ApplyFailures(rows []ApplyRow) error {
	byReason := map[targetgroup.Reason]int{}
	groups := map[string]bool{}
	var errs []error
	n := 0
	for _, r := range rows {
		if !r.Failed() {
			continue
		}
		n++
		byReason[r.Reason]++
		groups[r.Group] = true
		if r.Err != nil && !slices.ContainsFunc(errs, func(e error) bool { return e.Error() == r.Err.Error() }) {
			errs = append(errs, r.Err)
		}
	}
	if n == 0 {
		return nil
	}
	var reasons []string
	for _, r := range slices.Sorted(maps.Keys(byReason)) {
		reasons = append(reasons, fmt.Sprintf("%s: %d", r, byReason[r]))
	}
	err := fmt.Errorf("%d of %d partitions not committed, in groups %s (%s)", n, len(rows),
		strings.Join(slices.Sorted(maps.Keys(groups)), ", "), strings.Join(reasons, ", "))
	return errors.Join(append([]error{err}, errs...)...)
}

// writeAhead records the offsets about to be committed into group in the
// commit log, when there is one to write.
func writeAhead(ctx context.Context, rewinds *applyRewinds, group string, commit map[messages.TopicPartition]targetgroup.Checkpoint) error {
	if rewinds == nil || rewinds.log == nil {
		return nil
	}
	planned := make([]messages.Checkpoint, 0, len(commit))
	for tp, cp := range commit {
		planned = append(planned, messages.Checkpoint{Group: group, TopicPartition: tp, UpstreamOffset: cp.Upstream, DownstreamOffset: cp.Downstream, Metadata: cp.Metadata})
	}
	return rewinds.log.Append(ctx, planned)
}
