package translate

import (
	"testing"

	"github.com/checkpointd/checkpointd/messages"
)

func TestBounds(t *testing.T) {
	tp := messages.TopicPartition{Topic: "t", Partition: 0}
	ix := NewIndex(Options{CheckpointsLoaded: true})
	for _, s := range []Sync{{0, 0}, {100, 90}, {200, 185}} {
		ix.Apply(tp, s.Upstream, s.Downstream)
	}
	ix.OpenGate()
	tests := []struct {
		name     string
		upstream int64
		lower    int64 // the translation
		upper    Sync
		hasUpper bool
		outcome  Outcome
	}{
		{"at a sync", 100, 90, Sync{200, 185}, true, Translated},
		{"between syncs", 150, 91, Sync{200, 185}, true, Translated},
		{"before the first gap", 5, 1, Sync{100, 90}, true, Translated},
		{"past the newest sync", 250, 186, Sync{}, false, Translated},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, up, has := ix.Bounds(tp, tc.upstream)
			if tr.Outcome != tc.outcome || tr.Downstream != tc.lower || up != tc.upper || has != tc.hasUpper {
				t.Fatalf("Bounds(%d) = %+v, %+v, %v; want downstream %d, upper %+v, %v", tc.upstream, tr, up, has, tc.lower, tc.upper, tc.hasUpper)
			}
			if want := ix.Translate(tp, tc.upstream); want != tr {
				t.Fatalf("Bounds translation %+v differs from Translate %+v", tr, want)
			}
		})
	}
	if tr, _, has := ix.Bounds(messages.TopicPartition{Topic: "other"}, 3); tr.Outcome != NoResult || has {
		t.Fatalf("unknown partition: %+v, %v", tr, has)
	}
}
