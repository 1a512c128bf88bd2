package demo

import (
	"testing"

	"github.com/checkpointd/checkpointd/messages"
)

func TestTargetPositionSkipsFilteredRecords(t *testing.T) {
	tp := messages.TopicPartition{Topic: "payments", Partition: 1}
	p := newPositions()
	// Source 0,1 -> target 0,1; source 2 filtered; source 3 -> target 2.
	p.mirrored(tp, 0, 0)
	p.mirrored(tp, 1, 1)
	p.filtered(tp, 2)
	p.mirrored(tp, 3, 2)

	tests := []struct {
		committed int64
		want      int64
		known     bool
	}{
		{0, 0, true},
		{2, 2, true}, // the next record to read is the filtered one: resume at source 3's copy
		{3, 2, true},
		{4, 3, true}, // all read: the target's end
		{9, 3, false},
	}
	for _, tt := range tests {
		got, known := p.targetPosition(tp, tt.committed)
		if got != tt.want || known != tt.known {
			t.Errorf("targetPosition(%d) = %d, %v; want %d, %v", tt.committed, got, known, tt.want, tt.known)
		}
	}
	if m, f := p.totals(); m != 3 || f != 1 {
		t.Errorf("totals = %d mirrored, %d filtered; want 3, 1", m, f)
	}
}
