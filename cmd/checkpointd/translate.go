package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/handlers"
	"github.com/checkpointd/checkpointd/handlers/filter"
	"github.com/checkpointd/checkpointd/infra/config"
	"github.com/checkpointd/checkpointd/infra/kafkalog"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
)

// translatedOffset is one row of `checkpointd translate`: where a group
// resumes on the target, as RemoteClusterUtils.translateOffsets reports it.
type translatedOffset struct {
	Group            string `json:"group"`
	Topic            string `json:"topic"`
	Partition        int32  `json:"partition"`
	UpstreamOffset   int64  `json:"upstream_offset"`
	DownstreamOffset int64  `json:"downstream_offset"`
	Metadata         string `json:"metadata,omitempty"`
}

// explanation is one row of `checkpointd translate --explain`: a source
// commit, what it translates to now, and why no newer checkpoint was written.
type explanation struct {
	Group          string `json:"group"`
	UpstreamTopic  string `json:"upstream_topic"`
	Partition      int32  `json:"partition"`
	Committed      int64  `json:"committed"`
	Translation    string `json:"translation"` // translated | behind_oldest_sync | no_result
	Downstream     int64  `json:"downstream"`  // -1 unless translated
	LastCheckpoint *int64 `json:"last_checkpoint_downstream,omitempty"`
	Decision       string `json:"decision"` // emit | a reason code
}

func runTranslate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("translate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf configFlags
	cf.register(fs)
	var groups repeated
	fs.Var(&groups, "group", "consumer group to translate (repeatable; default: every group in the checkpoints topic)")
	format := fs.String("format", "table", "output format: table or json")
	explain := fs.Bool("explain", false, "also read the source commits and offset syncs and say why each partition is where it is")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *format != "table" && *format != "json" {
		return fmt.Errorf("--format %q: want table or json", *format)
	}
	cfg, err := cf.load(stderr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	want := func(g string) bool { return len(groups) == 0 || slices.Contains(groups, g) }
	checkpoints, err := readCheckpoints(ctx, cfg, logger, want)
	if err != nil {
		return err
	}
	if !*explain {
		return printTranslated(stdout, *format, checkpoints)
	}
	rows, err := explainGroups(ctx, cfg, logger, groups, checkpoints)
	if err != nil {
		return err
	}
	return printExplained(stdout, *format, rows)
}

// readCheckpoints reads the checkpoints topic to its end; later records win.
func readCheckpoints(ctx context.Context, cfg *config.Config, logger *slog.Logger, want func(string) bool) ([]messages.Checkpoint, error) {
	sc, err := cfg.SaramaConfig(config.TargetConsumer)
	if err != nil {
		return nil, err
	}
	topic := cfg.Policy.CheckpointsTopic(cfg.SourceAlias)
	latest := map[string]map[messages.TopicPartition]messages.Checkpoint{}
	err = readLog(ctx, cfg.Target.BootstrapServers, sc, cfg.TargetAlias, topic, false, logger, func(r envelope.Record) error {
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

func printTranslated(w io.Writer, format string, cps []messages.Checkpoint) error {
	rows := make([]translatedOffset, len(cps))
	for i, cp := range cps {
		rows[i] = translatedOffset{cp.Group, cp.Topic, cp.Partition, cp.UpstreamOffset, cp.DownstreamOffset, cp.Metadata}
	}
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tSOURCE OFFSET\tTARGET OFFSET")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\n", r.Group, r.Topic, r.Partition, r.UpstreamOffset, r.DownstreamOffset)
	}
	return tw.Flush()
}

// explainGroups replays the inputs through the same Checkpointer the service
// runs, so the reasons it gives are the service's own.
func explainGroups(ctx context.Context, cfg *config.Config, logger *slog.Logger, groups []string, cps []messages.Checkpoint) ([]explanation, error) {
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
		return nil, err
	}
	rec := &explainRecorder{}
	cpr, err := handlers.NewCheckpointer(handlers.CheckpointerConfig{
		SourceAlias: cfg.SourceAlias, TargetAlias: cfg.TargetAlias, Policy: cfg.Policy,
		Topics: topics, Groups: everything{}, Emitter: rec, Observer: rec, Logger: logger,
	})
	if err != nil {
		return nil, err
	}
	for _, cp := range cps {
		cpr.CheckpointSeen(cp)
	}
	cpr.CheckpointsReadToEnd(ctx)

	syncsTopic, role, cluster, brokers := cfg.Policy.OffsetSyncsTopic(cfg.TargetAlias), config.SourceConsumer, cfg.SourceAlias, cfg.Source.BootstrapServers
	if cfg.OffsetSyncsTopicLocation == "target" {
		syncsTopic, role, cluster, brokers = cfg.Policy.OffsetSyncsTopic(cfg.SourceAlias), config.TargetConsumer, cfg.TargetAlias, cfg.Target.BootstrapServers
	}
	sc, err := cfg.SaramaConfig(role)
	if err != nil {
		return nil, err
	}
	err = readLog(ctx, brokers, sc, cluster, syncsTopic, false, logger, func(r envelope.Record) error {
		if s, err := messages.DecodeOffsetSync(r.Key, r.Value); err == nil && !r.Tombstone() {
			cpr.ApplySync(ctx, s)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", syncsTopic, err)
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

	var rows []explanation
	for _, c := range committed {
		tr := cpr.Index().Translate(c.TopicPartition, c.Offset)
		renamed := messages.TopicPartition{Topic: messages.DownstreamTopic(cfg.Policy, cfg.SourceAlias, cfg.TargetAlias, c.Topic), Partition: c.Partition}
		row := explanation{Group: c.Group, UpstreamTopic: c.Topic, Partition: c.Partition, Committed: c.Offset,
			Translation: tr.Outcome.String(), Downstream: tr.Downstream, Decision: rec.skipped[key(c.Group, c.TopicPartition)]}
		if rec.emitted[key(c.Group, renamed)] {
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
		return nil, err
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

type everything struct{}

func (everything) Match(string) bool { return true }

func key(group string, tp messages.TopicPartition) string { return group + "\x00" + tp.String() }

// explainRecorder collects the Checkpointer's decisions: skip reasons by
// upstream partition, emitted checkpoints by target partition.
type explainRecorder struct {
	handlers.NopObserver
	skipped map[string]string
	emitted map[string]bool
}

func (r *explainRecorder) Emit(context.Context, messages.Checkpoint, time.Time) {}

func (r *explainRecorder) CheckpointSkipped(group string, tp messages.TopicPartition, reason string) {
	if r.skipped == nil {
		r.skipped = map[string]string{}
	}
	r.skipped[key(group, tp)] = reason
}

func (r *explainRecorder) CheckpointEmitted(cp messages.Checkpoint, _ time.Time) {
	if r.emitted == nil {
		r.emitted = map[string]bool{}
	}
	r.emitted[key(cp.Group, cp.TopicPartition)] = true
}

func printExplained(w io.Writer, format string, rows []explanation) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tSOURCE TOPIC\tPARTITION\tCOMMITTED\tTRANSLATION\tTARGET OFFSET\tLAST CHECKPOINT\tDECISION")
	for _, r := range rows {
		last := "-"
		if r.LastCheckpoint != nil {
			last = fmt.Sprint(*r.LastCheckpoint)
		}
		down := "-"
		if r.Downstream >= 0 {
			down = fmt.Sprint(r.Downstream)
		}
		decision := r.Decision
		if decision == "" {
			decision = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n", r.Group, r.UpstreamTopic, r.Partition, r.Committed, r.Translation, down, last, decision)
	}
	return tw.Flush()
}
