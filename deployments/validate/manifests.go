package validate

import (
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/checkpointd/checkpointd/deployments/image"
	"github.com/checkpointd/checkpointd/infra/config"
)

// What the manifests must provide, from the issue and the measurements.
const (
	// Replicas of the Deployment (and the HPA's minimum).
	Replicas = 3
	// DrainSeconds is the longest graceful shutdown: the routers' close
	// timeout (15 s, pipeline.newRouter), the outbox drain (10 s,
	// pipeline.Run) and the trace flush (5 s, cmd/checkpointd run).
	DrainSeconds = 15 + 10 + 5
	// PeakRSS is the largest resident set measured (bench/results: 366 MB at
	// 10k groups x 10 partitions); the memory limit must be above it.
	PeakRSS = 366 << 20
)

// MM2Keys are the MirrorCheckpointConnector keys a managed Connect service's
// connector config holds; the ConfigMap must hold these and nothing of
// checkpointd's own.
var MM2Keys = []string{
	"connector.class", "source.cluster.alias", "source.cluster.bootstrap.servers",
	"target.cluster.alias", "target.cluster.bootstrap.servers", "groups", "groups.exclude",
	"emit.checkpoints.interval.seconds", "sync.group.offsets.enabled",
	"sync.group.offsets.interval.seconds", "tasks.max",
}

// clientKey matches the connection keys MM2 takes per cluster.
var clientKey = regexp.MustCompile(`^(source|target)\.cluster\.(security\.protocol|sasl\.[a-z.]+|ssl\.[a-z.]+)$`)

// Manifests holds a build's objects by kind.
type Manifests struct {
	Deployments     []*appsv1.Deployment
	ConfigMaps      map[string]*corev1.ConfigMap
	Secrets         map[string]*corev1.Secret
	Services        []*corev1.Service
	ServiceAccounts map[string]*corev1.ServiceAccount
	PDBs            []*policyv1.PodDisruptionBudget
	HPAs            []*autoscalingv2.HorizontalPodAutoscaler
	ServiceMonitors []*monitoringv1.ServiceMonitor
	Rules           []*monitoringv1.PrometheusRule
	Namespaces      []*corev1.Namespace
}

// Sort groups the objects by kind; an object of a kind the deployment does
// not use is an error.
func Sort(objs []Object) (*Manifests, error) {
	m := &Manifests{ConfigMaps: map[string]*corev1.ConfigMap{}, Secrets: map[string]*corev1.Secret{},
		ServiceAccounts: map[string]*corev1.ServiceAccount{}}
	for _, o := range objs {
		switch v := o.Obj.(type) {
		case *appsv1.Deployment:
			m.Deployments = append(m.Deployments, v)
		case *corev1.ConfigMap:
			m.ConfigMaps[v.Name] = v
		case *corev1.Secret:
			m.Secrets[v.Name] = v
		case *corev1.Service:
			m.Services = append(m.Services, v)
		case *corev1.ServiceAccount:
			m.ServiceAccounts[v.Name] = v
		case *policyv1.PodDisruptionBudget:
			m.PDBs = append(m.PDBs, v)
		case *autoscalingv2.HorizontalPodAutoscaler:
			m.HPAs = append(m.HPAs, v)
		case *monitoringv1.ServiceMonitor:
			m.ServiceMonitors = append(m.ServiceMonitors, v)
		case *monitoringv1.PrometheusRule:
			m.Rules = append(m.Rules, v)
		case *corev1.Namespace:
			m.Namespaces = append(m.Namespaces, v)
		default:
			return nil, fmt.Errorf("%s %s: a kind the deployment does not use", o.Kind, o.Name)
		}
	}
	return m, nil
}

// CheckOptions say how complete the build must be.
type CheckOptions struct {
	// SecretsProvided: the build holds every Secret the Deployment reads
	// (an overlay); a base leaves them to its overlays.
	SecretsProvided bool
	// ConfigDir is where the ConfigMap's file is written for checkpointd's
	// config parser (a temporary directory).
	ConfigDir string
}

// Check checks the objects of a build against each other, the image and
// checkpointd's configuration parser: the Deployment's pods run the image's
// command on the ConfigMap's file, which checkpointd accepts with the pod's
// environment and no warning; probes, Service, ServiceMonitor, PDB and HPA
// point at what exists; security context and resources are as documented;
// the alerts read metrics checkpointd exports.
func Check(m *Manifests, o CheckOptions) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(m.Deployments) != 1 {
		bad("want one Deployment, got %d", len(m.Deployments))
		return errs
	}
	d := m.Deployments[0]
	pod := d.Spec.Template
	podLabels := labels.Set(pod.Labels)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != Replicas {
		bad("Deployment %s: replicas %s, want %d", d.Name, show(d.Spec.Replicas), Replicas)
	}
	if sel, err := metaSelector(d.Spec.Selector); err != nil || !sel.Matches(podLabels) {
		bad("Deployment %s: selector does not match its pod labels %v (%v)", d.Name, pod.Labels, err)
	}
	if ru := d.Spec.Strategy.RollingUpdate; d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType ||
		ru == nil || ru.MaxUnavailable == nil || ru.MaxUnavailable.IntValue() != 0 {
		bad("Deployment %s: want a rolling update with maxUnavailable 0 (a new instance is ready before an old one stops)", d.Name)
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g == nil || *g < DrainSeconds {
		bad("Deployment %s: terminationGracePeriodSeconds %s does not cover the %d s drain", d.Name, show(g), DrainSeconds)
	}
	if sa := pod.Spec.ServiceAccountName; sa != "" && m.ServiceAccounts[sa] == nil {
		bad("Deployment %s: service account %q is not in the build", d.Name, sa)
	}
	if a := pod.Spec.AutomountServiceAccountToken; a == nil || *a {
		bad("Deployment %s: automountServiceAccountToken must be false (checkpointd does not call the Kubernetes API)", d.Name)
	}
	psc := pod.Spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		bad("Deployment %s: pod securityContext.runAsNonRoot must be true", d.Name)
	}
	if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		bad("Deployment %s: pod seccompProfile must be RuntimeDefault", d.Name)
	}
	if len(pod.Spec.Containers) != 1 {
		bad("Deployment %s: want one container, got %d", d.Name, len(pod.Spec.Containers))
		return errs
	}
	c := pod.Spec.Containers[0]
	errs = append(errs, checkContainer(d.Name, c)...)

	// The container runs the image's command: its --config file must be the
	// ConfigMap's, and checkpointd must accept it in the pod's environment.
	cmd := image.Cmd
	if len(c.Command) > 0 {
		bad("container %s overrides the image's entrypoint %q", c.Name, image.Entrypoint)
	}
	if len(c.Args) > 0 {
		cmd = c.Args
	}
	cfgPath := flagValue(cmd, "--config")
	if cfgPath == "" {
		bad("container %s: command %q has no --config", c.Name, cmd)
		return errs
	}
	cm, key := mountedConfigMap(pod.Spec, c, cfgPath)
	if cm == "" {
		bad("container %s: %s is not mounted from a ConfigMap", c.Name, cfgPath)
		return errs
	}
	configMap := m.ConfigMaps[cm]
	if configMap == nil {
		bad("container %s: ConfigMap %q is not in the build", c.Name, cm)
		return errs
	}
	content, ok := configMap.Data[key]
	if !ok {
		bad("ConfigMap %s has no key %q (the file %s)", cm, key, cfgPath)
		return errs
	}
	env, envErrs := podEnv(m, c, o.SecretsProvided)
	errs = append(errs, envErrs...)
	cfg, cfgErrs := checkConfig(o.ConfigDir, key, content, env, o.SecretsProvided)
	errs = append(errs, cfgErrs...)

	// Probes and the metrics port are checkpointd's health server.
	port := containerPort(c, "metrics")
	if port == 0 {
		bad("container %s has no port named metrics", c.Name)
	}
	if cfg != nil {
		for what, addr := range map[string]string{"checkpointd.metrics.address": cfg.MetricsAddress, "checkpointd.health.address": cfg.HealthAddress} {
			host, p, err := net.SplitHostPort(addr)
			if err != nil || p != fmt.Sprint(port) {
				bad("%s is %q in the pod, not the container's metrics port %d", what, addr, port)
			}
			if host == "127.0.0.1" || host == "localhost" {
				bad("%s is %q in the pod: the kubelet and Prometheus cannot reach loopback", what, addr)
			}
		}
	}
	if cfg != nil && cfg.InstanceID == "" {
		bad("container %s: checkpointd.instance.id is not set (CHECKPOINTD_CHECKPOINTD_INSTANCE_ID from the pod name names the instance in logs)", c.Name)
	}
	for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		want := map[string]string{"liveness": "/healthz", "readiness": "/readyz"}[name]
		if p == nil || p.HTTPGet == nil {
			bad("container %s: no HTTP %s probe", c.Name, name)
			continue
		}
		if p.HTTPGet.Path != want {
			bad("container %s: %s probe on %s, want %s", c.Name, name, p.HTTPGet.Path, want)
		}
		if resolvePort(c, p.HTTPGet.Port) != port {
			bad("container %s: %s probe on port %s, not the metrics port", c.Name, name, p.HTTPGet.Port.String())
		}
	}

	errs = append(errs, checkService(m, d, c)...)
	errs = append(errs, checkDisruption(m, d)...)
	errs = append(errs, checkMonitoring(m)...)
	return errs
}

func checkContainer(dep string, c corev1.Container) []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("Deployment %s container %s: "+format, append([]any{dep, c.Name}, args...)...))
	}
	sc := c.SecurityContext
	switch {
	case sc == nil:
		bad("no securityContext")
	default:
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			bad("allowPrivilegeEscalation must be false")
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			bad("readOnlyRootFilesystem must be true")
		}
		if sc.Privileged != nil && *sc.Privileged {
			bad("must not be privileged")
		}
		if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
			bad("capabilities must drop ALL and add none")
		}
		if sc.RunAsUser != nil && *sc.RunAsUser == 0 {
			bad("runs as root")
		}
	}
	req, lim := c.Resources.Requests, c.Resources.Limits
	if req.Cpu().IsZero() || req.Memory().IsZero() {
		bad("CPU and memory requests are needed (the HPA scales on CPU utilisation of the request)")
	}
	if lim.Memory().IsZero() || lim.Memory().Cmp(*resource.NewQuantity(PeakRSS, resource.BinarySI)) <= 0 {
		bad("memory limit %s is not above the largest measured RSS (366 MB)", lim.Memory())
	}
	if !req.Memory().IsZero() && !lim.Memory().IsZero() && req.Memory().Cmp(*lim.Memory()) > 0 {
		bad("memory request %s above the limit %s", req.Memory(), lim.Memory())
	}
	for _, e := range c.Env {
		if e.Name == "GOMEMLIMIT" {
			q, err := resource.ParseQuantity(strings.TrimSuffix(strings.ReplaceAll(e.Value, "iB", "i"), "B"))
			if err != nil || lim.Memory().IsZero() || q.Cmp(*lim.Memory()) >= 0 {
				bad("GOMEMLIMIT %q must be below the memory limit %s", e.Value, lim.Memory())
			}
		}
	}
	return errs
}

// podEnv is the container's environment as the kubelet makes it: the
// image's, then envFrom, then env (later wins), with Secret and ConfigMap
// references resolved and the pod name for metadata.name.
func podEnv(m *Manifests, c corev1.Container, secretsProvided bool) ([]string, []error) {
	var errs []error
	vars := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v
	}
	for _, kv := range image.Env {
		k, v, _ := strings.Cut(kv, "=")
		set(k, v)
	}
	for _, ef := range c.EnvFrom {
		switch {
		case ef.SecretRef != nil:
			s := m.Secrets[ef.SecretRef.Name]
			if s == nil {
				if secretsProvided {
					errs = append(errs, fmt.Errorf("container %s: Secret %q is not in the build", c.Name, ef.SecretRef.Name))
				}
				continue
			}
			for k, v := range s.Data {
				set(ef.Prefix+k, string(v))
			}
			for k, v := range s.StringData {
				set(ef.Prefix+k, v)
			}
		case ef.ConfigMapRef != nil:
			cm := m.ConfigMaps[ef.ConfigMapRef.Name]
			if cm == nil {
				errs = append(errs, fmt.Errorf("container %s: ConfigMap %q is not in the build", c.Name, ef.ConfigMapRef.Name))
				continue
			}
			for k, v := range cm.Data {
				set(ef.Prefix+k, v)
			}
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			set(e.Name, e.Value)
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			set(e.Name, "checkpointd-5d4f8b7c9-x2x7k")
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			set(e.Name, "default")
		case e.ValueFrom.SecretKeyRef != nil:
			s := m.Secrets[e.ValueFrom.SecretKeyRef.Name]
			switch {
			case s != nil:
				set(e.Name, string(s.Data[e.ValueFrom.SecretKeyRef.Key]))
			case secretsProvided:
				errs = append(errs, fmt.Errorf("container %s env %s: Secret %q is not in the build", c.Name, e.Name, e.ValueFrom.SecretKeyRef.Name))
			}
		default:
			errs = append(errs, fmt.Errorf("container %s env %s: a kind of valueFrom this check does not resolve", c.Name, e.Name))
		}
	}
	env := make([]string, 0, len(order))
	for _, k := range order {
		env = append(env, k+"="+vars[k])
	}
	return env, errs
}

// checkConfig runs checkpointd's configuration parser on the ConfigMap's
// file with the pod's environment: no problem and no warning allowed, and
// the file holds MirrorMaker 2's checkpoint connector keys only.
func checkConfig(dir, name, content string, env []string, secretsProvided bool) (*config.Config, []error) {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("config %s: "+format, append([]any{name}, args...)...))
	}
	var flat map[string]any
	if err := yaml.Unmarshal([]byte(content), &flat); err != nil {
		bad("not a flat YAML mapping: %v", err)
		return nil, errs
	}
	for k := range flat {
		if !slices.Contains(MM2Keys, k) && !clientKey.MatchString(k) {
			bad("key %q is not one of MM2's checkpoint connector keys (checkpointd's own settings belong in the pod's environment)", k)
		}
	}
	for _, k := range MM2Keys {
		if _, ok := flat[k]; !ok {
			bad("lacks %s, which a managed Connect service's connector config holds", k)
		}
	}
	if !secretsProvided {
		// A base without its Secret: stand in for the SASL logins.
		env = append(env,
			`CHECKPOINTD_SOURCE_CLUSTER_SASL_JAAS_CONFIG=org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="p";`,
			`CHECKPOINTD_TARGET_CLUSTER_SASL_JAAS_CONFIG=org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="p";`)
	}
	file := filepath.Join(dir, path.Base(name))
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		bad("%v", err)
		return nil, errs
	}
	cfg, report, err := config.Load(file, nil, env)
	if err != nil {
		bad("checkpointd refuses it: %v", err)
	}
	if report != nil {
		for _, w := range report.Warnings {
			bad("checkpointd warns: %s", w)
		}
	}
	return cfg, errs
}

func checkService(m *Manifests, d *appsv1.Deployment, c corev1.Container) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(m.Services) != 1 {
		bad("want one Service (for the ServiceMonitor), got %d", len(m.Services))
		return errs
	}
	s := m.Services[0]
	if len(s.Spec.Selector) == 0 || !labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
		bad("Service %s: selector %v does not select the Deployment's pods", s.Name, s.Spec.Selector)
	}
	for _, p := range s.Spec.Ports {
		if resolvePort(c, p.TargetPort) == 0 {
			bad("Service %s port %s: target port %s is not a port of the container", s.Name, p.Name, p.TargetPort.String())
		}
	}
	for _, sm := range m.ServiceMonitors {
		sel, err := metaSelector(&sm.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(s.Labels)) {
			bad("ServiceMonitor %s: selector does not select Service %s (labels %v)", sm.Name, s.Name, s.Labels)
		}
		for _, ep := range sm.Spec.Endpoints {
			if !slices.ContainsFunc(s.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ep.Port }) {
				bad("ServiceMonitor %s: endpoint port %q is not a port name of Service %s", sm.Name, ep.Port, s.Name)
			}
			if ep.Path != "" && ep.Path != "/metrics" {
				bad("ServiceMonitor %s: path %s, checkpointd serves /metrics", sm.Name, ep.Path)
			}
		}
		if sm.Spec.JobLabel != "" {
			job := s.Labels[sm.Spec.JobLabel]
			if job == "" {
				bad("ServiceMonitor %s: jobLabel %s is not a label of Service %s", sm.Name, sm.Spec.JobLabel, s.Name)
			}
			errs = append(errs, checkRuleJobs(m, job)...)
		}
	}
	if len(m.ServiceMonitors) != 1 {
		bad("want one ServiceMonitor, got %d", len(m.ServiceMonitors))
	}
	return errs
}

func checkDisruption(m *Manifests, d *appsv1.Deployment) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	pods := labels.Set(d.Spec.Template.Labels)
	if len(m.PDBs) != 1 {
		bad("want one PodDisruptionBudget, got %d", len(m.PDBs))
	}
	for _, p := range m.PDBs {
		if sel, err := metaSelector(p.Spec.Selector); err != nil || !sel.Matches(pods) {
			bad("PodDisruptionBudget %s: selector does not select the Deployment's pods", p.Name)
		}
		// With the Deployment's replicas, a drain must be able to evict one
		// pod and must keep at least two.
		allowed := -1
		switch {
		case p.Spec.MaxUnavailable != nil:
			allowed, _ = intstr.GetScaledValueFromIntOrPercent(p.Spec.MaxUnavailable, Replicas, false)
		case p.Spec.MinAvailable != nil:
			minAvail, _ := intstr.GetScaledValueFromIntOrPercent(p.Spec.MinAvailable, Replicas, true)
			allowed = Replicas - minAvail
		}
		if allowed < 1 || Replicas-allowed < 2 {
			bad("PodDisruptionBudget %s allows %d of %d pods down at once; want 1", p.Name, allowed, Replicas)
		}
	}
	if len(m.HPAs) != 1 {
		bad("want one HorizontalPodAutoscaler, got %d", len(m.HPAs))
	}
	for _, h := range m.HPAs {
		ref := h.Spec.ScaleTargetRef
		if ref.Kind != "Deployment" || ref.Name != d.Name || ref.APIVersion != "apps/v1" {
			bad("HorizontalPodAutoscaler %s scales %s %s (%s), not Deployment %s", h.Name, ref.Kind, ref.Name, ref.APIVersion, d.Name)
		}
		if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < Replicas || h.Spec.MaxReplicas < *h.Spec.MinReplicas {
			bad("HorizontalPodAutoscaler %s: minReplicas %s, maxReplicas %d; want at least %d", h.Name, show(h.Spec.MinReplicas), h.Spec.MaxReplicas, Replicas)
		}
		for _, mt := range h.Spec.Metrics {
			if mt.Type == autoscalingv2.ResourceMetricSourceType && mt.Resource != nil && mt.Resource.Name == corev1.ResourceMemory {
				bad("HorizontalPodAutoscaler %s scales on memory, which every instance holds whole (more replicas do not lower it)", h.Name)
			}
		}
	}
	return errs
}

func metaSelector(s *metav1.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return nil, fmt.Errorf("no selector")
	}
	return metav1.LabelSelectorAsSelector(s)
}

func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

// mountedConfigMap finds the ConfigMap volume file behind path in the
// container: its ConfigMap name and key.
func mountedConfigMap(spec corev1.PodSpec, c corev1.Container, file string) (string, string) {
	for _, vm := range c.VolumeMounts {
		rel, ok := strings.CutPrefix(file, strings.TrimSuffix(vm.MountPath, "/")+"/")
		if !ok {
			continue
		}
		if vm.SubPath != "" {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name != vm.Name || v.ConfigMap == nil {
				continue
			}
			key := rel
			for _, it := range v.ConfigMap.Items {
				if it.Path == rel {
					key = it.Key
				}
			}
			return v.ConfigMap.Name, key
		}
	}
	return "", ""
}

func containerPort(c corev1.Container, name string) int32 {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}

// resolvePort is the container port a probe or Service port refers to, or 0.
func resolvePort(c corev1.Container, p intstr.IntOrString) int32 {
	if p.Type == intstr.String {
		return containerPort(c, p.StrVal)
	}
	for _, cp := range c.Ports {
		if cp.ContainerPort == p.IntVal {
			return cp.ContainerPort
		}
	}
	return 0
}

// show prints an optional number.
func show[T int32 | int64](p *T) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}
