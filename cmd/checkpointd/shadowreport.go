package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/checkpointd/checkpointd/handlers/shadow"
	"github.com/checkpointd/checkpointd/internal/service"
	"github.com/checkpointd/checkpointd/pipeline"
)

// errDisagrees is shadow-report's failure: some pair would have been lower
// than MM2's with no rule that says why. main exits 1 with it.
var errDisagrees = errors.New("checkpointd would have been lower than MM2 without a rule that says why")

// runShadowReport is `checkpointd shadow-report`: it fetches /shadow from a
// checkpointd running in shadow mode, prints the comparison and fails when a
// pair is lower than MM2's without a rule that says why.
func runShadowReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("shadow-report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf service.ConfigFlags
	cf.Register(fs)
	url := fs.String("url", "", "base URL of the shadow instance's health server (default: http:// and checkpointd.health.address from --config)")
	format := fs.String("format", "table", "table or json")
	all := fs.Bool("all", false, "list every pair, not only those that differ")
	timeout := fs.Duration("timeout", 10*time.Second, "how long to wait for the instance")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *format != "table" && *format != "json" {
		return fmt.Errorf("--format %q: want table or json", *format)
	}
	base := *url
	if base == "" {
		if cf.Path == "" {
			return errors.New("shadow-report needs --url or --config")
		}
		cfg, err := cf.Load(stderr)
		if err != nil {
			return err
		}
		if cfg.HealthAddress == "" {
			return errors.New("checkpointd.health.address is empty in the config: give --url")
		}
		base = "http://" + cfg.HealthAddress
	}
	reports, err := fetchShadow(ctx, strings.TrimSuffix(base, "/")+"/shadow", *timeout)
	if err != nil {
		return err
	}
	if *format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(reports); err != nil {
			return err
		}
	} else {
		printShadow(stdout, reports, *all)
	}
	unexplained := 0
	for _, r := range reports {
		unexplained += r.Counts.Unexplained
	}
	if unexplained > 0 {
		return fmt.Errorf("%d pairs: %w", unexplained, errDisagrees)
	}
	return nil
}

func fetchShadow(ctx context.Context, url string, timeout time.Duration) ([]pipeline.ShadowReport, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("shadow report URL %q: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("shadow report from %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("shadow report from %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("shadow report from %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	var reports []pipeline.ShadowReport
	if err := json.Unmarshal(body, &reports); err != nil {
		return nil, fmt.Errorf("shadow report from %s: not a report: %w", url, err)
	}
	return reports, nil
}

// printShadow prints, per flow, the counts, the writes withheld and the
// pairs (those that differ, or all).
func printShadow(w io.Writer, reports []pipeline.ShadowReport, all bool) {
	for _, r := range reports {
		fmt.Fprintf(w, "flow %s, since %s\n", r.Flow, r.Since.UTC().Format(time.RFC3339))
		var counts []string
		for _, s := range shadow.Statuses {
			counts = append(counts, fmt.Sprintf("%s %d", s, r.Counts.ByStatus[s]))
		}
		fmt.Fprintf(w, "pairs: %s; unexplained lower %d\n", strings.Join(counts, ", "), r.Counts.Unexplained)
		fmt.Fprintf(w, "writes withheld from the target: checkpoint %d, commit_log %d, target_commit %d, topic %d\n",
			r.Withheld["checkpoint"], r.Withheld["commit_log"], r.Withheld["target_commit"], r.Withheld["topic"])
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tSTATUS\tCHECKPOINTD\tMM2\tTARGET\tAHEAD BY\tEARLIER S\tTARGET BEHIND BY\tREASON\t")
		for _, row := range r.Rows {
			if !all && row.Status == shadow.Equal {
				continue
			}
			earlier := "-"
			if row.EarlierSeconds != nil {
				earlier = strconv.FormatFloat(*row.EarlierSeconds, 'f', 1, 64)
			}
			reason := row.Reason
			if row.Unexplained {
				reason += " (unexplained)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%d\t%s\t%d\t%s\t\n", row.Group, row.Topic, row.Partition, row.Status,
				offset(row.Checkpointd), offset(row.MM2), offset(row.Target), row.AheadBy, earlier, row.TargetBehindBy, reason)
		}
		tw.Flush()
	}
}

func offset(o int64) string {
	if o < 0 {
		return "-"
	}
	return strconv.FormatInt(o, 10)
}
