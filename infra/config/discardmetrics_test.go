package config

import (
	"testing"

	"github.com/rcrowley/go-metrics"
)

// Sarama's ways of getting its metrics all come back as metrics that keep
// nothing, and the clients' configs use the registry.
func TestDiscardMetricsKeepsNothing(t *testing.T) {
	r := discardMetrics{}
	tests := []struct {
		name string
		get  func() any
		want any
	}{
		{"meter", func() any { return metrics.GetOrRegisterMeter("m", r) }, metrics.NilMeter{}},
		{"counter", func() any { return metrics.GetOrRegisterCounter("c", r) }, metrics.NilCounter{}},
		{"gauge", func() any { return metrics.GetOrRegisterGauge("g", r) }, metrics.NilGauge{}},
		{"histogram", func() any {
			return r.GetOrRegister("h", func() metrics.Histogram { return metrics.NewHistogram(metrics.NewUniformSample(10)) })
		}, metrics.NilHistogram{}},
		{"other constructor", func() any { return r.GetOrRegister("e", func() metrics.EWMA { return metrics.NilEWMA{} }) }, metrics.NilEWMA{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.get(); got != tt.want {
				t.Errorf("got %T, want %T", got, tt.want)
			}
		})
	}
	if got := r.GetAll(); len(got) != 0 {
		t.Errorf("registry holds %v", got)
	}

	cfg, _, err := FromProperties(map[string]string{"source.cluster.alias": "a", "target.cluster.alias": "b",
		"source.cluster.bootstrap.servers": "localhost:1", "target.cluster.bootstrap.servers": "localhost:2"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, role := range usedRoles {
		sc, err := cfg.SaramaConfig(role)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := sc.MetricRegistry.(discardMetrics); !ok {
			t.Errorf("%s client: registry %T, want discardMetrics", role, sc.MetricRegistry)
		}
	}
}
