package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Names of the shadow mode's metrics (checkpointd.shadow.enabled).
const (
	GaugeShadowPairs       = "shadow_pairs"
	GaugeShadowUnexplained = "shadow_unexplained_lower"
	CounterShadowWithheld  = "shadow_writes_withheld_total"
	// HistogramShadowFreshness is observed through FreshnessGained.
	HistogramShadowFreshness = "shadow_freshness_gained_seconds"
)

// FreshnessGained observes how long before MM2 wrote a checkpoint
// checkpointd, in shadow mode, had decided that offset or a higher one.
func (m *Metrics) FreshnessGained(d time.Duration) {
	m.mu.Lock()
	h := m.freshness
	if h == nil {
		h = prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: Namespace, Name: HistogramShadowFreshness, Buckets: m.cfg.LatencyBuckets,
			Help: "Shadow mode: how long before MM2 wrote a checkpoint checkpointd had decided that offset or a higher one.",
		})
		m.flow.MustRegister(h)
		m.freshness = h
	}
	m.mu.Unlock()
	h.Observe(max(d, 0).Seconds())
}

// LabeledGaugeFunc registers a gauge with one label, read when scraped: f
// returns the value of each label value.
func (m *Metrics) LabeledGaugeFunc(name, help, label string, f func() map[string]float64) {
	m.registerFunc(name, &labeledFunc{desc: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", name), help, []string{label}, nil),
		kind: prometheus.GaugeValue, f: f})
}

// LabeledCounterFunc is LabeledGaugeFunc for a counter.
func (m *Metrics) LabeledCounterFunc(name, help, label string, f func() map[string]float64) {
	m.registerFunc(name, &labeledFunc{desc: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", name), help, []string{label}, nil),
		kind: prometheus.CounterValue, f: f})
}

type labeledFunc struct {
	desc *prometheus.Desc
	kind prometheus.ValueType
	f    func() map[string]float64
}

func (l *labeledFunc) Describe(ch chan<- *prometheus.Desc) { ch <- l.desc }

func (l *labeledFunc) Collect(ch chan<- prometheus.Metric) {
	for v, n := range l.f() {
		ch <- prometheus.MustNewConstMetric(l.desc, l.kind, n, v)
	}
}
