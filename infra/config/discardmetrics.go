package config

import (
	"reflect"

	"github.com/rcrowley/go-metrics"
)

// discardMetrics is the go-metrics registry of every sarama client
// checkpointd makes: it keeps nothing. Sarama records request rates, sizes
// and latencies per broker into its registry, which checkpointd exports
// nowhere (its own Prometheus metrics say what matters), while the
// standard registry keeps a 1,028-sample histogram per broker and metric
// and ticks every meter every 5 s for as long as the process runs: a fixed
// cost on each instance, however few groups it owns.
type discardMetrics struct{}

func (discardMetrics) Each(func(string, any))            {}
func (discardMetrics) Get(string) any                    { return nil }
func (discardMetrics) GetAll() map[string]map[string]any { return nil }
func (discardMetrics) Register(string, any) error        { return nil }
func (discardMetrics) RunHealthchecks()                  {}
func (discardMetrics) Unregister(string)                 {}
func (discardMetrics) UnregisterAll()                    {}

// GetOrRegister returns a metric that records nothing in place of the one
// metric (or its constructor) describes.
func (discardMetrics) GetOrRegister(_ string, metric any) any {
	switch metric.(type) {
	case func() metrics.Histogram:
		return metrics.NilHistogram{}
	case func() metrics.Meter:
		return metrics.NilMeter{}
	case func() metrics.Counter:
		return metrics.NilCounter{}
	case func() metrics.Gauge:
		return metrics.NilGauge{}
	case func() metrics.Timer:
		return metrics.NilTimer{}
	}
	// A constructor of another kind: what it makes, as the standard
	// registry would hand out (the caller asserts its type).
	if v := reflect.ValueOf(metric); v.Kind() == reflect.Func && v.Type().NumIn() == 0 && v.Type().NumOut() == 1 {
		return v.Call(nil)[0].Interface()
	}
	return metric
}
