package pipeline_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/checkpointd/checkpointd/infra/config"
	"github.com/checkpointd/checkpointd/infra/metrics"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/pipeline"
)

// TestMetricsOnKafka runs checkpointd with its metrics and health server
// against the real clusters and MM2, and scrapes /metrics and /readyz during
// the run: /readyz is 503 before the gate opens and 200 after; a group's
// commits on the source move the emitted counter by exactly the checkpoints
// written, the latency histogram by one sample per checkpoint of each
// partition, and the target-commit counters and delay histograms as the
// target group follows.
func TestMetricsOnKafka(t *testing.T) {
	bed := kafkatest.Shared(t)
	f := newFixture(t, bed, map[string]int32{"metrics": 2})
	topic, remote := f.topics["metrics"], f.remote(f.topics["metrics"])
	group := kafkatest.UniqueName(t, "grp")
	cfg := loadConfig(t, writeConfig(t, "metrics.yaml", f.props(t, []string{group}, "")))

	m := metrics.New(metrics.Config{Source: cfg.SourceAlias, Target: cfg.TargetAlias, GroupLabels: true,
		Registry: prometheus.NewRegistry()})
	var health metrics.Health
	srv, err := metrics.Listen("127.0.0.1:0", m, &health, testLogger(t, "metrics"))
	if err != nil {
		t.Fatal(err)
	}
	serveCtx, stopServing := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(serveCtx) }()
	t.Cleanup(func() {
		stopServing()
		if err := <-served; err != nil {
			t.Errorf("metrics server: %v", err)
		}
	})
	base := "http://" + srv.Addr()

	if code, body := httpGet(t, base+"/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz before the pipeline exists = %d %q, want 503", code, body)
	}
	in := startWithOptions(t, f, "metrics", cfg, func(p *pipeline.Pipeline) {
		health.SetReady(p.Ready)
		// Built, not running: the gate is closed.
		if code, body := httpGet(t, base+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "gate") {
			t.Errorf("/readyz before Run = %d %q, want 503 naming the gate", code, body)
		}
	}, pipeline.WithMetrics(m))
	if code, _ := httpGet(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d", code)
	}
	f.waitFor(t, waitTimeout, "/readyz to turn 200 once the gate opens", func() error {
		if code, body := httpGet(t, base+"/readyz"); code != http.StatusOK {
			return fmt.Errorf("/readyz = %d %q", code, strings.TrimSpace(body))
		}
		return nil
	})
	if !in.p.Checkpointer().GateOpen() {
		t.Error("/readyz is 200 with the gate closed")
	}

	f.produce(t, "metrics", 40, 10)
	ends, _ := f.settle(t, "metrics", in)
	before := scrapeMetrics(t, base)
	if v := before.value("checkpointd_checkpoints_emitted_total", "group", group); v != 0 {
		t.Errorf("emitted before any commit = %v", v)
	}

	// The group commits the end of both partitions.
	history := make(map[int32][]int64)
	f.commit(t, group, topic, ends, history)
	cps := f.waitCheckpoints(t, group, topic, ends)
	f.waitTargetFollows(t, group, cps)

	written := make(map[int32]int) // checkpoints of the group on the topic, per partition
	var s promSamples
	f.waitFor(t, waitTimeout, "the metrics to count every checkpoint written and committed", func() error {
		clear(written)
		for _, cp := range f.checkpointsOf(t, group) {
			written[cp.TopicPartition.Partition]++
		}
		s = scrapeMetrics(t, base)
		total := 0
		for p, n := range written {
			total += n
			if got := s.value("checkpointd_checkpoint_latency_seconds_count", "group", group, "topic", remote, "partition", strconv.Itoa(int(p))); got != float64(n) {
				return fmt.Errorf("partition %d: %d checkpoints written, latency histogram has %v promSamples", p, n, got)
			}
		}
		if got := s.value("checkpointd_checkpoints_emitted_total", "group", group, "topic", remote); got != float64(total) {
			return fmt.Errorf("emitted counter %v, %d checkpoints written", got, total)
		}
		if got := s.value("checkpointd_target_commits_total", "group", group, "reason", "committed"); got < float64(len(ends)) {
			return fmt.Errorf("target commits (committed) %v, want at least %d", got, len(ends))
		}
		return nil
	})
	t.Logf("checkpoints written per partition: %v", written)
	for p := range ends {
		if written[p] == 0 {
			t.Errorf("partition %d: no checkpoint written", p)
		}
		part := strconv.Itoa(int(p))
		count := s.value("checkpointd_checkpoint_latency_seconds_count", "group", group, "partition", part)
		sum := s.value("checkpointd_checkpoint_latency_seconds_sum", "group", group, "partition", part)
		if count == 0 || sum <= 0 || sum/count > waitTimeout.Seconds() {
			t.Errorf("partition %d: latency histogram count %v sum %v: want promSamples of a positive latency under %s", p, count, sum, waitTimeout)
		}
		// The commit stage ran on this instance: both delays are measured.
		for _, name := range []string{"checkpointd_target_commit_delay_seconds_count", "checkpointd_end_to_end_delay_seconds_count"} {
			if got := s.value(name, "group", group, "topic", remote, "partition", part); got < 1 {
				t.Errorf("partition %d: %s = %v, want at least 1", p, name, got)
			}
		}
	}
	for _, c := range []struct {
		name   string
		labels []string
		min    float64
	}{
		{"checkpointd_gate_open", nil, 1},
		{"checkpointd_index_partitions", nil, float64(len(ends))},
		{"checkpointd_index_syncs", nil, float64(len(ends))},
		{"checkpointd_router_handler_execution_time_seconds_count", []string{"handler_name", "translate_commits"}, 1},
		{"checkpointd_router_handler_execution_time_seconds_count", []string{"handler_name", "index_offset_syncs"}, 1},
		{"checkpointd_router_handler_execution_time_seconds_count", []string{"handler_name", "sync_target_offsets"}, 1},
	} {
		if got := s.value(c.name, c.labels...); got < c.min {
			t.Errorf("%s%v = %v, want at least %v", c.name, c.labels, got, c.min)
		}
	}
	if got := s.value("checkpointd_gate_open", "source", cfg.SourceAlias, "target", cfg.TargetAlias); got != 1 {
		t.Errorf("gate_open{source,target} = %v", got)
	}
	// The readers report their positions: the offset-syncs tail has read
	// MM2's syncs, the checkpoints tail at least the ones counted above.
	if got := s.value("checkpointd_reader_offset", "topic", f.bed.OffsetSyncsTopic(), "partition", "0"); got < 1 {
		t.Errorf("reader_offset of %s = %v, want > 0", f.bed.OffsetSyncsTopic(), got)
	}
	if got := s.value("checkpointd_reader_offset", "topic", f.bed.CheckpointsTopic(), "partition", "0"); got < 1 {
		t.Errorf("reader_offset of %s = %v, want > 0", f.bed.CheckpointsTopic(), got)
	}

	// The same commits again: one not_newer skip per partition, no checkpoint.
	emitted := s.value("checkpointd_checkpoints_emitted_total", "group", group)
	notNewer := s.value("checkpointd_checkpoints_skipped_total", "group", group, "reason", "not_newer")
	f.commit(t, group, topic, ends, history)
	f.waitFor(t, waitTimeout, "the repeated commits to count as not_newer skips", func() error {
		s = scrapeMetrics(t, base)
		if got := s.value("checkpointd_checkpoints_skipped_total", "group", group, "reason", "not_newer"); got < notNewer+float64(len(ends)) {
			return fmt.Errorf("not_newer skips %v, want at least %v", got, notNewer+float64(len(ends)))
		}
		return nil
	})
	if got := s.value("checkpointd_checkpoints_emitted_total", "group", group); got != emitted {
		t.Errorf("emitted moved from %v to %v on repeated commits", emitted, got)
	}
	f.stop(t, in)
}

// startWithOptions is fixture.start with extra options; ready runs between New and
// Run.
func startWithOptions(t *testing.T, f *fixture, name string, cfg *config.Config, ready func(*pipeline.Pipeline), opts ...pipeline.Option) *instance {
	t.Helper()
	logger := testLogger(t, name)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	obs := &decisions{log: logger, last: make(map[groupPartition]string)}
	p, err := pipeline.New(ctx, cfg, append([]pipeline.Option{pipeline.WithLogger(logger), pipeline.WithObserver(obs)}, opts...)...)
	if err != nil {
		t.Fatalf("pipeline.New (%s): %v", name, err)
	}
	ready(p)
	runCtx, stop := context.WithCancel(context.Background())
	in := &instance{name: name, p: p, obs: obs, cancel: stop, done: make(chan error, 1)}
	go func() { in.done <- p.Run(runCtx) }()
	f.mu.Lock()
	f.running[in] = struct{}{}
	f.mu.Unlock()
	t.Cleanup(func() { f.stop(t, in) })
	return in
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// promSamples are the lines of a Prometheus text scrape.
type promSamples []promSample

type promSample struct {
	name   string
	labels map[string]string
	value  float64
}

func scrapeMetrics(t *testing.T, base string) promSamples {
	t.Helper()
	code, body := httpGet(t, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics = %d", code)
	}
	var out promSamples
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if sp < 0 || err != nil {
			t.Fatalf("unparsable sample %q", line)
		}
		s := promSample{name: line[:sp], labels: map[string]string{}, value: v}
		if i := strings.IndexByte(s.name, '{'); i >= 0 {
			for _, kv := range splitPromLabels(s.name[i+1 : len(s.name)-1]) {
				k, val, _ := strings.Cut(kv, "=")
				s.labels[k], _ = strconv.Unquote(val)
			}
			s.name = s.name[:i]
		}
		out = append(out, s)
	}
	return out
}

// splitPromLabels splits `a="x",b="y,z"` at the commas between labels.
func splitPromLabels(s string) []string {
	var out []string
	inQuote, start := false, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			inQuote = !inQuote
		case ',':
			if !inQuote {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// value sums the promSamples of name whose labels match the given pairs.
func (ss promSamples) value(name string, labels ...string) float64 {
	var sum float64
next:
	for _, s := range ss {
		if s.name != name {
			continue
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if s.labels[labels[i]] != labels[i+1] {
				continue next
			}
		}
		sum += s.value
	}
	return sum
}
