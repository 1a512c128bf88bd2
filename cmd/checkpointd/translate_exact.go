package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/checkpointd/checkpointd/infra/config"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/pipeline"
)

// exactOffset is one row of `checkpointd translate --exact`: where a group
// resumes on the target, exactly where the records prove it.
type exactOffset struct {
	translatedOffset
	MM2DownstreamOffset int64  `json:"mm2_downstream_offset"` // the checkpoint as read
	Exact               string `json:"exact"`                 // "exact", or why MM2's translation was kept
	ExactDetail         string `json:"exact_detail,omitempty"`
	BytesRead           int64  `json:"bytes_read"`
}

func exactOffsets(rows []pipeline.ExactRow) []exactOffset {
	out := make([]exactOffset, len(rows))
	for i, r := range rows {
		cp := r.Checkpoint
		out[i] = exactOffset{
			translatedOffset:    translatedOffset{cp.Group, cp.Topic, cp.Partition, cp.UpstreamOffset, cp.DownstreamOffset, cp.Metadata},
			MM2DownstreamOffset: r.MM2.DownstreamOffset, Exact: r.Reason.String(), ExactDetail: r.Detail, BytesRead: r.Bytes,
		}
	}
	return out
}

func printExact(w io.Writer, format string, rows []pipeline.ExactRow) error {
	out := exactOffsets(rows)
	if format == "json" {
		return printJSON(w, out)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tSOURCE OFFSET\tTARGET OFFSET\tMM2 TARGET OFFSET\tEXACT")
	for _, r := range out {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\n", r.Group, r.Topic, r.Partition, r.UpstreamOffset, r.DownstreamOffset, r.MM2DownstreamOffset, r.Exact)
	}
	return tw.Flush()
}

// exactExplanation is a row of `checkpointd translate --explain --exact`.
type exactExplanation struct {
	explanation
	ExactDownstream *int64 `json:"exact_downstream,omitempty"`
	Exact           string `json:"exact"` // "exact", why not, or "-" without a checkpoint to refine
	ExactDetail     string `json:"exact_detail,omitempty"`
}

// explainExact adds to the explanations what the exact translation made of
// each partition's checkpoint, and the reason where it kept MM2's.
func explainExact(ctx context.Context, cfg *config.Config, logger *slog.Logger, stdout, stderr io.Writer, format string,
	explained []pipeline.Explanation, cps []messages.Checkpoint) error {
	start := time.Now()
	rows, err := pipeline.ExactCheckpoints(ctx, cfg, logger, cps)
	if err != nil {
		return err
	}
	fmt.Fprintln(stderr, pipeline.Summarize(rows, time.Since(start)))
	type key struct {
		group string
		tp    messages.TopicPartition
	}
	byUpstream := map[key]pipeline.ExactRow{}
	for _, r := range rows {
		if r.Committed >= 0 {
			byUpstream[key{r.MM2.Group, r.Upstream}] = r
		}
	}
	out := make([]exactExplanation, len(explained))
	for i, e := range explained {
		out[i] = exactExplanation{explanation: explanation(e), Exact: "-"}
		if r, ok := byUpstream[key{e.Group, messages.TopicPartition{Topic: e.UpstreamTopic, Partition: e.Partition}}]; ok {
			out[i].Exact, out[i].ExactDetail = r.Reason.String(), r.Detail
			if r.Exact {
				d := r.Checkpoint.DownstreamOffset
				out[i].ExactDownstream = &d
			}
		}
	}
	if format == "json" {
		return printJSON(stdout, out)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tSOURCE TOPIC\tPARTITION\tCOMMITTED\tTRANSLATION\tTARGET OFFSET\tLAST CHECKPOINT\tDECISION\tEXACT OFFSET\tEXACT")
	for _, r := range out {
		last, down, ex := "-", "-", "-"
		if r.LastCheckpoint != nil {
			last = fmt.Sprint(*r.LastCheckpoint)
		}
		if r.Downstream >= 0 {
			down = fmt.Sprint(r.Downstream)
		}
		if r.ExactDownstream != nil {
			ex = fmt.Sprint(*r.ExactDownstream)
		}
		reason := r.Exact
		if r.ExactDetail != "" {
			reason += " (" + r.ExactDetail + ")"
		}
		decision := r.Decision
		if decision == "" {
			decision = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Group, r.UpstreamTopic, r.Partition, r.Committed, r.Translation, down, last, decision, ex, reason)
	}
	return tw.Flush()
}
