package metrics

import "testing"

// TestExactTranslations counts outcomes under the flow's labels.
func TestExactTranslations(t *testing.T) {
	m := New(Config{Source: "A", Target: "B"})
	count := m.ExactTranslations()
	count("exact")
	count("exact")
	count("read_denied")
	families, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "checkpointd_exact_translations_total" {
			continue
		}
		for _, s := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range s.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["source"] != "A" || labels["target"] != "B" {
				t.Errorf("series without the flow's labels: %v", labels)
			}
			got[labels["outcome"]] = s.GetCounter().GetValue()
		}
	}
	if len(got) != 2 || got["exact"] != 2 || got["read_denied"] != 1 {
		t.Fatalf("counted %v, want exact 2, read_denied 1", got)
	}
}
