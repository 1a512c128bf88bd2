package metrics

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

func newTest(groupLabels bool) *Metrics {
	return New(Config{Source: "src", Target: "tgt", GroupLabels: groupLabels, Registry: prometheus.NewRegistry()})
}

// histogram returns the sample count and sum of the histogram series with
// the given labels, from the registry as a scrape would see it.
func histogram(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) (uint64, float64) {
	t.Helper()
	m := series(t, reg, name, labels)
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}

// series returns the series of metric name with the given labels as a
// scrape would see it; nil (whose getters return zeros) if there is none.
func series(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if matches(m, labels) {
				return m
			}
		}
	}
	return nil
}

func matches(m *dto.Metric, labels map[string]string) bool {
	n := 0
	for _, lp := range m.GetLabel() {
		if v, ok := labels[lp.GetName()]; ok {
			if v != lp.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(labels)
}

func TestObserver(t *testing.T) {
	m := newTest(true)
	tp := messages.TopicPartition{Topic: "src.orders", Partition: 3}
	cp := messages.Checkpoint{Group: "g1", TopicPartition: tp, UpstreamOffset: 10, DownstreamOffset: 7}
	m.CheckpointEmitted(context.Background(), cp, time.Now().Add(-1500*time.Millisecond))
	m.CheckpointEmitted(context.Background(), cp, time.Now().Add(-500*time.Millisecond))
	m.CheckpointEmitted(context.Background(), messages.Checkpoint{Group: "g2", TopicPartition: tp}, time.Time{}) // no commit time: counted, not timed
	m.CheckpointSkipped(context.Background(), "g1", tp, 0, messages.SkipNoSyncYet)
	m.CheckpointSkipped(context.Background(), "g1", tp, 0, messages.SkipNoSyncYet)
	m.CheckpointSkipped(context.Background(), "g2", tp, 0, messages.SkipNotNewer)
	m.RecordMalformed("__consumer_offsets", 4, 99, errors.New("short"))

	if got := toFloat64(m.emitted.WithLabelValues("g1", "src.orders")); got != 2 {
		t.Errorf("emitted{g1} = %v, want 2", got)
	}
	if got := toFloat64(m.emitted.WithLabelValues("g2", "src.orders")); got != 1 {
		t.Errorf("emitted{g2} = %v, want 1", got)
	}
	if got := toFloat64(m.skipped.WithLabelValues("g1", "no_sync_yet")); got != 2 {
		t.Errorf("skipped{g1,no_sync_yet} = %v, want 2", got)
	}
	if got := toFloat64(m.malformed.WithLabelValues("__consumer_offsets")); got != 1 {
		t.Errorf("malformed = %v, want 1", got)
	}
	count, sum := histogram(t, m.reg, "checkpointd_checkpoint_latency_seconds",
		map[string]string{"source": "src", "target": "tgt", "group": "g1", "topic": "src.orders", "partition": "3"})
	if count != 2 || sum < 1.9 || sum > 10 {
		t.Errorf("latency{g1,3}: count %d sum %.3f, want 2 samples summing to about 2s", count, sum)
	}
	if count, _ := histogram(t, m.reg, "checkpointd_checkpoint_latency_seconds", map[string]string{"group": "g2"}); count != 0 {
		t.Errorf("latency{g2}: %d samples, want none (no commit time)", count)
	}

	if got := toFloat64(m.gate); got != 0 {
		t.Errorf("gate before GateOpened = %v", got)
	}
	m.GateOpened()
	if got := toFloat64(m.gate); got != 1 {
		t.Errorf("gate after GateOpened = %v", got)
	}

	// The commit stage: g1's partition commits (end-to-end measured from
	// the source commit time in the checkpoint's header, 0.5s ago), g2's
	// is active.
	m.TargetResult(context.Background(), "g2", tp, targetgroup.ActiveOnTarget, time.Now(), time.Time{})
	m.TargetResult(context.Background(), "g1", tp, targetgroup.Committed, time.Now().Add(-200*time.Millisecond), time.Now().Add(-500*time.Millisecond))
	if got := toFloat64(m.targetResult.WithLabelValues("g1", "committed")); got != 1 {
		t.Errorf("target_commits{g1,committed} = %v", got)
	}
	if got := toFloat64(m.targetResult.WithLabelValues("g2", "active_on_target")); got != 1 {
		t.Errorf("target_commits{g2,active_on_target} = %v", got)
	}
	count, sum = histogram(t, m.reg, "checkpointd_target_commit_delay_seconds", map[string]string{"group": "g1", "partition": "3"})
	if count != 1 || sum < 0.19 || sum > 5 {
		t.Errorf("commit delay: count %d sum %.3f, want one sample of about 0.2s", count, sum)
	}
	count, sum = histogram(t, m.reg, "checkpointd_end_to_end_delay_seconds", map[string]string{"group": "g1", "partition": "3"})
	if count != 1 || sum < 0.49 || sum > 5 {
		t.Errorf("end-to-end: count %d sum %.3f, want one sample of about 0.5s", count, sum)
	}
	if count, _ := histogram(t, m.reg, "checkpointd_end_to_end_delay_seconds", map[string]string{"group": "g2"}); count != 0 {
		t.Errorf("end-to-end{g2}: %d samples, want none (not committed)", count)
	}
	// A checkpoint without the header (one MM2 wrote) has no source commit
	// time to measure from.
	m.TargetResult(context.Background(), "g1", tp, targetgroup.Committed, time.Now(), time.Time{})
	if count, _ := histogram(t, m.reg, "checkpointd_end_to_end_delay_seconds", map[string]string{"group": "g1"}); count != 1 {
		t.Errorf("end-to-end after a repeat commit: %d samples, want 1", count)
	}
	// A checkpoint emitted by another instance carries the source commit
	// time in its header too: the instance that commits it measures from that.
	m.TargetResult(context.Background(), "g3", tp, targetgroup.Committed, time.Now(), time.Now().Add(-300*time.Millisecond))
	count, sum = histogram(t, m.reg, "checkpointd_end_to_end_delay_seconds", map[string]string{"group": "g3"})
	if count != 1 || sum < 0.29 || sum > 5 {
		t.Errorf("end-to-end{g3} from the header's commit time: count %d sum %.3f, want one sample of about 0.3s", count, sum)
	}

	m.ReaderRecord("mm2-offset-syncs.tgt.internal", 0, 41, 50)
	if got := toFloat64(m.readerLag.WithLabelValues("mm2-offset-syncs.tgt.internal", "0")); got != 8 {
		t.Errorf("lag = %v, want 8", got)
	}
	m.ReaderRecord("mm2-offset-syncs.tgt.internal", 0, 49, 50)
	if got := toFloat64(m.readerLag.WithLabelValues("mm2-offset-syncs.tgt.internal", "0")); got != 0 {
		t.Errorf("lag at the end = %v, want 0", got)
	}
}

func TestGroupLabelsOff(t *testing.T) {
	m := newTest(false)
	tp := messages.TopicPartition{Topic: "t", Partition: 0}
	for _, g := range []string{"a", "b", "c"} {
		committedAt := time.Now()
		m.CheckpointEmitted(context.Background(), messages.Checkpoint{Group: g, TopicPartition: tp}, committedAt)
		m.CheckpointSkipped(context.Background(), g, tp, 0, messages.SkipNoSyncYet)
		m.TargetResult(context.Background(), g, tp, targetgroup.Committed, time.Now(), committedAt)
	}
	if got := toFloat64(m.emitted.WithLabelValues("", "t")); got != 3 {
		t.Errorf("emitted{group=\"\"} = %v, want 3", got)
	}
	for name, c := range map[string]prometheus.Collector{"emitted": m.emitted, "skipped": m.skipped, "target": m.targetResult,
		"latency": m.latency, "end-to-end": m.endToEnd} {
		if n := collectAndCount(c); n != 1 {
			t.Errorf("%s: %d series with group labels off, want 1", name, n)
		}
	}
	// End-to-end still has a sample per group.
	if count, _ := histogram(t, m.reg, "checkpointd_end_to_end_delay_seconds", nil); count != 3 {
		t.Errorf("end-to-end samples = %d, want 3", count)
	}
}

func TestServer(t *testing.T) {
	m := newTest(true)
	m.GaugeFunc("index_partitions", "test", func() float64 { return 7 })
	var h Health
	srv, err := Listen("127.0.0.1:0", m, &h, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + srv.Addr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Errorf("/healthz = %d", code)
	}
	if code, body := get("/readyz"); code != 503 {
		t.Errorf("/readyz with no check = %d %q, want 503", code, body)
	}
	ready := errors.New("gate closed")
	h.SetReady(func(context.Context) error { return ready })
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, "gate closed") {
		t.Errorf("/readyz = %d %q, want 503 naming the reason", code, body)
	}
	h.SetReady(func(context.Context) error { return nil })
	if code, _ := get("/readyz"); code != 200 {
		t.Errorf("/readyz when ready = %d", code)
	}
	m.GateOpened()
	code, body := get("/metrics")
	if code != 200 {
		t.Fatalf("/metrics = %d", code)
	}
	for _, want := range []string{
		`checkpointd_gate_open{source="src",target="tgt"} 1`,
		`checkpointd_index_partitions{source="src",target="tgt"} 7`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// collect returns what c exports, as a scrape would.
func collect(c prometheus.Collector) []*dto.Metric {
	ch := make(chan prometheus.Metric, 100)
	go func() { c.Collect(ch); close(ch) }()
	var out []*dto.Metric
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err == nil {
			out = append(out, &d)
		}
	}
	return out
}

func collectAndCount(c prometheus.Collector) int { return len(collect(c)) }

// toFloat64 is the value of a counter or gauge with a single series.
func toFloat64(c prometheus.Collector) float64 {
	ms := collect(c)
	if len(ms) != 1 {
		return -1
	}
	if ms[0].Counter != nil {
		return ms[0].Counter.GetValue()
	}
	return ms[0].GetGauge().GetValue()
}
