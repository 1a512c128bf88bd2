package validate

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

const (
	kubernetesDir = "../kubernetes"
	baseDir       = kubernetesDir + "/base"
	overlayDir    = kubernetesDir + "/overlays/example"
)

// checkBuild builds dir and runs every check on it, returning all errors.
func checkBuild(t *testing.T, dir string, secretsProvided bool) (*Manifests, error) {
	t.Helper()
	objs, err := Kustomize(dir)
	if err != nil {
		return nil, err
	}
	m, err := Sort(objs)
	if err != nil {
		return nil, err
	}
	return m, errors.Join(Check(m, CheckOptions{SecretsProvided: secretsProvided, ConfigDir: t.TempDir()})...)
}

func TestKustomizeBase(t *testing.T) {
	m, err := checkBuild(t, baseDir, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Secrets) != 0 {
		t.Errorf("the base holds Secrets %v; credentials belong to overlays", m.Secrets)
	}
}

func TestKustomizeOverlay(t *testing.T) {
	m, err := checkBuild(t, overlayDir, true)
	if err != nil {
		t.Fatal(err)
	}
	d := m.Deployments[0]
	if d.Namespace != "kafka-mirror" || len(m.Namespaces) != 1 || m.Namespaces[0].Name != "kafka-mirror" {
		t.Errorf("overlay: Deployment in namespace %q, namespaces %v; want everything in kafka-mirror", d.Namespace, m.Namespaces)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "registry.example.com/platform/checkpointd:0.1.0" {
		t.Errorf("overlay: image %q", img)
	}
	// Generated names carry a content hash, so a change of the config or
	// the credentials rolls the pods; Check has found both under the names
	// the Deployment uses.
	for name := range m.ConfigMaps {
		if !strings.HasPrefix(name, "checkpointd-config-") {
			t.Errorf("ConfigMap %s: want checkpointd-config-<hash>", name)
		}
	}
	for name := range m.Secrets {
		if !strings.HasPrefix(name, "checkpointd-sasl-") {
			t.Errorf("Secret %s: want checkpointd-sasl-<hash>", name)
		}
	}
	// The overlay's config replaced the base's.
	for _, cm := range m.ConfigMaps {
		if !strings.Contains(cm.Data["mm2-checkpoint.yaml"], `source.cluster.alias: "eu"`) {
			t.Errorf("ConfigMap %s still holds the base's config", cm.Name)
		}
	}
	for _, sm := range m.ServiceMonitors {
		if sm.Labels["release"] == "" {
			t.Errorf("ServiceMonitor %s: the overlay's release label is missing", sm.Name)
		}
	}
}

// copyTree copies the directory src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// plant replaces old by new in file (which must hold old exactly once).
func plant(t *testing.T, file, old, new string) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), old); n != 1 {
		t.Fatalf("%s holds %q %d times, want once", file, old, n)
	}
	if err := os.WriteFile(file, []byte(strings.Replace(string(raw), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// plantedFault is one fault planted in a copy of the manifests (file is
// relative to kubernetes/) and what the validation must say about it.
type plantedFault struct {
	name, file, old, new string
	overlay              bool
	want                 string
}

// plantedFaults are the faults TestBrokenManifestsFail plants; the chart,
// which renders the same base, must report the base's (helm_test.go).
var plantedFaults = []plantedFault{
	{"unknown field", "base/deployment.yaml", "  replicas: 3\n", "  replicas: 3\n  replica: 3\n", false, `unknown field "spec.replica"`},
	{"unknown field in a pod", "base/deployment.yaml", "readOnlyRootFilesystem: true", "readOnlyRootFilesystem: true\n            readOnlyRootFileSystem: true", false, `unknown field "spec.template.spec.containers[0].securityContext.readOnlyRootFileSystem"`},
	{"wrong type", "base/deployment.yaml", "  replicas: 3\n", "  replicas: three\n", false, "spec.replicas"},
	{"unknown field in a ServiceMonitor", "base/servicemonitor.yaml", "interval: 30s", "interval: 30s\n      intervall: 30s", false, `unknown field "spec.endpoints[0].intervall"`},
	{"unknown field in a PrometheusRule", "base/prometheusrule.yaml", "severity: critical\n          annotations:\n            summary: \"checkpointd commits", "severity: critical\n          annotation: {}\n          annotations:\n            summary: \"checkpointd commits", false, `unknown field "spec.groups[0].rules[4].annotation"`},
	{"unknown API version", "base/poddisruptionbudget.yaml", "policy/v1", "policy/v2", false, `no kind "PodDisruptionBudget" is registered for version "policy/v2"`},
	{"broken PromQL", "base/prometheusrule.yaml", `expr: up{job="checkpointd"} == 0`, `expr: up{job="checkpointd"} ==`, false, "alert CheckpointdDown: PromQL"},
	{"alert on a metric checkpointd does not export", "base/prometheusrule.yaml", "expr: checkpointd_gate_open{", "expr: checkpointd_gate_opened{", false, "reads checkpointd_gate_opened, which checkpointd does not export"},
	{"alert on an unknown reason", "base/prometheusrule.yaml", `reason=~"unauthorized|commit_failed`, `reason=~"unauthorised|commit_failed`, false, `reason "unauthorised" is not one checkpointd reports`},
	{"alert on another job", "base/prometheusrule.yaml", `expr: up{job="checkpointd"} == 0`, `expr: up{job="checkpoint"} == 0`, false, `selects job="checkpoint"; the ServiceMonitor's series have job="checkpointd"`},
	{"set operation that matches nothing", "base/prometheusrule.yaml", "unless on (namespace, source, target)", "unless", false, "alert CheckpointdTargetCommitsRetrying: unless between series labelled [namespace reason source target] and [namespace source target] matches nothing"},
	{"config key checkpointd does not know", "base/mm2-checkpoint.yaml", `sync.group.offsets.enabled: "true"`, `sync.group.offset.enabled: "true"`, false, "checkpointd warns"},
	{"config value checkpointd refuses", "base/mm2-checkpoint.yaml", `sync.group.offsets.interval.seconds: "60"`, `sync.group.offsets.interval.seconds: "0"`, false, "checkpointd refuses it"},
	{"checkpointd's own key in the connector config", "base/mm2-checkpoint.yaml", `tasks.max: "3"`, `tasks.max: "3"` + "\ncheckpointd.log.level: debug", false, `key "checkpointd.log.level" is not one of MM2's`},
	{"instance not named", "base/deployment.yaml", "- name: CHECKPOINTD_CHECKPOINTD_INSTANCE_ID\n", "- name: CHECKPOINTD_CHECKPOINTD_INSTANCE\n", false, "checkpointd.instance.id is not set"},
	{"readiness on the wrong path", "base/deployment.yaml", "path: /readyz", "path: /ready", false, "readiness probe on /ready, want /readyz"},
	{"metrics on loopback", "base/deployment.yaml", `value: "0.0.0.0:9464"`, `value: "127.0.0.1:9464"`, false, "cannot reach loopback"},
	{"writable root filesystem", "base/deployment.yaml", "readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false", false, "readOnlyRootFilesystem must be true"},
	{"capabilities kept", "base/deployment.yaml", `drop: ["ALL"]`, `drop: ["NET_RAW"]`, false, "capabilities must drop ALL"},
	{"memory limit below the measured RSS", "base/deployment.yaml", "memory: 512Mi", "memory: 320Mi", false, "not above the largest measured RSS"},
	{"grace period shorter than the drain", "base/deployment.yaml", "terminationGracePeriodSeconds: 45", "terminationGracePeriodSeconds: 10", false, "does not cover the 30 s drain"},
	{"HPA on another Deployment", "base/horizontalpodautoscaler.yaml", "    name: checkpointd\n  minReplicas", "    name: checkpoint\n  minReplicas", false, "scales Deployment checkpoint"},
	{"PDB that blocks every drain", "base/poddisruptionbudget.yaml", "maxUnavailable: 1", "maxUnavailable: 0", false, "allows 0 of 3 pods down"},
	{"Service port pointing nowhere", "base/service.yaml", "targetPort: metrics", "targetPort: metric", false, "target port metric is not a port of the container"},
	{"overlay without its Secret", "overlays/example/kustomization.yaml", "secretGenerator:\n  - name: checkpointd-sasl\n    envs:\n      - sasl.env\n", "", true, `Secret "checkpointd-sasl" is not in the build`},
	{"SASL login checkpointd cannot use", "overlays/example/sasl.env", `CHECKPOINTD_TARGET_CLUSTER_SASL_JAAS_CONFIG=org.apache.kafka.common.security.scram.ScramLoginModule required username="checkpointd" password="example-us-password";`, `CHECKPOINTD_TARGET_CLUSTER_SASL_JAAS_CONFIG=org.apache.kafka.common.security.scram.ScramLoginModule required username="checkpointd";`, true, "checkpointd refuses it"},
}

// TestBrokenManifestsFail plants one fault at a time in a copy of the
// manifests and wants the validation to name it: the checks above can fail.
func TestBrokenManifestsFail(t *testing.T) {
	for _, tc := range plantedFaults {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			copyTree(t, kubernetesDir, dir)
			plant(t, filepath.Join(dir, tc.file), tc.old, tc.new)
			build := filepath.Join(dir, "base")
			if tc.overlay {
				build = filepath.Join(dir, "overlays/example")
			}
			_, err := checkBuild(t, build, tc.overlay)
			if err == nil {
				t.Fatalf("%s: the planted fault passed validation", tc.name)
			}
			t.Log(err)
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%s: error does not say %q:\n%v", tc.name, tc.want, err)
			}
		})
	}
}

// TestDecodeStrictRejectsUnknownFields: the decoder, on its own.
func TestDecodeStrictRejectsUnknownFields(t *testing.T) {
	good := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  replicas: 1\n"
	obj, err := DecodeStrict([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := obj.(*appsv1.Deployment); !ok || *d.Spec.Replicas != 1 {
		t.Fatalf("decoded %T %+v", obj, obj)
	}
	for _, bad := range []string{
		good + "  replicaz: 1\n",
		strings.Replace(good, "replicas: 1", "replicas: one", 1),
		good + "  replicas: 2\n", // duplicate field
		strings.Replace(good, "kind: Deployment", "kind: Deploymnet", 1),
	} {
		if _, err := DecodeStrict([]byte(bad)); err == nil {
			t.Errorf("accepted:\n%s", bad)
		}
	}
}
