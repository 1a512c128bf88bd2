package validate

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"sigs.k8s.io/yaml"

	"github.com/checkpointd/checkpointd/deployments/image"
	"github.com/checkpointd/checkpointd/infra/config"
)

// LoadCompose loads a compose file as docker compose does, with the
// compose-spec loader: schema validation (unknown keys fail), interpolation,
// merge keys and extension fields, and the consistency check (services,
// networks and volumes referred to exist). The environment is empty, so
// nothing depends on the caller's shell.
func LoadCompose(ctx context.Context, file string) (*types.Project, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, err
	}
	return loader.LoadWithContext(ctx, types.ConfigDetails{
		WorkingDir:  filepath.Dir(abs),
		ConfigFiles: []types.ConfigFile{{Filename: abs}},
		Environment: types.Mapping{},
	}, func(o *loader.Options) { o.SetProjectName("checkpointd", true) })
}

// ComposeOptions say what the compose file must match.
type ComposeOptions struct {
	// Dockerfile is the Dockerfile the checkpointd services must build from.
	Dockerfile string
	// Dashboard is the Grafana dashboard file Grafana must be given.
	Dashboard string
}

// CheckCompose checks the loaded project: two Kafka clusters and MM2 from
// the official Apache Kafka image, three checkpointd services built from
// the Dockerfile with a configuration checkpointd accepts (in each service's
// environment, without warnings) that points at those clusters, Jaeger,
// Prometheus scraping the three instances, Grafana with the dashboard, and
// every bind-mounted file present.
func CheckCompose(p *types.Project, o ComposeOptions) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	var kafkas, checkpointds []string
	for name, s := range p.Services {
		for _, v := range s.Volumes {
			if v.Type == types.VolumeTypeBind {
				if _, err := os.Stat(v.Source); err != nil {
					bad("service %s mounts %s, which does not exist", name, v.Source)
				}
			}
		}
		if s.Build != nil && s.Build.Dockerfile != "" {
			df := filepath.Join(s.Build.Context, s.Build.Dockerfile)
			if same, err := sameFile(df, o.Dockerfile); err != nil || !same {
				bad("service %s builds %s, not %s (%v)", name, df, o.Dockerfile, err)
			}
			checkpointds = append(checkpointds, name)
		}
		if strings.HasPrefix(s.Image, "apache/kafka:") && len(s.Command) == 0 {
			kafkas = append(kafkas, name)
		}
	}
	slices.Sort(kafkas)
	slices.Sort(checkpointds)
	if len(kafkas) != 2 {
		bad("want two Kafka clusters from apache/kafka, got %v", kafkas)
	}
	if len(checkpointds) != 3 {
		bad("want three checkpointd services built from the Dockerfile, got %v", checkpointds)
	}
	errs = append(errs, checkMM2(p, kafkas)...)
	for _, name := range checkpointds {
		errs = append(errs, checkCheckpointdService(p, name, kafkas)...)
	}
	errs = append(errs, checkPrometheus(p, checkpointds)...)
	errs = append(errs, checkGrafana(p, o.Dashboard)...)
	if _, ok := p.Services["jaeger"]; !ok {
		bad("no jaeger service")
	}
	return errs
}

func checkMM2(p *types.Project, kafkas []string) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("service mm2: "+format, args...)) }
	s, ok := p.Services["mm2"]
	if !ok {
		return []error{fmt.Errorf("no mm2 service")}
	}
	if !strings.HasPrefix(s.Image, "apache/kafka:") || len(s.Command) < 2 || !strings.HasSuffix(s.Command[0], "/connect-mirror-maker.sh") {
		bad("want apache/kafka running connect-mirror-maker.sh, got %s %q", s.Image, s.Command)
		return errs
	}
	for _, k := range kafkas {
		if p.Services[k].Image != s.Image {
			bad("image %s, Kafka service %s runs %s: use one Kafka release", s.Image, k, p.Services[k].Image)
		}
	}
	props := mountedSource(s, s.Command[1])
	if props == "" {
		bad("%s is not bind-mounted", s.Command[1])
		return errs
	}
	raw, err := os.ReadFile(props)
	if err != nil {
		bad("%v", err)
		return errs
	}
	text := string(raw)
	for _, k := range kafkas {
		if !strings.Contains(text, k+":9092") {
			bad("%s does not connect to %s:9092", filepath.Base(props), k)
		}
	}
	if !strings.Contains(text, "emit.checkpoints.enabled = false") {
		bad("%s leaves MM2's own checkpoint emission on: checkpointd does that job", filepath.Base(props))
	}
	return errs
}

func checkCheckpointdService(p *types.Project, name string, kafkas []string) []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("service %s: "+format, append([]any{name}, args...)...))
	}
	s := p.Services[name]
	if err := checkUser(s.User); err != nil {
		bad("user: %v", err)
	}
	if !s.ReadOnly || !slices.Contains(s.CapDrop, "ALL") {
		bad("want read_only: true and cap_drop: [ALL], as in Kubernetes")
	}
	for _, k := range kafkas {
		if dep, ok := s.DependsOn[k]; !ok || dep.Condition != types.ServiceConditionHealthy {
			bad("does not wait for %s to be healthy", k)
		}
	}
	cmd := []string(s.Command)
	if len(cmd) == 0 {
		cmd = image.Cmd
	}
	file := mountedSource(s, flagValue(cmd, "--config"))
	if file == "" {
		bad("the config file %s is not bind-mounted", flagValue(cmd, "--config"))
		return errs
	}
	env := append([]string(nil), image.Env...)
	for k, v := range s.Environment {
		if v != nil {
			env = append(env, k+"="+*v)
		}
	}
	slices.Sort(env[len(image.Env):])
	cfg, report, err := config.Load(file, nil, env)
	if err != nil {
		bad("checkpointd refuses %s: %v", filepath.Base(file), err)
		return errs
	}
	for _, w := range report.Warnings {
		bad("checkpointd warns about %s: %s", filepath.Base(file), w)
	}
	for side, servers := range map[string][]string{"source": cfg.Source.BootstrapServers, "target": cfg.Target.BootstrapServers} {
		for _, addr := range servers {
			host, port, err := net.SplitHostPort(addr)
			if err != nil || !slices.Contains(kafkas, host) || port != "9092" {
				bad("%s cluster %s is not a compose Kafka listener (%v:9092)", side, addr, kafkas)
			}
		}
	}
	if cfg.Source.BootstrapServers[0] == cfg.Target.BootstrapServers[0] {
		bad("source and target are the same cluster")
	}
	_, port, _ := net.SplitHostPort(cfg.MetricsAddress)
	if !slices.ContainsFunc(s.Ports, func(pc types.ServicePortConfig) bool { return fmt.Sprint(pc.Target) == port }) {
		bad("metrics port %s is not published", port)
	}
	if v := s.Environment["CHECKPOINTD_CHECKPOINTD_INSTANCE_ID"]; v == nil || *v != name {
		bad("CHECKPOINTD_CHECKPOINTD_INSTANCE_ID should name the service")
	}
	return errs
}

func checkPrometheus(p *types.Project, checkpointds []string) []error {
	s, ok := p.Services["prometheus"]
	if !ok {
		return []error{fmt.Errorf("no prometheus service")}
	}
	file := mountedSource(s, "/etc/prometheus/prometheus.yml")
	if file == "" {
		return []error{fmt.Errorf("service prometheus: no prometheus.yml mounted")}
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		return []error{err}
	}
	var cfg struct {
		ScrapeConfigs []struct {
			JobName       string `json:"job_name"`
			StaticConfigs []struct {
				Targets []string `json:"targets"`
			} `json:"static_configs"`
		} `json:"scrape_configs"`
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		return []error{fmt.Errorf("%s: %w", file, err)}
	}
	var targets []string
	for _, sc := range cfg.ScrapeConfigs {
		if sc.JobName != "checkpointd" {
			continue
		}
		for _, st := range sc.StaticConfigs {
			targets = append(targets, st.Targets...)
		}
	}
	slices.Sort(targets)
	var want []string
	metricsPort, _, _ := strings.Cut(image.MetricsPort, "/")
	for _, c := range checkpointds {
		want = append(want, c+":"+metricsPort)
	}
	if !slices.Equal(targets, want) {
		return []error{fmt.Errorf("prometheus job checkpointd scrapes %v, want %v", targets, want)}
	}
	return nil
}

func checkGrafana(p *types.Project, dashboard string) []error {
	s, ok := p.Services["grafana"]
	if !ok {
		return []error{fmt.Errorf("no grafana service")}
	}
	var errs []error
	found := false
	for _, v := range s.Volumes {
		if v.Type != types.VolumeTypeBind {
			continue
		}
		if same, _ := sameFile(filepath.Join(v.Source, filepath.Base(dashboard)), dashboard); same {
			found = true
		}
		if strings.HasSuffix(v.Target, "/provisioning") {
			raw, err := os.ReadFile(filepath.Join(v.Source, "datasources", "prometheus.yaml"))
			if err != nil || !strings.Contains(string(raw), "http://prometheus:9090") {
				errs = append(errs, fmt.Errorf("grafana provisioning: no Prometheus data source at http://prometheus:9090 (%v)", err))
			}
		}
	}
	if !found {
		errs = append(errs, fmt.Errorf("grafana is not given %s", dashboard))
	}
	return errs
}

// mountedSource is the host file bind-mounted at target in the service.
func mountedSource(s types.ServiceConfig, target string) string {
	for _, v := range s.Volumes {
		if v.Type == types.VolumeTypeBind && v.Target == target {
			return v.Source
		}
	}
	return ""
}

func sameFile(a, b string) (bool, error) {
	sa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	sb, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(sa, sb), nil
}
