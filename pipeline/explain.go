package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/handlers"
	"github.com/checkpointd/checkpointd/handlers/filter"
	"github.com/checkpointd/checkpointd/infra/config"
	"github.com/checkpointd/checkpointd/infra/kafkalog"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
)

// ReadCheckpoints reads the checkpoints topic on the target to its end and
// returns the last checkpoint of every group want accepts and partition,
// sorted by group, topic and partition: where each group resumes on the
// target, as RemoteClusterUtils.translateOffsets reports it.
func ReadCheckpoints(ctx context.Context, cfg *config.Config, logger *slog.Logger, want func(group string) bool) ([]messages.Checkpoint, error) {
	sc, err := cfg.SaramaConfig(config.TargetConsumer)
	if err != nil {
		return nil, fmt.Errorf("target consumer config: %w", err)
	}
	topic := cfg.Policy.CheckpointsTopic(cfg.SourceAlias)
	// The reader waits for a missing topic (the service starts before MM2
	// creates it); a one-shot read says so at once instead.
	if err := checkTopic(cfg, topic); err != nil {
		return nil, err
	}
	latest := map[string]map[messages.TopicPartition]messages.Checkpoint{}
	rc := kafkalog.ReaderConfig{Brokers: cfg.Target.BootstrapServers, Sarama: sc, Cluster: cfg.TargetAlias, Logger: logger}
	err = kafkalog.ReadLog(ctx, rc, topic, false, func(r envelope.Record) error {
		if r.Tombstone() {
			return nil
		}
		cp, err := messages.DecodeCheckpoint(r.Key, r.Value)
		if err != nil {
			logger.Warn("skipping malformed checkpoint", "offset", r.Offset, "error", err)
			return nil
		}
		if !want(cp.Group) {
			return nil
		}
		if latest[cp.Group] == nil {
			latest[cp.Group] = map[messages.TopicPartition]messages.Checkpoint{}
		}
		latest[cp.Group][cp.TopicPartition] = cp
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", topic, err)
	}
	var out []messages.Checkpoint
	for _, parts := range latest {
		for _, cp := range parts {
			out = append(out, cp)
		}
	}
	slices.SortFunc(out, func(a, b messages.Checkpoint) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out, nil
}

// checkTopic returns an error naming the target cluster when it cannot be
// reached or has no topic named topic.
func checkTopic(cfg *config.Config, topic string) error {
	sc, err := cfg.SaramaConfig(config.TargetAdmin)
	if err != nil {
		return fmt.Errorf("target admin client config: %w", err)
	}
	client, err := kafkalog.NewClient(cfg.Target.BootstrapServers, sc)
	if err != nil {
		return fmt.Errorf("connect to target cluster %q at %v: %w", cfg.TargetAlias, cfg.Target.BootstrapServers, err)
	}
	defer client.Close()
	if _, err := client.Partitions(topic); err != nil {
		if errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
			return fmt.Errorf("no checkpoints topic %s on target cluster %q: checkpointd (or MM2's MirrorCheckpointConnector) has not written any checkpoint from source %q yet, or the aliases in the config are not theirs", topic, cfg.TargetAlias, cfg.SourceAlias)
		}
		return fmt.Errorf("checkpoints topic %s on target cluster %q: %w", topic, cfg.TargetAlias, err)
	}
	return nil
}

// Explanation is what a source commit translates to now and why no newer
// checkpoint was written for it.
type Explanation struct {
	Group          string
	UpstreamTopic  string
	Partition      int32
	Committed      int64
	Translation    string // translated | behind_oldest_sync | no_result
	Downstream     int64  // -1 unless translated
	LastCheckpoint *int64 // the downstream offset of the last checkpoint, if any
	Decision       string // emit, a reason code, or "" when the Checkpointer said nothing
}

// Explain replays the offset syncs and the groups' current source commits
// through the same Checkpointer the service runs, after the checkpoints cps
// (from ReadCheckpoints), so the reasons it gives are the service's own.
// No groups means every group in cps.
func Explain(ctx context.Context, cfg *config.Config, logger *slog.Logger, groups []string, cps []messages.Checkpoint) ([]Explanation, error) {
	if len(groups) == 0 {
		seen := map[string]bool{}
		for _, cp := range cps {
			if !seen[cp.Group] {
				seen[cp.Group] = true
				groups = append(groups, cp.Group)
			}
		}
	}
	topics, err := filter.New(cfg.Topics, cfg.TopicsExclude)
	if err != nil {
		return nil, fmt.Errorf("topic filter: %w", err)
	}
	rec := &explainRecorder{}
	cpr, err := handlers.NewCheckpointer(handlers.CheckpointerConfig{
		SourceAlias: cfg.SourceAlias, TargetAlias: cfg.TargetAlias, Policy: cfg.Policy,
		Topics: topics, Groups: everyGroup{}, Emitter: rec, Observer: rec, Logger: logger,
	})
	if err != nil {
		return nil, err
	}
	for _, cp := range cps {
		cpr.CheckpointSeen(cp)
	}
	cpr.CheckpointsReadToEnd(ctx)

	syncs := cfg.OffsetSyncs()
	sc, err := cfg.SaramaConfig(syncs.Reader)
	if err != nil {
		return nil, fmt.Errorf("offset-syncs consumer config: %w", err)
	}
	rc := kafkalog.ReaderConfig{Brokers: syncs.Cluster.BootstrapServers, Sarama: sc, Cluster: syncs.Alias, Logger: logger}
	err = kafkalog.ReadLog(ctx, rc, syncs.Topic, false, func(r envelope.Record) error {
		if s, err := messages.DecodeOffsetSync(r.Key, r.Value); err == nil && !r.Tombstone() {
			cpr.ApplySync(ctx, s)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", syncs.Topic, err)
	}
	cpr.SyncsReadToEnd(ctx)

	committed, err := sourceCommits(cfg, groups)
	if err != nil {
		return nil, err
	}
	cpr.ShardAssigned(0)
	for _, c := range committed {
		cpr.SourceCommit(ctx, 0, c, time.Time{})
	}
	cpr.ShardCaughtUp(ctx, 0)

	var rows []Explanation
	for _, c := range committed {
		tr := cpr.Index().Translate(c.TopicPartition, c.Offset)
		renamed := messages.TopicPartition{Topic: messages.DownstreamTopic(cfg.Policy, cfg.SourceAlias, cfg.TargetAlias, c.Topic), Partition: c.Partition}
		row := Explanation{Group: c.Group, UpstreamTopic: c.Topic, Partition: c.Partition, Committed: c.Offset,
			Translation: tr.Outcome.String(), Downstream: tr.Downstream}
		if r, ok := rec.skipped[explainKey(c.Group, c.TopicPartition)]; ok {
			row.Decision = r.String()
		}
		if rec.emitted[explainKey(c.Group, renamed)] {
			row.Decision = "emit"
		}
		for _, cp := range cps {
			if cp.Group == c.Group && cp.TopicPartition == renamed {
				d := cp.DownstreamOffset
				row.LastCheckpoint = &d
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// sourceCommits fetches the groups' committed offsets on the source.
func sourceCommits(cfg *config.Config, groups []string) ([]messages.OffsetsRecord, error) {
	sc, err := cfg.SaramaConfig(config.SourceAdmin)
	if err != nil {
		return nil, fmt.Errorf("source admin client config: %w", err)
	}
	admin, err := kafkalog.NewClusterAdmin(cfg.Source.BootstrapServers, sc)
	if err != nil {
		return nil, fmt.Errorf("connect to source cluster %q: %w", cfg.SourceAlias, err)
	}
	defer admin.Close()
	var out []messages.OffsetsRecord
	for _, g := range groups {
		resp, err := admin.ListConsumerGroupOffsets(g, nil)
		if err != nil {
			return nil, fmt.Errorf("offsets of group %q on source cluster %q: %w", g, cfg.SourceAlias, err)
		}
		for topic, parts := range resp.Blocks {
			for p, b := range parts {
				if b.Err != sarama.ErrNoError || b.Offset < 0 {
					continue
				}
				out = append(out, messages.OffsetsRecord{Kind: messages.OffsetCommitRecord, Group: g,
					TopicPartition: messages.TopicPartition{Topic: topic, Partition: p}, Offset: b.Offset, Metadata: b.Metadata})
			}
		}
	}
	slices.SortFunc(out, func(a, b messages.OffsetsRecord) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out, nil
}

// everyGroup matches every group: Explain is asked about groups by name.
type everyGroup struct{}

func (everyGroup) Match(string) bool { return true }

func explainKey(group string, tp messages.TopicPartition) string { return group + "\x00" + tp.String() }

// explainRecorder collects the Checkpointer's decisions: skip reasons by
// upstream partition, emitted checkpoints by target partition.
type explainRecorder struct {
	handlers.NopObserver
	skipped map[string]messages.SkipReason
	emitted map[string]bool
}

func (r *explainRecorder) Emit(context.Context, messages.Checkpoint, time.Time) {}

func (r *explainRecorder) CheckpointSkipped(_ context.Context, group string, tp messages.TopicPartition, _ int64, reason messages.SkipReason) {
	if r.skipped == nil {
		r.skipped = map[string]messages.SkipReason{}
	}
	r.skipped[explainKey(group, tp)] = reason
}

func (r *explainRecorder) CheckpointEmitted(_ context.Context, cp messages.Checkpoint, _ time.Time) {
	if r.emitted == nil {
		r.emitted = map[string]bool{}
	}
	r.emitted[explainKey(cp.Group, cp.TopicPartition)] = true
}
