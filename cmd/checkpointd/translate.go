package main

import (
	"cmp"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/checkpointd/checkpointd/internal/service"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/pipeline"
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

// translateFlags are the options of `checkpointd translate`.
type translateFlags struct {
	groups    service.Repeated
	allGroups bool
	format    string
	explain   bool
	apply     bool
	exact     bool
	execute   bool
	dryRun    bool
	timeout   time.Duration
}

// check rejects combinations that mean nothing, naming the flags.
func (f *translateFlags) check() error {
	switch f.format {
	case "table", "json", "csv":
	default:
		return fmt.Errorf("--format %q: want table, json or csv", f.format)
	}
	switch {
	case f.allGroups && len(f.groups) > 0:
		return errors.New("--all-groups and --group exclude each other")
	case f.apply && f.explain:
		return errors.New("--apply and --explain exclude each other")
	case (f.execute || f.dryRun) && !f.apply:
		return errors.New("--execute and --dry-run go with --apply")
	case f.execute && f.dryRun:
		return errors.New("--execute and --dry-run exclude each other")
	case f.apply && !f.allGroups && len(f.groups) == 0:
		// Like kafka-consumer-groups --reset-offsets: writing into every
		// group is asked for by name.
		return errors.New("--apply needs the groups: --group G (repeatable) or --all-groups")
	case f.format == "csv" && (f.apply || f.explain):
		return errors.New("--format csv is the translated offsets for kafka-consumer-groups --from-file; it goes without --apply and --explain")
	}
	return nil
}

func runTranslate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("translate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf service.ConfigFlags
	cf.Register(fs)
	var tf translateFlags
	fs.Var(&tf.groups, "group", "consumer group to translate (repeatable; default: every group in the checkpoints topic)")
	fs.BoolVar(&tf.allGroups, "all-groups", false, "every group in the checkpoints topic (the default, except with --apply)")
	fs.StringVar(&tf.format, "format", "table", "output format: table, json, or csv (the reset plan kafka-consumer-groups --reset-offsets --from-file reads)")
	fs.BoolVar(&tf.explain, "explain", false, "also read the source commits and offset syncs and say why each partition is where it is")
	fs.BoolVar(&tf.exact, "exact", false, "find each group's committed record on the target and translate to its exact position where the records prove it (MM2's translation, with the reason, elsewhere); needs READ on the mirrored topics of both clusters")
	fs.BoolVar(&tf.apply, "apply", false, "plan committing the translated offsets into the target cluster's groups (a dry run unless --execute)")
	fs.BoolVar(&tf.execute, "execute", false, "with --apply: commit the plan")
	fs.BoolVar(&tf.dryRun, "dry-run", false, "with --apply: only show the plan (the default)")
	fs.DurationVar(&tf.timeout, "timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err := tf.check(); err != nil {
		return err
	}
	cfg, err := cf.Load(stderr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, tf.timeout)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	groups := []string(tf.groups)
	want := func(g string) bool { return len(groups) == 0 || slices.Contains(groups, g) }
	checkpoints, err := pipeline.ReadCheckpoints(ctx, cfg, logger, want)
	if err != nil {
		return err
	}
	if tf.explain {
		// A group without checkpoints is a fair question here: why none?
		rows, err := pipeline.Explain(ctx, cfg, logger, groups, checkpoints)
		if err != nil {
			return err
		}
		if tf.exact {
			return explainExact(ctx, cfg, logger, stdout, stderr, tf.format, rows, checkpoints)
		}
		return printExplained(stdout, tf.format, rows)
	}
	if missing := groupsWithout(groups, checkpoints); len(missing) > 0 {
		return fmt.Errorf("no checkpoints for group %s in %s on target cluster %q", strings.Join(missing, ", "),
			cfg.Policy.CheckpointsTopic(cfg.SourceAlias), cfg.TargetAlias)
	}
	var exactRows []pipeline.ExactRow
	if tf.exact {
		start := time.Now()
		if exactRows, err = pipeline.ExactCheckpoints(ctx, cfg, logger, checkpoints); err != nil {
			return err
		}
		fmt.Fprintln(stderr, pipeline.Summarize(exactRows, time.Since(start)))
		checkpoints = pipeline.ExactPlan(exactRows)
	}
	switch {
	case tf.exact && !tf.apply && tf.format != "csv":
		return printExact(stdout, tf.format, exactRows)
	case tf.apply:
		rows, err := pipeline.ApplyCheckpoints(ctx, cfg, logger, checkpoints, tf.execute)
		if err != nil {
			return err
		}
		if err := printApplied(stdout, tf.format, rows); err != nil {
			return err
		}
		if !tf.execute {
			fmt.Fprintln(stderr, "dry run: nothing was committed; add --execute to commit the partitions whose action is commit")
			return nil
		}
		return pipeline.ApplyFailures(rows)
	case tf.format == "csv":
		single := len(groups) == 1
		if !single {
			fmt.Fprintln(stderr, "csv: group,topic,partition,offset per line, for kafka-consumer-groups --reset-offsets --from-file with the same groups (--group per group, or --all-groups); with one --group the lines are topic,partition,offset")
		}
		return printResetPlanCSV(stdout, checkpoints, single)
	default:
		return printTranslated(stdout, tf.format, checkpoints)
	}
}

// groupsWithout returns the groups that have no checkpoint in cps.
func groupsWithout(groups []string, cps []messages.Checkpoint) []string {
	var missing []string
	for _, g := range groups {
		if !slices.ContainsFunc(cps, func(cp messages.Checkpoint) bool { return cp.Group == g }) && !slices.Contains(missing, g) {
			missing = append(missing, g)
		}
	}
	return missing
}

// printResetPlanCSV writes cps as the reset plan kafka-consumer-groups
// --reset-offsets --from-file reads (ConsumerGroupCommand.parseResetPlan,
// with CsvUtils' columns): "topic,partition,offset" when the tool is given
// one --group, else "group,topic,partition,offset". No header: the tool takes
// every line as a record. Fields are quoted when they need it, which Jackson's
// CSV reader undoes.
func printResetPlanCSV(w io.Writer, cps []messages.Checkpoint, singleGroup bool) error {
	cw := csv.NewWriter(w)
	for _, cp := range cps {
		rec := []string{cp.Topic, strconv.Itoa(int(cp.Partition)), strconv.FormatInt(cp.DownstreamOffset, 10)}
		if !singleGroup {
			rec = append([]string{cp.Group}, rec...)
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// appliedOffset is one row of `checkpointd translate --apply`.
type appliedOffset struct {
	Group            string `json:"group"`
	Topic            string `json:"topic"`
	Partition        int32  `json:"partition"`
	GroupState       string `json:"group_state,omitempty"`
	CurrentOffset    *int64 `json:"current_offset"` // null: the group has none there, or it is unknown
	TranslatedOffset int64  `json:"translated_offset"`
	Action           string `json:"action"` // commit (dry run), committed, skip, failed
	Reason           string `json:"reason,omitempty"`
	Error            string `json:"error,omitempty"`
}

func printApplied(w io.Writer, format string, applied []pipeline.ApplyRow) error {
	rows := make([]appliedOffset, len(applied))
	for i, a := range applied {
		rows[i] = appliedOffset{Group: a.Group, Topic: a.Topic, Partition: a.Partition, GroupState: a.GroupState,
			TranslatedOffset: a.Translated, Action: a.Action, Reason: string(a.Reason)}
		if a.Current >= 0 {
			cur := a.Current
			rows[i].CurrentOffset = &cur
		}
		if a.Err != nil {
			rows[i].Error = a.Err.Error()
		}
	}
	if format == "json" {
		return printJSON(w, rows)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tGROUP STATE\tCURRENT OFFSET\tTRANSLATED OFFSET\tACTION\tREASON")
	for _, r := range rows {
		cur, state, reason := "-", cmp.Or(r.GroupState, "-"), cmp.Or(r.Reason, "-")
		if r.CurrentOffset != nil {
			cur = fmt.Sprint(*r.CurrentOffset)
		}
		if r.Error != "" {
			reason += ": " + r.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%d\t%s\t%s\n", r.Group, r.Topic, r.Partition, state, cur, r.TranslatedOffset, r.Action, reason)
	}
	return tw.Flush()
}

func printTranslated(w io.Writer, format string, cps []messages.Checkpoint) error {
	rows := make([]translatedOffset, len(cps))
	for i, cp := range cps {
		rows[i] = translatedOffset{cp.Group, cp.Topic, cp.Partition, cp.UpstreamOffset, cp.DownstreamOffset, cp.Metadata}
	}
	if format == "json" {
		return printJSON(w, rows)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tSOURCE OFFSET\tTARGET OFFSET")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\n", r.Group, r.Topic, r.Partition, r.UpstreamOffset, r.DownstreamOffset)
	}
	return tw.Flush()
}

func printExplained(w io.Writer, format string, explained []pipeline.Explanation) error {
	rows := make([]explanation, len(explained))
	for i, e := range explained {
		rows[i] = explanation(e)
	}
	if format == "json" {
		return printJSON(w, rows)
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

// printJSON writes v as indented JSON, the --format json of translate.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
