package metrics

import "github.com/prometheus/client_golang/prometheus"

// CounterExactTranslations counts the service's exact translations of idle
// groups by outcome.
const CounterExactTranslations = "exact_translations_total"

// ExactTranslations registers the counter of exact translations of idle
// groups and returns the function that counts one: outcome is "exact" or
// the reason MM2's translation was kept.
func (m *Metrics) ExactTranslations() func(outcome string) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: CounterExactTranslations,
		Help: "Searches for the exact translation of an idle group's commit, by outcome: exact, or why MM2's translation was kept.",
	}, []string{"outcome"})
	m.registerFunc(CounterExactTranslations, c)
	return func(outcome string) { c.WithLabelValues(outcome).Inc() }
}
