package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/checkpointd/checkpointd/messages/event"
)

// TestNoopHandlersTakeTheBenchmarkedKinds: one handler per kind the
// benchmark is about, and nothing else, so the overhead is theirs.
func TestNoopHandlersTakeTheBenchmarkedKinds(t *testing.T) {
	var got []event.Kind
	for _, h := range noopHandlers() {
		got = append(got, h.Kinds()...)
	}
	want := []event.Kind{event.KindCheckpointDecided, event.KindTargetCommitResult}
	if !slices.Equal(got, want) {
		t.Errorf("kinds = %v, want %v", got, want)
	}
}

// TestRunTakesCheckpointdsCommandLine: the harness starts it as it starts
// checkpointd; the arguments reach the service's own flag parsing.
func TestRunTakesCheckpointdsCommandLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mm2.properties")
	// Port 1 on the loopback refuses at once: the service starts and fails.
	file := "clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = 127.0.0.1:1\n" +
		"A->B.enabled = true\nadmin.timeout.ms = 2000\n"
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no command", nil, "usage: noophandler run"},
		{"another command", []string{"validate", "--config", path}, "usage: noophandler run"},
		{"no config", []string{"run"}, "--config is required"},
		{"the service runs the flow", []string{"run", "--config", path}, "flow A->B: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			err := run(context.Background(), tt.args, &stderr)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("run(%q) = %v, want an error with %q", tt.args, err, tt.wantErr)
			}
		})
	}
}
