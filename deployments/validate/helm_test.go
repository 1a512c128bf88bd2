package validate

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

const chartDir = "../helm/checkpointd"

// release is what the tests install the chart as; the chart's object names
// do not depend on it (see values.yaml).
var release = HelmRelease{Name: "checkpointd", Namespace: "default"}

// renderChart renders the chart with values, runs the checks of the
// kustomize builds on it when check is set, and returns its objects.
func renderChart(t *testing.T, dir string, values map[string]any, check bool) (*Manifests, []Object, error) {
	t.Helper()
	objs, err := Helm(context.Background(), dir, release, values)
	if err != nil {
		return nil, nil, err
	}
	m, err := Sort(objs)
	if err != nil {
		return nil, nil, err
	}
	if check {
		err = errors.Join(Check(m, CheckOptions{ConfigDir: t.TempDir()})...)
	}
	return m, objs, err
}

// asJSON is an object as its API type writes it, for comparing.
func asJSON(t *testing.T, o Object) map[string]any {
	t.Helper()
	raw, err := json.Marshal(o.Obj)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// diff lists the paths where a and b differ.
func diff(path string, a, b any) []string {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		var out []string
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		for _, k := range sortedKeys(keys) {
			out = append(out, diff(path+"."+k, am[k], bm[k])...)
		}
		return out
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		var out []string
		for i := range al {
			out = append(out, diff(fmt.Sprintf("%s[%d]", path, i), al[i], bl[i])...)
		}
		return out
	}
	if reflect.DeepEqual(a, b) {
		return nil
	}
	return []string{fmt.Sprintf("%s: kustomize %v, helm %v", path, a, b)}
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// compareBuilds lists every difference between the kustomize build and the
// chart's objects, by kind and name.
func compareBuilds(t *testing.T, kust, helm []Object) []string {
	t.Helper()
	key := func(o Object) string { return o.Kind + " " + o.Name }
	byKey := map[string]Object{}
	for _, o := range helm {
		byKey[key(o)] = o
	}
	var out []string
	for _, k := range kust {
		h, ok := byKey[key(k)]
		if !ok {
			out = append(out, key(k)+": only in the kustomize build")
			continue
		}
		delete(byKey, key(k))
		for _, d := range diff("", asJSON(t, k), asJSON(t, h)) {
			out = append(out, key(k)+" "+d)
		}
	}
	for k := range byKey {
		out = append(out, k+": only in the chart")
	}
	sort.Strings(out)
	return out
}

// TestHelmDefaultsEqualKustomize: with its default values the chart renders
// the kustomize base object for object and field for field, including the
// ConfigMap's content-hash name, and passes the same checks.
func TestHelmDefaultsEqualKustomize(t *testing.T) {
	kust, err := Kustomize(baseDir)
	if err != nil {
		t.Fatal(err)
	}
	_, helm, err := renderChart(t, chartDir, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(kust) < 8 {
		t.Fatalf("the kustomize base builds %d objects; the comparison needs them all", len(kust))
	}
	if d := compareBuilds(t, kust, helm); len(d) > 0 {
		t.Fatalf("helm template with the default values differs from kustomize build of the base:\n%s", strings.Join(d, "\n"))
	}
	// Beyond equal objects: how many are the same text too (key order,
	// quoting, block scalars). Not required, as the two YAML writers may
	// change their style; logged for the record.
	text := map[string]string{}
	for _, h := range helm {
		text[h.Kind+" "+h.Name] = strings.TrimSuffix(string(h.YAML), "\n")
	}
	same := 0
	for _, k := range kust {
		if text[k.Kind+" "+k.Name] == strings.TrimSuffix(string(k.YAML), "\n") {
			same++
		}
	}
	t.Logf("%d objects equal, %d of them byte for byte", len(kust), same)
}

// TestHelmValues: each value lands where it should, every object still
// decodes strictly, and the result passes the checks where the value keeps
// what they require.
func TestHelmValues(t *testing.T) {
	dashboard, err := os.ReadFile("../grafana/checkpointd.json")
	if err != nil {
		t.Fatal(err)
	}
	euUS := map[string]any{
		"connector.class":                     "org.apache.kafka.connect.mirror.MirrorCheckpointConnector",
		"source.cluster.alias":                "eu",
		"source.cluster.bootstrap.servers":    "kafka-eu-0:9096,kafka-eu-1:9096",
		"source.cluster.security.protocol":    "SASL_SSL",
		"source.cluster.sasl.mechanism":       "SCRAM-SHA-512",
		"target.cluster.alias":                "us",
		"target.cluster.bootstrap.servers":    "kafka-us-0:9096",
		"target.cluster.security.protocol":    "SASL_SSL",
		"target.cluster.sasl.mechanism":       "SCRAM-SHA-512",
		"groups":                              "orders-.*",
		"groups.exclude":                      "console-consumer-.*",
		"emit.checkpoints.interval.seconds":   "30",
		"sync.group.offsets.enabled":          "true",
		"sync.group.offsets.interval.seconds": "30",
		"tasks.max":                           "3",
	}
	_, defaults, err := renderChart(t, chartDir, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	defaultConfigMap := ""
	for _, o := range defaults {
		if o.Kind == "ConfigMap" {
			defaultConfigMap = o.Name
		}
	}

	for _, tc := range []struct {
		name   string
		values map[string]any
		check  bool // the kustomize builds' checks still apply
		want   func(t *testing.T, m *Manifests, objs []Object)
	}{
		{"replicas", map[string]any{"replicas": 5}, false, func(t *testing.T, m *Manifests, _ []Object) {
			if r := m.Deployments[0].Spec.Replicas; r == nil || *r != 5 {
				t.Errorf("Deployment replicas %v, want 5", show(r))
			}
			if h := m.HPAs[0].Spec; h.MinReplicas == nil || *h.MinReplicas != 5 || h.MaxReplicas != 6 {
				t.Errorf("HPA %s..%d, want 5..6 (min follows replicas, max the base's)", show(h.MinReplicas), h.MaxReplicas)
			}
		}},
		{"autoscaling range", map[string]any{"replicas": 4, "autoscaling": map[string]any{"minReplicas": 3, "maxReplicas": 12}}, false, func(t *testing.T, m *Manifests, _ []Object) {
			if r := m.Deployments[0].Spec.Replicas; r == nil || *r != 4 {
				t.Errorf("Deployment replicas %v, want 4", show(r))
			}
			if h := m.HPAs[0].Spec; h.MinReplicas == nil || *h.MinReplicas != 3 || h.MaxReplicas != 12 {
				t.Errorf("HPA %s..%d, want 3..12", show(h.MinReplicas), h.MaxReplicas)
			}
		}},
		{"autoscaling off", map[string]any{"autoscaling": map[string]any{"enabled": false}}, false, func(t *testing.T, m *Manifests, _ []Object) {
			if len(m.HPAs) != 0 {
				t.Errorf("%d HPAs, want none", len(m.HPAs))
			}
			if r := m.Deployments[0].Spec.Replicas; r == nil || *r != Replicas {
				t.Errorf("Deployment replicas %v, want the base's %d", show(r), Replicas)
			}
		}},
		{"image", map[string]any{"image": map[string]any{"repository": "registry.example.com/platform/checkpointd", "tag": "0.1.0", "pullPolicy": "Always"}}, true, func(t *testing.T, m *Manifests, _ []Object) {
			c := m.Deployments[0].Spec.Template.Spec.Containers[0]
			if c.Image != "registry.example.com/platform/checkpointd:0.1.0" || c.ImagePullPolicy != corev1.PullAlways {
				t.Errorf("image %s (%s)", c.Image, c.ImagePullPolicy)
			}
		}},
		{"image tag only", map[string]any{"image": map[string]any{"tag": "0.2.0"}}, true, func(t *testing.T, m *Manifests, _ []Object) {
			if c := m.Deployments[0].Spec.Template.Spec.Containers[0]; c.Image != "checkpointd:0.2.0" || c.ImagePullPolicy != corev1.PullIfNotPresent {
				t.Errorf("image %s (%s), want checkpointd:0.2.0 (IfNotPresent)", c.Image, c.ImagePullPolicy)
			}
		}},
		{"resources", map[string]any{
			"resources":  map[string]any{"requests": map[string]any{"cpu": "500m", "memory": "384Mi"}, "limits": map[string]any{"memory": "1Gi"}},
			"goMemLimit": "900MiB",
		}, true, func(t *testing.T, m *Manifests, _ []Object) {
			c := m.Deployments[0].Spec.Template.Spec.Containers[0]
			want := corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("384Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
			}
			if !reflect.DeepEqual(c.Resources, want) {
				t.Errorf("resources %+v, want %+v", c.Resources, want)
			}
			if v := envValue(c, "GOMEMLIMIT"); v != "900MiB" {
				t.Errorf("GOMEMLIMIT %q, want 900MiB", v)
			}
		}},
		{"extra environment", map[string]any{"extraEnv": []any{
			map[string]any{"name": "OTEL_EXPORTER_OTLP_ENDPOINT", "value": "http://otel-collector.observability:4318"},
			map[string]any{"name": "CHECKPOINTD_CHECKPOINTD_LOG_FORMAT", "value": "text"},
		}}, true, func(t *testing.T, m *Manifests, _ []Object) {
			c := m.Deployments[0].Spec.Template.Spec.Containers[0]
			if v := envValue(c, "OTEL_EXPORTER_OTLP_ENDPOINT"); v != "http://otel-collector.observability:4318" {
				t.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT %q", v)
			}
			n := 0
			for _, e := range c.Env {
				if e.Name == "CHECKPOINTD_CHECKPOINTD_LOG_FORMAT" {
					n++
				}
			}
			if v := envValue(c, "CHECKPOINTD_CHECKPOINTD_LOG_FORMAT"); v != "text" || n != 1 {
				t.Errorf("CHECKPOINTD_CHECKPOINTD_LOG_FORMAT %q in %d entries, want text replacing the base's", v, n)
			}
			if envValue(c, "GOMEMLIMIT") != "450MiB" {
				t.Errorf("the base's GOMEMLIMIT is lost")
			}
		}},
		{"MM2 config", map[string]any{"mm2Config": euUS}, true, func(t *testing.T, m *Manifests, _ []Object) {
			if len(m.ConfigMaps) != 1 {
				t.Fatalf("ConfigMaps %v", m.ConfigMaps)
			}
			for name, cm := range m.ConfigMaps {
				if name == defaultConfigMap || !strings.HasPrefix(name, "checkpointd-config-") {
					t.Errorf("ConfigMap %s: want a new checkpointd-config-<hash> (default %s), so the pods roll", name, defaultConfigMap)
				}
				var got map[string]any
				if err := yaml.Unmarshal([]byte(cm.Data["mm2-checkpoint.yaml"]), &got); err != nil || !reflect.DeepEqual(got, euUS) {
					t.Errorf("ConfigMap %s holds %v (%v), want %v", name, got, err, euUS)
				}
			}
			// Check found the Deployment's volume pointing at it and
			// checkpointd accepting it.
		}},
		{"SASL Secret", map[string]any{"secrets": map[string]any{"sasl": "kafka-logins"}}, true, func(t *testing.T, m *Manifests, _ []Object) {
			c := m.Deployments[0].Spec.Template.Spec.Containers[0]
			if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != "kafka-logins" {
				t.Errorf("envFrom %+v, want the Secret kafka-logins", c.EnvFrom)
			}
		}},
		{"no SASL Secret", map[string]any{"secrets": map[string]any{"sasl": ""}}, false, func(t *testing.T, m *Manifests, _ []Object) {
			if c := m.Deployments[0].Spec.Template.Spec.Containers[0]; len(c.EnvFrom) != 0 {
				t.Errorf("envFrom %+v, want none", c.EnvFrom)
			}
		}},
		{"TLS Secrets", map[string]any{"secrets": map[string]any{"tls": []any{
			map[string]any{"name": "kafka-eu-tls", "mountPath": "/var/run/secrets/checkpointd/eu"},
			map[string]any{"name": "kafka-us-tls", "mountPath": "/var/run/secrets/checkpointd/us"},
		}}}, true, func(t *testing.T, m *Manifests, _ []Object) {
			pod := m.Deployments[0].Spec.Template.Spec
			for _, want := range [][2]string{{"kafka-eu-tls", "/var/run/secrets/checkpointd/eu"}, {"kafka-us-tls", "/var/run/secrets/checkpointd/us"}} {
				if !mountsSecret(pod, want[0], want[1]) {
					t.Errorf("Secret %s not mounted read-only at %s: volumes %+v, mounts %+v", want[0], want[1], pod.Volumes, pod.Containers[0].VolumeMounts)
				}
			}
			if cm, _ := mountedConfigMap(pod, pod.Containers[0], "/etc/checkpointd/mm2-checkpoint.yaml"); cm == "" {
				t.Errorf("the config volume is lost")
			}
		}},
		{"monitoring off", map[string]any{"monitoring": map[string]any{"serviceMonitor": map[string]any{"enabled": false}, "prometheusRule": map[string]any{"enabled": false}}}, false, func(t *testing.T, m *Manifests, _ []Object) {
			if len(m.ServiceMonitors)+len(m.Rules) != 0 {
				t.Errorf("%d ServiceMonitors, %d PrometheusRules; want none", len(m.ServiceMonitors), len(m.Rules))
			}
			if len(m.Services) != 1 {
				t.Errorf("the Service is gone with the monitoring")
			}
		}},
		{"monitoring labels", map[string]any{"monitoring": map[string]any{"labels": map[string]any{"release": "kube-prometheus-stack"}}}, true, func(t *testing.T, m *Manifests, _ []Object) {
			if m.ServiceMonitors[0].Labels["release"] != "kube-prometheus-stack" || m.Rules[0].Labels["release"] != "kube-prometheus-stack" {
				t.Errorf("ServiceMonitor labels %v, PrometheusRule labels %v: want release=kube-prometheus-stack", m.ServiceMonitors[0].Labels, m.Rules[0].Labels)
			}
			if _, ok := m.Deployments[0].Labels["release"]; ok {
				t.Errorf("the monitoring label reached the Deployment")
			}
		}},
		{"dashboard", map[string]any{"monitoring": map[string]any{"dashboard": map[string]any{"enabled": true}}}, true, func(t *testing.T, m *Manifests, _ []Object) {
			cm := m.ConfigMaps["checkpointd-dashboard"]
			if cm == nil {
				t.Fatalf("no ConfigMap checkpointd-dashboard among %v", m.ConfigMaps)
			}
			if cm.Labels["grafana_dashboard"] != "1" || cm.Data["checkpointd.json"] != string(dashboard) {
				t.Errorf("dashboard ConfigMap labels %v, %d bytes of JSON; want grafana_dashboard=1 and deployments/grafana/checkpointd.json (%d bytes)", cm.Labels, len(cm.Data["checkpointd.json"]), len(dashboard))
			}
		}},
		{"pod scheduling", map[string]any{
			"imagePullSecrets":  []any{map[string]any{"name": "registry-credentials"}},
			"podAnnotations":    map[string]any{"example.com/owner": "platform"},
			"nodeSelector":      map[string]any{"kubernetes.io/os": "linux"},
			"tolerations":       []any{map[string]any{"key": "dedicated", "operator": "Equal", "value": "kafka", "effect": "NoSchedule"}},
			"affinity":          map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "pool", "operator": "In", "values": []any{"kafka"}}}}}}}},
			"priorityClassName": "kafka-critical",
		}, true, func(t *testing.T, m *Manifests, _ []Object) {
			tmpl := m.Deployments[0].Spec.Template
			pod := tmpl.Spec
			if len(pod.ImagePullSecrets) != 1 || pod.ImagePullSecrets[0].Name != "registry-credentials" {
				t.Errorf("imagePullSecrets %v", pod.ImagePullSecrets)
			}
			if tmpl.Annotations["example.com/owner"] != "platform" {
				t.Errorf("pod annotations %v", tmpl.Annotations)
			}
			if pod.NodeSelector["kubernetes.io/os"] != "linux" {
				t.Errorf("nodeSelector %v", pod.NodeSelector)
			}
			if len(pod.Tolerations) != 1 || pod.Tolerations[0].Value != "kafka" || pod.Tolerations[0].Effect != corev1.TaintEffectNoSchedule {
				t.Errorf("tolerations %+v", pod.Tolerations)
			}
			if a := pod.Affinity; a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
				t.Errorf("affinity %+v", a)
			}
			if pod.PriorityClassName != "kafka-critical" {
				t.Errorf("priorityClassName %q", pod.PriorityClassName)
			}
			if len(pod.TopologySpreadConstraints) != 2 {
				t.Errorf("the base's topology spread is lost: %+v", pod.TopologySpreadConstraints)
			}
		}},
		{"common labels", map[string]any{"commonLabels": map[string]any{"team": "platform"}}, true, func(t *testing.T, m *Manifests, objs []Object) {
			for _, o := range objs {
				var meta struct {
					Metadata struct{ Labels map[string]string } `json:"metadata"`
				}
				if err := yaml.Unmarshal(o.YAML, &meta); err != nil || meta.Metadata.Labels["team"] != "platform" {
					t.Errorf("%s %s: labels %v, want team=platform", o.Kind, o.Name, meta.Metadata.Labels)
				}
			}
			if _, ok := m.Deployments[0].Spec.Selector.MatchLabels["team"]; ok {
				t.Errorf("a common label reached the Deployment's selector")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, objs, err := renderChart(t, chartDir, tc.values, tc.check)
			if err != nil {
				t.Fatal(err)
			}
			if m == nil || len(m.Deployments) != 1 {
				t.Fatalf("want one Deployment")
			}
			tc.want(t, m, objs)
		})
	}
}

func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

func mountsSecret(pod corev1.PodSpec, secret, path string) bool {
	for _, v := range pod.Volumes {
		if v.Secret == nil || v.Secret.SecretName != secret {
			continue
		}
		return slices.ContainsFunc(pod.Containers[0].VolumeMounts, func(vm corev1.VolumeMount) bool {
			return vm.Name == v.Name && vm.MountPath == path && vm.ReadOnly
		})
	}
	return false
}

// TestHelmRejectsBadValues: values.schema.json and the templates refuse
// values that would not do what they say, with a message naming them.
func TestHelmRejectsBadValues(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"unknown key", map[string]any{"replica": 5}, "replica"},
		{"replicas not a number", map[string]any{"replicas": "three"}, "replicas"},
		{"nested unknown key", map[string]any{"monitoring": map[string]any{"serviceMonitor": map[string]any{"enable": false}}}, "enable"},
		{"MM2 value not a string", map[string]any{"mm2Config": map[string]any{"tasks.max": 3}}, "tasks.max"},
		{"TLS Secret without a path", map[string]any{"secrets": map[string]any{"tls": []any{map[string]any{"name": "kafka-tls"}}}}, "mountPath"},
		{"GOMEMLIMIT not a size", map[string]any{"goMemLimit": "lots"}, "goMemLimit"},
		{"replicas above the autoscaler's maximum", map[string]any{"replicas": 8}, "minReplicas 8 above maxReplicas 6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := renderChart(t, chartDir, tc.values, false)
			if err == nil {
				t.Fatalf("values %v accepted", tc.values)
			}
			t.Log(err)
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error does not name %q:\n%v", tc.want, err)
			}
		})
	}
}

// copyDeployments copies the kustomize manifests, the chart and the
// dashboard to a temporary directory in the same layout, the chart's links
// still pointing at the copy's base and dashboard; it returns the copy's
// kubernetes/ and chart directories.
func copyDeployments(t *testing.T) (kubernetes, chart string) {
	t.Helper()
	dir := t.TempDir()
	for _, sub := range []string{"kubernetes", "helm", "grafana"} {
		src := filepath.Join("..", sub)
		err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(src, p)
			dst := filepath.Join(dir, sub, rel)
			switch {
			case d.Type()&fs.ModeSymlink != 0:
				target, err := os.Readlink(p)
				if err != nil {
					return err
				}
				return os.Symlink(target, dst)
			case d.IsDir():
				return os.MkdirAll(dst, 0o755)
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(dst, data, 0o644)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "kubernetes"), filepath.Join(dir, "helm", "checkpointd")
}

// TestHelmFollowsTheBase: the chart has no manifests of its own. A change
// of the base reaches it, a fault planted in the base fails it as it fails
// the kustomize build, and a kustomization field the chart does not
// implement fails the render rather than being left out.
func TestHelmFollowsTheBase(t *testing.T) {
	t.Run("a change of the base", func(t *testing.T) {
		kdir, cdir := copyDeployments(t)
		plant(t, filepath.Join(kdir, "base/deployment.yaml"), "revisionHistoryLimit: 5", "revisionHistoryLimit: 7")
		plant(t, filepath.Join(kdir, "base/mm2-checkpoint.yaml"), `groups: ".*"`, `groups: "orders-.*"`)
		kust, err := Kustomize(filepath.Join(kdir, "base"))
		if err != nil {
			t.Fatal(err)
		}
		m, helm, err := renderChart(t, cdir, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		if d := compareBuilds(t, kust, helm); len(d) > 0 {
			t.Fatalf("chart and base differ after a change of the base:\n%s", strings.Join(d, "\n"))
		}
		if r := m.Deployments[0].Spec.RevisionHistoryLimit; r == nil || *r != 7 {
			t.Fatalf("revisionHistoryLimit %v, want the changed base's 7", show(r))
		}
	})
	for _, tc := range []struct{ name, old, new, want string }{
		{"namePrefix", "kind: Kustomization\n", "kind: Kustomization\nnamePrefix: eu-\n", `does not implement kustomize's "namePrefix"`},
		{"selector labels", "includeSelectors: false", "includeSelectors: true", "includeSelectors"},
		{"generator option", "  - name: checkpointd-config\n", "  - name: checkpointd-config\n    behavior: create\n", `configMapGenerator checkpointd-config: the chart does not implement "behavior"`},
	} {
		t.Run("kustomization with "+tc.name, func(t *testing.T) {
			kdir, cdir := copyDeployments(t)
			plant(t, filepath.Join(kdir, "base/kustomization.yaml"), tc.old, tc.new)
			_, _, err := renderChart(t, cdir, nil, false)
			if err == nil {
				t.Fatal("the chart rendered a kustomization it does not implement")
			}
			t.Log(err)
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error does not say %q:\n%v", tc.want, err)
			}
		})
	}
	for _, tc := range plantedFaults {
		if tc.overlay {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			kdir, cdir := copyDeployments(t)
			plant(t, filepath.Join(kdir, tc.file), tc.old, tc.new)
			_, _, err := renderChart(t, cdir, nil, true)
			if err == nil {
				t.Fatalf("%s: the chart passed validation", tc.name)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%s: error does not say %q:\n%v", tc.name, tc.want, err)
			}
		})
	}
}

// TestHelmLint: helm lint's rules (Chart.yaml, values and schema, templates
// rendered strictly, the objects' YAML) find nothing worse than advice.
func TestHelmLint(t *testing.T) {
	l := lint.RunAll(chartDir, nil, release.Namespace)
	for _, msg := range l.Messages {
		if msg.Severity >= support.WarningSev {
			t.Errorf("helm lint: %v", msg)
		} else {
			t.Logf("helm lint: %v", msg)
		}
	}
}

// TestHelmExampleValues: the example values file of the docs renders, its
// values land, the files its MM2 config names are inside the Secrets it
// mounts, and the result passes the checks with those Secrets' files where
// the kubelet would put them (a temporary directory here).
func TestHelmExampleValues(t *testing.T) {
	raw, err := os.ReadFile("../helm/examples/eu-us.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	m, _, err := renderChart(t, chartDir, values, false)
	if err != nil {
		t.Fatal(err)
	}
	pod := m.Deployments[0].Spec.Template.Spec
	if c := pod.Containers[0]; c.Image != "registry.example.com/platform/checkpointd:0.1.0" {
		t.Errorf("image %s", c.Image)
	}
	const mount = "/var/run/secrets/checkpointd/tls"
	if !mountsSecret(pod, "kafka-ca", mount) {
		t.Fatalf("the CA Secret is not mounted at %s", mount)
	}
	if len(m.ConfigMaps) != 1 {
		t.Fatalf("ConfigMaps %v", m.ConfigMaps)
	}
	// The Secret kafka-ca as mounted: its key ca.crt, a CA certificate.
	secretDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(secretDir, "ca.crt"), testCA(t), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cm := range m.ConfigMaps {
		var cfg map[string]string
		if err := yaml.Unmarshal([]byte(cm.Data["mm2-checkpoint.yaml"]), &cfg); err != nil {
			t.Fatal(err)
		}
		if cfg["source.cluster.alias"] != "eu" || cfg["target.cluster.alias"] != "us" {
			t.Errorf("ConfigMap %s does not hold the example's MM2 config: %v", cm.Name, cfg)
		}
		for k, v := range cfg {
			if strings.HasSuffix(k, ".location") && !strings.HasPrefix(v, mount+"/") {
				t.Errorf("%s=%s is not inside a mounted Secret", k, v)
			}
		}
		cm.Data["mm2-checkpoint.yaml"] = strings.ReplaceAll(cm.Data["mm2-checkpoint.yaml"], mount, secretDir)
	}
	if err := errors.Join(Check(m, CheckOptions{ConfigDir: t.TempDir()})...); err != nil {
		t.Fatal(err)
	}
}

// testCA is a self-signed CA certificate in PEM.
func testCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kafka-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestHelmPackageStandsAlone: helm package puts the linked base and
// dashboard into the archive, and the archive renders what the directory
// renders.
func TestHelmPackageStandsAlone(t *testing.T) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	archive, err := chartutil.Save(ch, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]any{"monitoring": map[string]any{"dashboard": map[string]any{"enabled": true}}}
	_, fromDir, err := renderChart(t, chartDir, values, false)
	if err != nil {
		t.Fatal(err)
	}
	_, fromArchive, err := renderChart(t, archive, values, false)
	if err != nil {
		t.Fatal(err)
	}
	if d := compareBuilds(t, fromDir, fromArchive); len(d) > 0 || len(fromDir) != 9 {
		t.Fatalf("%d objects from the directory; the archive %s renders differently:\n%s", len(fromDir), archive, strings.Join(d, "\n"))
	}
}
