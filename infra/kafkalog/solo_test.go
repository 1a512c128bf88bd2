package kafkalog

import (
	"testing"

	"github.com/IBM/sarama"
)

func TestSampledTrace(t *testing.T) {
	const id = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-"
	for _, tc := range []struct {
		name    string
		headers map[string]string
		want    bool
	}{
		{"sampled", map[string]string{"traceparent": id + "01"}, true},
		{"sampled with other flags", map[string]string{"traceparent": id + "03"}, true},
		{"not sampled", map[string]string{"traceparent": id + "00"}, false},
		{"no traceparent", map[string]string{"checkpointd-commit-time-ms": "5"}, false},
		{"flags not hex", map[string]string{"traceparent": id + "zz"}, false},
		{"too few fields", map[string]string{"traceparent": "00-abc-01"}, false},
		{"flags too long", map[string]string{"traceparent": id + "001"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hs []*sarama.RecordHeader
			for k, v := range tc.headers {
				hs = append(hs, &sarama.RecordHeader{Key: []byte(k), Value: []byte(v)})
			}
			if got := sampledTrace(hs); got != tc.want {
				t.Errorf("sampledTrace(%v) = %v, want %v", tc.headers, got, tc.want)
			}
		})
	}
}
