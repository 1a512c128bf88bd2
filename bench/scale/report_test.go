//go:build linux

package scale

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

var systemColor = map[string]color.Color{
	"checkpointd": color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	"mm2":         color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	// Scale-out phases, by phaseResult.label.
	"checkpointd x1": color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	"checkpointd x3": color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
}

// instanceColors tell a scaled phase's instances apart.
var instanceColors = []color.Color{
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
}

func phaseColor(ph phaseResult) color.Color {
	if c, ok := systemColor[ph.label()]; ok {
		return c
	}
	return systemColor[ph.System]
}

// writeResults writes scale-<time>.json, scale-<time>.md (also as REPORT.md)
// and the plots into dir.
func writeResults(t *testing.T, dir string, run *runResult) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	stamp := "scale-" + run.Started.Format("20060102T150405Z")
	data, err := json.MarshalIndent(run, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, stamp+".json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	var md strings.Builder
	fmt.Fprintf(&md, "# checkpointd vs MM2 MirrorCheckpointConnector: system benchmark\n\n")
	fmt.Fprintf(&md, "Run %s (took %s): Kafka %s, %s, %d CPUs, durations x%.2g. Raw data: [%s.json](%s.json).\n\n",
		run.Started.Format("2006-01-02 15:04 UTC"), run.Took, run.Kafka, run.Go, run.CPUs, run.TimeFactor, stamp, stamp)
	fmt.Fprintf(&md, "- checkpointd: the binary built from this tree (%s), `checkpointd run` as its own process, offsets-log commit source.\n", run.Tree)
	if len(run.ExtraProps) > 0 {
		fmt.Fprintf(&md, "- checkpointd properties set for this run (%s): %s.\n", extraEnv, formatProps(run.ExtraProps))
	}
	if run.NoopHandler {
		fmt.Fprintf(&md, "- checkpointd ran with two no-op typed event handlers, for checkpoint decisions and target commit results (%s, bench/scale/cmd/noophandler).\n", noopEnv)
	}
	fmt.Fprintf(&md, "- MM2: `MirrorCheckpointConnector` alone in a Connect standalone worker (`ConnectStandalone`), JVM flags `%s`, "+
		"emit.checkpoints.interval.seconds=1, sync.group.offsets.enabled=true, sync.group.offsets.interval.seconds=1, refresh.groups.interval.seconds=2.\n", run.ConnectJVM)
	fmt.Fprintf(&md, "- Offset syncs: %s.\n", run.OffsetSyncs)
	fmt.Fprintf(&md, "- Delay: source commit sent -> the target group's offset >= that commit's translation, timed by the %s. "+
		"Only (commit, partition)s whose translation moved up are timed.\n", run.TargetTiming)
	fmt.Fprintf(&md, "- CPU and RSS from /proc of the system's process over the load and drain window; the load generator runs in the test process, not in either system. checkpointd's reader lag is read from its /metrics every %d s (a scrape costs it about 5 ms of CPU).\n\n", lagScrapeEvery)

	writeTable(&md, run)
	fmt.Fprintf(&md, "\n")
	for _, sr := range run.Scenarios {
		sc := sr.Scenario
		fmt.Fprintf(&md, "## %s\n\n%d groups x %d partitions, %s", sc.Name, sc.Groups, sc.Partitions, sc.Kind)
		if sc.Kind != "first-start" {
			fmt.Fprintf(&md, ", %.0f commits/s for %s", sc.Rate, sc.Load)
		}
		if sc.Kind == "broker-stop" {
			fmt.Fprintf(&md, ", target broker stopped %s into the load for %s", sc.StopAt, sc.StopFor)
		}
		if sc.scaleOut() {
			fmt.Fprintf(&md, "; checkpointd with %v instances (one group, %s __consumer_offsets partitions)", sc.instanceCounts(), scaleOutOffsetsPartitions)
			if sc.CPUQuota > 0 {
				fmt.Fprintf(&md, ", each in a cgroup of its own capped at %.2f cores", sc.CPUQuota)
			}
			if sc.Kind == "kill" {
				fmt.Fprintf(&md, ", one SIGKILLed %s into the load", sc.KillAt)
			}
			if sc.SyncEvery > 0 {
				fmt.Fprintf(&md, ", a record (and offset sync) per partition every %s", sc.SyncEvery)
			}
			if len(sc.Props) > 0 {
				fmt.Fprintf(&md, ", %s", formatProps(sc.Props))
			}
		}
		fmt.Fprintf(&md, ".\n\n")
		for _, ph := range sr.Phases {
			fmt.Fprintf(&md, "- %s\n", ph.summary())
			if ph.ScaleOut != nil {
				fmt.Fprintf(&md, "  - %s\n", ph.scaleOutSummary())
			}
			for _, ev := range ph.Events {
				fmt.Fprintf(&md, "  - at %.0f s: %s\n", ev.T, ev.What)
			}
			for _, l := range ph.LogTail {
				fmt.Fprintf(&md, "  - log: `%s`\n", strings.ReplaceAll(truncate(l, 200), "`", "'"))
			}
		}
		fmt.Fprintf(&md, "\n")
		if sc.scaleOut() {
			writeScaleOut(&md, sr)
		}
		kinds := []string{"delay", "lag", "cpu", "rss"}
		if hasInstances(sr) {
			kinds = append(kinds, "instance-rss", "instance-cpu")
		}
		for _, kind := range kinds {
			name := fmt.Sprintf("%s-%s-%s.png", stamp, sc.Name, kind)
			err := plotScenario(sr, kind, filepath.Join(dir, name))
			if errors.Is(err, errNoData) {
				continue
			}
			if err != nil {
				t.Errorf("plot %s: %v", name, err)
				continue
			}
			fmt.Fprintf(&md, "![%s %s](%s)\n", sc.Name, kind, name)
		}
		fmt.Fprintf(&md, "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, stamp+".md"), []byte(md.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	writeIndex(t, dir)
	t.Logf("results: %s", filepath.Join(dir, stamp+".md"))
	t.Logf("\n%s", md.String())
}

// writeTable writes the run's one-line-per-phase table.
func writeTable(md *strings.Builder, run *runResult) {
	fmt.Fprintf(md, "| scenario | system | ready | initial sync | commits/s asked/achieved | delay p50 | p99 | max | reached/missing | checkpoints per commit | target commits/s | CPU s start+initial sync | CPU s per 1k commits | max RSS MB | target broker CPU s | max load avg | max reader lag |\n")
	fmt.Fprintf(md, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, sr := range run.Scenarios {
		for _, ph := range sr.Phases {
			lag := ph.lag()
			rate, per1k := "-", "-"
			if sr.Scenario.Kind != "first-start" {
				rate = fmt.Sprintf("%.0f / %.0f", ph.Load.Asked, ph.Load.Achieved)
				per1k = fmt.Sprintf("%.2f", ph.CPUPer1kCommits)
			}
			fmt.Fprintf(md, "| %s | %s | %s | %s (%d pairs) | %s | %s | %s | %s | %d/%d | %.2f | %.0f | %.1f | %s | %d | %.1f | %.1f | %s |\n",
				sr.Scenario.Name, ph.label(), ph.ReadyAfter, ph.InitialSynced, ph.InitialPairs, rate,
				msf(ph.DelayP50), msf(ph.DelayP99), msf(ph.DelayMax), ph.Reached, ph.MissingPairs,
				ph.CheckpointsPerCommit, ph.TargetCommitsPerSec, ph.StartupCPUSeconds, per1k, ph.MaxRSSMB, ph.BrokerCPUSeconds, ph.MaxLoadAvg, lag)
		}
	}
}

// writeIndex writes REPORT.md: every run's table in dir, newest first, with
// a link to its full report and plots.
func writeIndex(t *testing.T, dir string) {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "scale-*.json"))
	slices.Sort(paths)
	slices.Reverse(paths)
	var md strings.Builder
	fmt.Fprintf(&md, "# checkpointd vs MM2 MirrorCheckpointConnector: system benchmark runs\n\n")
	fmt.Fprintf(&md, "`make bench-scale` (see bench/scale). Each run: its full report with plots, and the raw JSON. Newest first.\n\n")
	md.WriteString(scaleOutNotes + "\n")
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var run runResult
		if err := json.Unmarshal(data, &run); err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		for i := range run.Scenarios {
			for j := range run.Scenarios[i].Phases {
				run.Scenarios[i].Phases[j].fillQuantiles()
			}
		}
		stamp := strings.TrimSuffix(filepath.Base(path), ".json")
		fmt.Fprintf(&md, "## [%s](%s.md)\n\n%s, took %s, Kafka %s, %d CPUs, durations x%.2g, checkpointd %s.\n\n",
			run.Started.Format("2006-01-02 15:04 UTC"), stamp, scenarioNames(&run), run.Took, run.Kafka, run.CPUs, run.TimeFactor, run.Tree)
		writeTable(&md, &run)
		fmt.Fprintf(&md, "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "REPORT.md"), []byte(md.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func scenarioNames(run *runResult) string {
	var names []string
	for _, sr := range run.Scenarios {
		names = append(names, sr.Scenario.Name)
	}
	return strings.Join(names, ", ")
}

// fillQuantiles restores the delay quantiles after reading the JSON.
func (ph *phaseResult) fillQuantiles() {
	ph.DelayP50, ph.DelayP90, ph.DelayP99, ph.DelayMax = math.NaN(), math.NaN(), math.NaN(), math.NaN()
	if ph.Delay != nil {
		ph.DelayP50, ph.DelayP90, ph.DelayP99, ph.DelayMax = ph.Delay["p50"], ph.Delay["p90"], ph.Delay["p99"], ph.Delay["max"]
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

var errNoData = errors.New("nothing to plot")

// TestScaleReport redraws the report and plots of a finished run from its
// JSON: CHECKPOINTD_SCALE_REPORT=bench/results/scale-<time>.json.
func TestScaleReport(t *testing.T) {
	path := os.Getenv("CHECKPOINTD_SCALE_REPORT")
	if path == "" {
		t.Skip("set CHECKPOINTD_SCALE_REPORT to a results JSON to redraw its report")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var run runResult
	if err := json.Unmarshal(data, &run); err != nil {
		t.Fatal(err)
	}
	for i := range run.Scenarios {
		for j := range run.Scenarios[i].Phases {
			run.Scenarios[i].Phases[j].fillQuantiles()
		}
	}
	writeResults(t, filepath.Dir(path), &run)
}

// plotScenario draws one figure of a scenario, both systems in it.
func plotScenario(sr scenarioResult, kind, path string) error {
	p := plot.New()
	p.Title.Text = sr.Scenario.Name
	p.Legend.Top = true
	drawn := false
	for _, ph := range sr.Phases {
		if kind == "instance-rss" || kind == "instance-cpu" {
			ok, err := plotInstances(p, ph, kind)
			if err != nil {
				return err
			}
			drawn = drawn || ok
			continue
		}
		var xys plotter.XYs
		switch kind {
		case "delay":
			// CDF of the delays from the histogram (log-spaced bins, 1.5x
			// apart), so that a report can be redrawn from the JSON.
			total := 0
			for _, b := range ph.DelayHist {
				total += b.Count
			}
			cum := 0
			for _, b := range ph.DelayHist {
				cum += b.Count
				xys = append(xys, plotter.XY{X: b.UpToMS, Y: float64(cum) / float64(total)})
			}
		case "lag":
			for _, s := range ph.Samples {
				xys = append(xys, plotter.XY{X: s.T, Y: float64(s.Backlog)})
			}
		case "cpu":
			for _, s := range ph.Samples {
				xys = append(xys, plotter.XY{X: s.T, Y: s.CPU})
			}
		case "rss":
			for _, s := range ph.Samples {
				xys = append(xys, plotter.XY{X: s.T, Y: float64(s.RSSMB)})
			}
		}
		if len(xys) == 0 {
			continue
		}
		drawn = true
		l, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		l.Color = phaseColor(ph)
		l.Width = vg.Points(1.2)
		p.Add(l)
		p.Legend.Add(ph.label(), l)
		// Extra lines: checkpointd's reader lag, the broker's CPU.
		var extra plotter.XYs
		for _, s := range ph.Samples {
			switch {
			case kind == "lag" && s.ReaderLag >= 0:
				extra = append(extra, plotter.XY{X: s.T, Y: s.ReaderLag})
			case kind == "cpu":
				extra = append(extra, plotter.XY{X: s.T, Y: s.BrokerCPU})
			}
		}
		if len(extra) > 0 {
			el, err := plotter.NewLine(extra)
			if err != nil {
				return err
			}
			el.Color = phaseColor(ph)
			el.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(el)
			label := ph.label() + ": reader lag (records)"
			if kind == "cpu" {
				label = "target broker during " + ph.label()
			}
			p.Legend.Add(label, el)
		}
	}
	if !drawn {
		return errNoData
	}
	switch kind {
	case "delay":
		p.X.Label.Text = "source commit -> target group offset (ms, log)"
		p.Y.Label.Text = "fraction of timed (commit, partition)s"
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Legend.Left = true
	case "lag":
		p.X.Label.Text = "seconds since the system started"
		p.Y.Label.Text = "timed pairs not yet on target / reader lag"
	case "cpu":
		p.X.Label.Text = "seconds since the system started"
		p.Y.Label.Text = "CPU (cores)"
	case "rss":
		p.X.Label.Text = "seconds since the system started"
		p.Y.Label.Text = "RSS (MB, all instances)"
	case "instance-rss":
		p.X.Label.Text = "seconds since the system started"
		p.Y.Label.Text = "RSS per instance (MB)"
	case "instance-cpu":
		p.X.Label.Text = "seconds since the system started"
		p.Y.Label.Text = "CPU per instance (cores)"
	}
	return p.Save(16*vg.Centimeter, 9*vg.Centimeter, path)
}

// formatProps lists properties as sorted key=value pairs.
func formatProps(props map[string]string) string {
	keys := slices.Sorted(maps.Keys(props))
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = "`" + k + "=" + props[k] + "`"
	}
	return strings.Join(out, ", ")
}

// plotInstances adds a line per instance of a phase: its RSS or CPU, one
// instance per colour; a single-instance phase is its total, dashed.
func plotInstances(p *plot.Plot, ph phaseResult, kind string) (bool, error) {
	n := 0
	if len(ph.Samples) > 0 {
		n = len(ph.Samples[0].InstanceRSSMB)
	}
	if n == 0 {
		if ph.Instances != 1 {
			return false, nil
		}
		n = 1
	}
	drawn := false
	for i := range n {
		var xys plotter.XYs
		for _, s := range ph.Samples {
			y := float64(s.RSSMB)
			if kind == "instance-cpu" {
				y = s.CPU
			}
			if len(s.InstanceRSSMB) > i {
				y = float64(s.InstanceRSSMB[i])
				if kind == "instance-cpu" {
					y = s.InstanceCPU[i]
				}
			}
			xys = append(xys, plotter.XY{X: s.T, Y: y})
		}
		if len(xys) == 0 {
			continue
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return false, err
		}
		l.Width = vg.Points(1.2)
		label := fmt.Sprintf("%s: %s", ph.label(), instanceName(i))
		if len(ph.Samples[0].InstanceRSSMB) == 0 {
			l.Color = phaseColor(ph)
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			label = ph.label()
		} else {
			l.Color = instanceColors[i%len(instanceColors)]
		}
		p.Add(l)
		p.Legend.Add(label, l)
		drawn = true
	}
	return drawn, nil
}

// scaleOutNotes describe the scale-out scenarios in REPORT.md.
//
//go:embed scaleout_notes.md
var scaleOutNotes string
