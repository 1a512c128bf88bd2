package validate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	composeFile   = "../compose/compose.yaml"
	dashboardFile = "../grafana/checkpointd.json"
)

func checkComposeFile(t *testing.T, file, dockerfile, dashboard string) error {
	t.Helper()
	p, err := LoadCompose(context.Background(), file)
	if err != nil {
		return err
	}
	return errors.Join(CheckCompose(p, ComposeOptions{Dockerfile: dockerfile, Dashboard: dashboard})...)
}

func TestCompose(t *testing.T) {
	if err := checkComposeFile(t, composeFile, dockerfilePath, dashboardFile); err != nil {
		t.Fatal(err)
	}
	p, err := LoadCompose(context.Background(), composeFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"kafka-source", "kafka-target", "mm2", "checkpointd-1", "checkpointd-2", "checkpointd-3", "jaeger", "prometheus", "grafana"} {
		if _, ok := p.Services[name]; !ok {
			t.Errorf("no service %s", name)
		}
	}
	if len(p.Services) != 9 {
		t.Errorf("%d services, want 9", len(p.Services))
	}
}

// TestBrokenComposeFails plants one fault at a time in a copy of the compose
// directory (with the Dockerfile and the dashboard where it expects them).
func TestBrokenComposeFails(t *testing.T) {
	for _, tc := range []struct{ name, file, old, new, want string }{
		{"unknown key", "compose.yaml", "  read_only: true\n", "  read_only: true\n  readonly: true\n", ".readonly false schema"},
		{"wrong type", "compose.yaml", "stop_grace_period: 45s", "stop_grace_period: [45s]", "stop_grace_period"},
		{"dependency on a missing service", "compose.yaml", "    depends_on:\n      - prometheus", "    depends_on:\n      - prometheos", "prometheos"},
		{"missing mounted file", "compose.yaml", "./mm2.properties:/etc/mm2", "./mm2.props:/etc/mm2", "mm2.props, which does not exist"},
		{"checkpointd pointed elsewhere", "checkpointd.yaml", `"kafka-target:9092"`, `"kafka-targett:9092"`, "target cluster kafka-targett:9092 is not a compose Kafka listener"},
		{"config checkpointd refuses", "checkpointd.yaml", `checkpoints.topic.replication.factor: "1"`, `checkpoints.topic.replication.factor: "one"`, "checkpointd refuses checkpointd.yaml"},
		{"config key checkpointd warns about", "checkpointd.yaml", `tasks.max: "3"`, `tasks.max: "3"` + "\ntask.max: \"3\"", "checkpointd warns about checkpointd.yaml"},
		{"instance not scraped", "prometheus.yml", `, "checkpointd-3:9464"`, "", "prometheus job checkpointd scrapes"},
		{"MM2 checkpoints on", "mm2.properties", "source->target.emit.checkpoints.enabled = false\n", "", "leaves MM2's own checkpoint emission on"},
		{"root instance", "compose.yaml", `user: "65532:65532"`, `user: "0"`, `"0" is root`},
		{"no dashboard", "compose.yaml", "      - ../grafana:/var/lib/grafana/dashboards:ro\n", "", "grafana is not given"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			deployments := filepath.Join(root, "deployments")
			copyTree(t, "../compose", filepath.Join(deployments, "compose"))
			copyTree(t, "../grafana", filepath.Join(deployments, "grafana"))
			copyFile(t, dockerfilePath, filepath.Join(deployments, "Dockerfile"))
			file := filepath.Join(deployments, "compose", "compose.yaml")
			// Unchanged, the copy passes.
			if tc.name == "unknown key" {
				if err := checkComposeFile(t, file, filepath.Join(deployments, "Dockerfile"), filepath.Join(deployments, "grafana", "checkpointd.json")); err != nil {
					t.Fatalf("the unchanged copy fails: %v", err)
				}
			}
			plant(t, filepath.Join(deployments, "compose", tc.file), tc.old, tc.new)
			err := checkComposeFile(t, file, filepath.Join(deployments, "Dockerfile"), filepath.Join(deployments, "grafana", "checkpointd.json"))
			if err == nil {
				t.Fatal("the planted fault passed validation")
			}
			t.Log(err)
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error does not say %q:\n%v", tc.want, err)
			}
		})
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
