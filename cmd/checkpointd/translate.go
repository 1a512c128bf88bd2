package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"text/tabwriter"
	"time"

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
	checkpoints, err := pipeline.ReadCheckpoints(ctx, cfg, logger, want)
	if err != nil {
		return err
	}
	if !*explain {
		return printTranslated(stdout, *format, checkpoints)
	}
	rows, err := pipeline.Explain(ctx, cfg, logger, groups, checkpoints)
	if err != nil {
		return err
	}
	return printExplained(stdout, *format, rows)
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

func printExplained(w io.Writer, format string, explained []pipeline.Explanation) error {
	rows := make([]explanation, len(explained))
	for i, e := range explained {
		rows[i] = explanation(e)
	}
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
