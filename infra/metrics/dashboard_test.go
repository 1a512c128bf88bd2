package metrics

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

const dashboardPath = "../../deployments/grafana/checkpointd.json"

type dashPanel struct {
	Title   string `json:"title"`
	Type    string `json:"type"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []dashPanel `json:"panels"` // collapsed rows hold their panels
}

// knownMetrics registers a Metrics on a fresh registry, moves every series
// once (a vector without children is not gathered) and returns the families
// by name, with their types.
func knownMetrics(t *testing.T) map[string]dto.MetricType {
	t.Helper()
	m := New(Config{Source: "src", Target: "tgt", GroupLabels: true, Registry: prometheus.NewRegistry()})
	tp := messages.TopicPartition{Topic: "src.t", Partition: 0}
	m.CheckpointEmitted(context.Background(), messages.Checkpoint{Group: "g", TopicPartition: tp}, time.Now())
	m.CheckpointSkipped(context.Background(), "g", tp, 0, messages.SkipNoSyncYet)
	m.RecordMalformed("t", 0, 0, nil)
	m.GateOpened()
	m.TargetResult(context.Background(), "g", tp, targetgroup.Committed, time.Now(), time.Now())
	m.ReaderRecord("t", 0, 1, 2)
	for _, name := range PipelineGauges {
		m.GaugeFunc(name, name, func() float64 { return 1 })
	}
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]dto.MetricType, len(families))
	for _, f := range families {
		out[f.GetName()] = f.GetType()
	}
	return out
}

// TestDashboardReadsExistingMetrics parses the Grafana dashboard and checks
// that every checkpointd metric its queries read is one infra/metrics (or
// the pipeline, through PipelineGauges) exports, histograms through their
// _bucket, _sum and _count series.
func TestDashboardReadsExistingMetrics(t *testing.T) {
	raw, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID    string      `json:"uid"`
		Title  string      `json:"title"`
		Panels []dashPanel `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	if dash.UID == "" || dash.Title == "" || len(dash.Panels) == 0 {
		t.Fatalf("dashboard without uid, title or panels: %q %q, %d panels", dash.UID, dash.Title, len(dash.Panels))
	}
	known := knownMetrics(t)
	name := regexp.MustCompile(`\b` + Namespace + `_[a-zA-Z0-9_]+`)
	read := map[string]bool{}
	var walk func([]dashPanel)
	walk = func(panels []dashPanel) {
		for _, p := range panels {
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, q := range p.Targets {
				found := name.FindAllString(q.Expr, -1)
				if len(found) == 0 {
					t.Errorf("panel %q: query %q reads no checkpointd metric", p.Title, q.Expr)
				}
				for _, n := range found {
					read[n] = true
					if !exists(known, n) {
						t.Errorf("panel %q: query %q reads %s, which checkpointd does not export", p.Title, q.Expr, n)
					}
					if strings.Contains(q.Expr, "histogram_quantile") && !strings.HasSuffix(n, "_bucket") {
						t.Errorf("panel %q: histogram_quantile over %s, want a _bucket series", p.Title, n)
					}
				}
			}
		}
	}
	walk(dash.Panels)
	// The issue asks for these on the dashboard.
	for _, n := range []string{
		"checkpointd_checkpoints_emitted_total", "checkpointd_checkpoints_skipped_total",
		"checkpointd_checkpoint_latency_seconds_bucket", "checkpointd_end_to_end_delay_seconds_bucket",
		"checkpointd_target_commits_total", "checkpointd_gate_open", "checkpointd_index_partitions",
		"checkpointd_index_syncs", "checkpointd_reader_lag_records", "checkpointd_outbox_queued",
	} {
		if !read[n] {
			t.Errorf("dashboard does not show %s", n)
		}
	}
}

func exists(known map[string]dto.MetricType, n string) bool {
	if _, ok := known[n]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(n, suffix); ok && known[base] == dto.MetricType_HISTOGRAM {
			return true
		}
	}
	return false
}
