package demo

import (
	"strings"
	"testing"
)

func TestVerify(t *testing.T) {
	tests := []struct {
		name        string
		interrupted bool
		part        PartitionResult
		wantErr     string // "" for none
	}{
		{
			name: "behind the exact position is fine",
			part: PartitionResult{Group: "g", Partition: "t-0", SourceOffset: 50, TargetOffset: 41, ExactTarget: 45},
		},
		{
			name:    "past the exact position skips records",
			part:    PartitionResult{Group: "g", Partition: "t-0", SourceOffset: 50, TargetOffset: 46, ExactTarget: 45},
			wantErr: "1 records would be skipped",
		},
		{
			name:    "a commit that never reached the target",
			part:    PartitionResult{Group: "g", Partition: "t-0", SourceOffset: 50, TargetOffset: -1, ExactTarget: 45},
			wantErr: "never followed",
		},
		{
			name:        "an interrupted run may not have synced yet",
			interrupted: true,
			part:        PartitionResult{Group: "g", Partition: "t-0", SourceOffset: 50, TargetOffset: -1, ExactTarget: 45},
		},
		{
			name: "nothing committed, nothing to sync",
			part: PartitionResult{Group: "g", Partition: "t-0", SourceOffset: -1, TargetOffset: -1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Summary{Interrupted: tt.interrupted, Partitions: []PartitionResult{tt.part}}
			err := s.Verify()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Verify() = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Verify() = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}
