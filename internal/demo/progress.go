package demo

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"
)

// plainTableEvery is how many status lines a plain (non-terminal) progress
// prints between two tables, to keep logs short.
const plainTableEvery = 5

const tableLegend = `SOURCE -> TARGET: the group's committed offset on each cluster. EXACT: where on the target the
group's next unread record is. LAG: source end - SOURCE. RE-READ: records read twice on failover now.

`

// clearScreen moves the cursor home and clears the screen (ANSI).
const clearScreen = "\x1b[H\x1b[2J"

// progressPrinter shows snapshots: redrawn in place on a terminal, as plain
// lines elsewhere.
type progressPrinter struct {
	w      io.Writer
	redraw bool
	shown  int
	legend bool // the legend was printed (plain mode prints it once)
}

func (p *progressPrinter) print(s snapshot) error {
	defer func() { p.shown++ }()
	if p.redraw {
		if _, err := io.WriteString(p.w, clearScreen); err != nil {
			return err
		}
		if err := writeStatus(p.w, s); err != nil {
			return err
		}
		return p.writeTable(s.rows)
	}
	if err := writeStatus(p.w, s); err != nil {
		return err
	}
	if p.shown%plainTableEvery == plainTableEvery-1 {
		return p.writeTable(s.rows)
	}
	return nil
}

func writeStatus(w io.Writer, s snapshot) error {
	_, err := fmt.Fprintf(w, "[%5.1fs/%.0fs] %-21s produced %d, mirrored %d (%d filtered), offset syncs %d, checkpoints %d\n",
		s.elapsed.Seconds(), s.total.Seconds(), s.phase, s.produced, s.mirrored, s.filtered, s.syncs, s.emitted)
	return err
}

func (p *progressPrinter) writeTable(rows []partitionRow) error {
	tw := tabwriter.NewWriter(p.w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tPARTITION\tSOURCE\t\tTARGET\tEXACT\tLAG\tRE-READ\tCHECKPOINTS")
	for _, r := range rows {
		exact := offsetText(r.exact)
		if r.exact >= 0 && !r.exactKnown {
			exact = "≥" + exact
		}
		reread := "-"
		if r.target >= 0 && r.committed >= 0 {
			reread = strconv.FormatInt(r.reread(), 10)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t→\t%s\t%s\t%d\t%s\t%d\n",
			r.group, r.tp, offsetText(r.committed), offsetText(r.target), exact, r.lag(), reread, r.checkpoints)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	legend := "\n"
	if p.redraw || !p.legend {
		legend, p.legend = tableLegend, true
	}
	_, err := io.WriteString(p.w, legend)
	return err
}

func offsetText(o int64) string {
	if o < 0 {
		return "-"
	}
	return strconv.FormatInt(o, 10)
}

// IsTerminal reports whether w is a terminal, where progress can be redrawn in place.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
