package metrics

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestShadowEndpoint: /shadow serves the reports of the flows in shadow
// mode as a JSON array, the whole's and its parts', and 404 when none is.
func TestShadowEndpoint(t *testing.T) {
	report := func(flow string) func() any { return func() any { return map[string]string{"flow": flow} } }
	for _, tc := range []struct {
		name   string
		setup  func(whole, ab, ba *Health)
		status int
		body   string
	}{
		{"none in shadow mode", func(_, _, _ *Health) {}, http.StatusNotFound, "no flow runs in shadow mode"},
		{"one flow of two", func(_, ab, _ *Health) { ab.SetShadow(report("A->B")) }, http.StatusOK, `[{"flow":"A->B"}]`},
		{"both flows", func(_, ab, ba *Health) { ab.SetShadow(report("A->B")); ba.SetShadow(report("B->A")) }, http.StatusOK,
			`[{"flow":"A->B"},{"flow":"B->A"}]`},
		{"a single flow", func(whole, _, _ *Health) { whole.SetShadow(report("A->B")) }, http.StatusOK, `[{"flow":"A->B"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var whole, ab, ba Health
			whole.Join(Part{Name: "A->B", Health: &ab}, Part{Name: "B->A", Health: &ba})
			tc.setup(&whole, &ab, &ba)
			mux := http.NewServeMux()
			whole.Register(mux)
			srv := httptest.NewServer(mux)
			defer srv.Close()
			status, body := get(t, srv.URL+"/shadow")
			compact := strings.Join(strings.Fields(body), "")
			if status != tc.status || !strings.Contains(compact, strings.Join(strings.Fields(tc.body), "")) {
				t.Errorf("/shadow = %d %q, want %d %q", status, body, tc.status, tc.body)
			}
		})
	}
}

// TestShadowMetrics: the labeled gauge and counter read their functions
// when scraped, and the freshness histogram counts each observation.
func TestShadowMetrics(t *testing.T) {
	m := New(Config{Source: "A", Target: "B"})
	pairs := map[string]float64{"equal": 3, "checkpointd_ahead": 1}
	m.LabeledGaugeFunc(GaugeShadowPairs, "pairs", "status", func() map[string]float64 { return pairs })
	m.LabeledCounterFunc(CounterShadowWithheld, "withheld", "kind", func() map[string]float64 { return map[string]float64{"checkpoint": 7} })
	m.FreshnessGained(2 * time.Second)
	m.FreshnessGained(-time.Second) // counted as 0
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, metric := range mf.GetMetric() {
			key := mf.GetName()
			for _, l := range metric.GetLabel() {
				if l.GetName() == "status" || l.GetName() == "kind" {
					key += "/" + l.GetValue()
				}
			}
			switch {
			case metric.GetGauge() != nil:
				got[key] = metric.GetGauge().GetValue()
			case metric.GetCounter() != nil:
				got[key] = metric.GetCounter().GetValue()
			}
		}
		if mf.GetName() == "checkpointd_"+HistogramShadowFreshness {
			h := mf.GetMetric()[0].GetHistogram()
			if h.GetSampleCount() != 2 || h.GetSampleSum() != 2 {
				t.Errorf("freshness: %d samples, sum %v; want 2 and 2 s", h.GetSampleCount(), h.GetSampleSum())
			}
		}
	}
	for key, want := range map[string]float64{"checkpointd_shadow_pairs/equal": 3, "checkpointd_shadow_pairs/checkpointd_ahead": 1,
		"checkpointd_shadow_writes_withheld_total/checkpoint": 7} {
		if got[key] != want {
			t.Errorf("%s = %v, want %v", key, got[key], want)
		}
	}
}
