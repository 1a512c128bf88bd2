package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const twoFlows = `clusters = A, B
A.bootstrap.servers = a:9092
B.bootstrap.servers = b:9092
A.security.protocol = SASL_PLAINTEXT
A.sasl.mechanism = PLAIN
A.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="s3cr3t";
A->B.enabled = true
B->A.enabled = true
sync.group.offsets.enabled = true
`

// TestValidatePrintsEveryFlow: validate prints each flow's effective
// configuration under its name, and problems name the file's keys.
func TestValidatePrintsEveryFlow(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		wantErr string // "" for a valid file
		want    []string
	}{
		{"two flows", twoFlows, "", []string{
			"# flow A->B: effective configuration (secrets redacted)\n",
			"# flow B->A: effective configuration (secrets redacted)\n",
			"checkpointd.group.id=checkpointd-A-B\n", "checkpointd.group.id=checkpointd-B-A\n",
			"source.cluster.security.protocol=SASL_PLAINTEXT\n", "target.cluster.security.protocol=SASL_PLAINTEXT\n",
			"source.cluster.sasl.jaas.config=[redacted]\n",
			"configuration is valid: 2 flows\n",
		}},
		{"one flow of a driver file", twoFlows + "B->A.enabled = false\n", "", []string{
			"# effective configuration (secrets redacted)\n", "source.cluster.alias=A\n", "configuration is valid\n",
		}},
		{"a cluster not in clusters", twoFlows + "A->C.enabled = true\n", `A->C.enabled="true": cluster C not in clusters (A, B)`, []string{
			"# flow A->B: effective configuration",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "mm2.properties")
			if err := os.WriteFile(path, []byte(tt.file), 0o600); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			err := dispatch(context.Background(), []string{"validate", "--config", path}, &stdout, &stderr)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("validate: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("validate error = %v, want %q", err, tt.wantErr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, stdout.String())
				}
			}
			if strings.Contains(stdout.String()+stderr.String(), "s3cr3t") {
				t.Error("a secret was printed")
			}
		})
	}
}

// TestRunNamesTheFlowThatFailsToStart: a flow whose cluster cannot be
// reached stops the process with an error naming the flow.
func TestRunNamesTheFlowThatFailsToStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mm2.properties")
	// Port 1 on the loopback refuses at once; one flow is enough to fail.
	file := "clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = 127.0.0.1:1\n" +
		"A->B.enabled = true\nB->A.enabled = true\ncheckpointd.metrics.address = 127.0.0.1:0\nadmin.timeout.ms = 2000\n"
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	err := dispatch(context.Background(), []string{"run", "--config", path}, &stdout, &stderr)
	if err == nil || !strings.HasPrefix(err.Error(), "flow A->B: ") && !strings.HasPrefix(err.Error(), "flow B->A: ") {
		t.Fatalf("run error = %v, want it to name the flow", err)
	}
}
