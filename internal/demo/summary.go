package demo

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Summary is the outcome of a demo run.
type Summary struct {
	Elapsed     time.Duration
	Interrupted bool // the run was cut short (Ctrl-C)
	Produced    int64
	Mirrored    int64
	Filtered    int64 // records the mirror dropped, leaving upstream gaps
	OffsetSyncs int64
	Checkpoints int
	Partitions  []PartitionResult
	// Delays are the times from a source commit to the target group's commit
	// of its translation, as seen by polling the target.
	Delays []time.Duration
}

// PartitionResult is where one group stands on one partition at the end.
type PartitionResult struct {
	Group     string
	Partition string // the source topic-partition, e.g. orders-0
	// SourceOffset is the group's committed offset on the source, -1 if none.
	SourceOffset int64
	// TargetOffset is the group's committed offset on the target, -1 if none.
	TargetOffset int64
	// ExactTarget is the target offset of the first record the group has not
	// read: resuming there would repeat nothing and miss nothing. -1 if the
	// group committed nothing.
	ExactTarget int64
	Checkpoints int
}

// Reread is how many records the group would read a second time after
// failing over to the target. Negative means records would be skipped.
func (r PartitionResult) Reread() int64 { return r.ExactTarget - r.TargetOffset }

// Synced reports whether the group's offset reached the target at all.
func (r PartitionResult) Synced() bool { return r.TargetOffset >= 0 }

// Verify fails if a target offset would make a consumer skip records, or, on
// a run that was not interrupted, if a partition a group committed on the
// source never got a target offset.
func (s *Summary) Verify() error {
	var errs []error
	for _, r := range s.Partitions {
		switch {
		case r.Synced() && r.Reread() < 0:
			errs = append(errs, fmt.Errorf("group %s on %s: target offset %d is past the exact position %d: %d records would be skipped",
				r.Group, r.Partition, r.TargetOffset, r.ExactTarget, -r.Reread()))
		case !s.Interrupted && r.SourceOffset > 0 && r.TargetOffset <= 0:
			errs = append(errs, fmt.Errorf("group %s on %s: committed %d on the source, but the target offset never followed",
				r.Group, r.Partition, r.SourceOffset))
		}
	}
	return errors.Join(errs...)
}

// Print writes the summary for people.
func (s *Summary) Print(w io.Writer) error {
	var b strings.Builder
	how := "finished"
	if s.Interrupted {
		how = "interrupted"
	}
	fmt.Fprintf(&b, "\nSummary: %s after %.1fs. Produced %d records, mirrored %d (%d filtered out), wrote %d offset syncs; checkpointd emitted %d checkpoints.\n\n",
		how, s.Elapsed.Seconds(), s.Produced, s.Mirrored, s.Filtered, s.OffsetSyncs, s.Checkpoints)

	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tPARTITION\tSOURCE OFFSET\tTARGET OFFSET\tEXACT TARGET\tRE-READ ON FAILOVER\tCHECKPOINTS")
	for _, r := range s.Partitions {
		reread := "-"
		if r.Synced() && r.SourceOffset >= 0 {
			reread = fmt.Sprint(r.Reread())
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\n", r.Group, r.Partition,
			offsetText(r.SourceOffset), offsetText(r.TargetOffset), offsetText(r.ExactTarget), reread, r.Checkpoints)
	}
	tw.Flush()

	b.WriteString("\n")
	var reread int64
	for _, g := range s.groups() {
		fmt.Fprintf(&b, "%-10s %s\n", g.name+":", g.verdict())
		reread += g.reread
	}
	if reread > 0 {
		b.WriteString(rereadNote)
	}
	if len(s.Delays) > 0 {
		d := slices.Sorted(slices.Values(s.Delays))
		fmt.Fprintf(&b, "\nSource commit -> target group commit: median %v, max %v over %d target commits (target polled every %v).\n",
			d[len(d)/2].Round(10*time.Millisecond), d[len(d)-1].Round(10*time.Millisecond), len(d), targetPollInterval)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// rereadNote explains where re-reads come from.
const rereadNote = `
Re-reads are MM2's translation rules at work: a commit between two offset syncs translates to just
after the earlier sync (the +1 rule), and a group far behind the end of the log only finds the older,
exponentially spaced syncs MM2 keeps (64 per partition), so its target offset trails further.
`

// groupTotals adds up one group's partitions.
type groupTotals struct {
	name                         string
	partitions, synced, unsynced int
	reread, skipped              int64
}

func (g groupTotals) verdict() string {
	switch {
	case g.skipped > 0:
		return fmt.Sprintf("%d records would be SKIPPED on failover", g.skipped)
	case g.synced == 0:
		return "no offsets on the target"
	}
	v := fmt.Sprintf("%d/%d partitions synced, %d records would be re-read on failover, none skipped", g.synced, g.partitions, g.reread)
	if g.unsynced > 0 {
		v += fmt.Sprintf(" (%d partitions not synced)", g.unsynced)
	}
	return v
}

func (s *Summary) groups() []groupTotals {
	var out []groupTotals
	for _, r := range s.Partitions {
		if len(out) == 0 || out[len(out)-1].name != r.Group {
			out = append(out, groupTotals{name: r.Group})
		}
		g := &out[len(out)-1]
		g.partitions++
		switch {
		case !r.Synced():
			g.unsynced++
		case r.Reread() < 0:
			g.synced++
			g.skipped -= r.Reread()
		default:
			g.synced++
			g.reread += r.Reread()
		}
	}
	return out
}
