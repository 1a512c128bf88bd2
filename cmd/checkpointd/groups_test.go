package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateNamesConsumerGroups: validate lists the consumer groups of
// each flow, checkpointd's own and one per --handler, on the cluster each
// lives on, and refuses the handler names pipeline.New refuses. No Kafka:
// validate never connects.
func TestValidateNamesConsumerGroups(t *testing.T) {
	oneFlow := twoFlows + "B->A.enabled = false\n"
	tests := []struct {
		name    string
		file    string
		args    []string
		wantErr string
		want    []string
		notWant []string
	}{
		{
			name: "default commit source",
			file: oneFlow,
			want: []string{
				"# consumer groups (grant Read on each):\n",
				"#   checkpointd-A-B on source or target: ",
				"#   typed event handlers and checkpoint policies join none\n",
			},
			notWant: []string{"-handler-"},
		},
		{
			name: "admin poll",
			file: oneFlow + "checkpointd.commit.source = admin-poll\n",
			want: []string{"#   checkpointd-A-B on target: "},
		},
		{
			name: "offsets log with two handlers",
			file: oneFlow + "checkpointd.commit.source = offsets-log\ncheckpointd.group.id = cpd\n",
			args: []string{"--handler", "audit", "--handler", "alerts"},
			want: []string{
				"#   cpd on source: ",
				"#   cpd-handler-audit on target: checkpoint handler audit",
				"#   cpd-handler-alerts on target: checkpoint handler alerts",
			},
		},
		{
			name: "every flow has its own",
			file: twoFlows,
			args: []string{"--handler", "audit"},
			want: []string{
				"#   checkpointd-A-B on ", "#   checkpointd-A-B-handler-audit on target: ",
				"#   checkpointd-B-A on ", "#   checkpointd-B-A-handler-audit on target: ",
			},
		},
		{
			name:    "a built-in handler's name",
			file:    oneFlow,
			args:    []string{"--handler", "sync_target_offsets"},
			wantErr: `--handler "sync_target_offsets": the name is a built-in handler's`,
		},
		{
			name:    "a name given twice",
			file:    oneFlow,
			args:    []string{"--handler", "audit", "--handler", "audit"},
			wantErr: `--handler "audit": given twice`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "mm2.properties")
			if err := os.WriteFile(path, []byte(tt.file), 0o600); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			args := append([]string{"validate", "--config", path}, tt.args...)
			err := dispatch(context.Background(), args, &stdout, &stderr)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("validate: %v\n%s", err, stdout.String())
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("validate error = %v, want %q", err, tt.wantErr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, stdout.String())
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(stdout.String(), w) {
					t.Errorf("output has %q:\n%s", w, stdout.String())
				}
			}
		})
	}
}
