package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/IBM/sarama"
)

const driverFile = `# mm2.properties
clusters = us, eu, ap
us.bootstrap.servers = us1:9092, us2:9092
eu.bootstrap.servers = eu1:9092
ap.bootstrap.servers = ap1:9092
security.protocol = SASL_PLAINTEXT
sasl.mechanism = PLAIN
sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username="all" password="p";
eu.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username="eu" password="p";
us.consumer.fetch.min.bytes = 10
eu.admin.request.timeout.ms = 5000
us->eu.enabled = true
eu->us.enabled = false
us->ap.enabled = false
groups = app-.*
us->eu.sync.group.offsets.enabled = true
us->eu.groups = orders-.*
eu->us.groups = never
replication.policy.separator = _
eu.offset.flush.interval.ms = 1000
ap.client.id = ap
tasks.max = 4
`

func TestDriverFileMapsOntoConnectorKeys(t *testing.T) {
	cfg, rep, err := Load(writeFile(t, "mm2.properties", driverFile), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.SourceAlias != "us" || cfg.TargetAlias != "eu" || !cfg.SyncGroupOffsets || cfg.TasksMax != 4 ||
		!slices.Equal(cfg.Source.BootstrapServers, []string{"us1:9092", "us2:9092"}) ||
		!slices.Equal(cfg.Target.BootstrapServers, []string{"eu1:9092"}) {
		t.Fatalf("config %+v", cfg)
	}
	if cfg.Groups != "orders-.*" {
		t.Errorf("groups = %q: the flow's own key must win", cfg.Groups)
	}
	if cfg.Policy.CheckpointsTopic("us") != "us_checkpoints_internal" {
		t.Errorf("separator not carried: %s", cfg.Policy.CheckpointsTopic("us"))
	}
	raw := map[string]string{
		"source.cluster.security.protocol": "SASL_PLAINTEXT", // top-level, for both clusters
		"target.cluster.security.protocol": "SASL_PLAINTEXT",
		"source.consumer.fetch.min.bytes":  "10",
		"target.admin.request.timeout.ms":  "5000",
		"target.cluster.sasl.jaas.config":  `org.apache.kafka.common.security.plain.PlainLoginModule required username="eu" password="p";`,
		"source.cluster.sasl.jaas.config":  `org.apache.kafka.common.security.plain.PlainLoginModule required username="all" password="p";`,
		"sync.group.offsets.enabled":       "true",
		"replication.policy.separator":     "_",
		"source.cluster.alias":             "us",
		"source.cluster.bootstrap.servers": "us1:9092, us2:9092",
		"target.cluster.sasl.mechanism":    "PLAIN",
		"source.cluster.sasl.mechanism":    "PLAIN",
		"target.cluster.bootstrap.servers": "eu1:9092",
		"target.cluster.alias":             "eu",
		"groups":                           "orders-.*",
		"tasks.max":                        "4",
		"eu.offset.flush.interval.ms":      "",
		"us->eu.enabled":                   "",
		"eu.bootstrap.servers":             "",
	}
	for k, v := range raw {
		if got, ok := cfg.Raw[k]; v == "" && ok || v != "" && got != v {
			t.Errorf("Raw[%s] = %q (set %v), want %q", k, got, ok, v)
		}
	}
	for _, key := range []string{"eu.offset.flush.interval.ms", "ap.client.id", "eu->us.groups"} {
		if !slices.ContainsFunc(rep.Warnings, func(w Issue) bool { return w.Key == key && strings.HasPrefix(w.Message, "ignored") }) {
			t.Errorf("%s not reported as ignored: %v", key, rep.Warnings)
		}
	}
	target, err := cfg.SaramaConfig(TargetAdmin)
	if err != nil {
		t.Fatal(err)
	}
	if target.Net.SASL.User != "eu" || target.Net.ReadTimeout.Milliseconds() != 5000 || target.Net.SASL.Mechanism != sarama.SASLTypePlaintext {
		t.Errorf("target admin: user %q timeout %v", target.Net.SASL.User, target.Net.ReadTimeout)
	}
	source, err := cfg.SaramaConfig(SourceConsumer)
	if err != nil {
		t.Fatal(err)
	}
	if source.Net.SASL.User != "all" || source.Consumer.Fetch.Min != 10 {
		t.Errorf("source consumer: user %q fetch.min %d", source.Net.SASL.User, source.Consumer.Fetch.Min)
	}
	origins := map[string]string{}
	for _, kv := range cfg.Effective() {
		origins[kv.Key] = kv.Origin
	}
	if origins["source.cluster.bootstrap.servers"] != "file (us.bootstrap.servers)" || origins["groups"] != "file (us->eu.groups)" {
		t.Errorf("origins %v", origins)
	}
}

func TestDriverFileFlows(t *testing.T) {
	tests := []struct {
		name string
		file string
		sets []string
		want string // in the error; "" for success
	}{
		{"two flows", strings.Replace(driverFile, "eu->us.enabled = false", "eu->us.enabled = true", 1), nil, "2 are enabled (eu->us, us->eu)"},
		{"two flows, one turned off with --set", strings.Replace(driverFile, "eu->us.enabled = false", "eu->us.enabled = true", 1), []string{"eu->us.enabled=false"}, ""},
		{"no flow", strings.Replace(driverFile, "us->eu.enabled = true", "us->eu.enabled = TRUE1", 1), nil, "no flow is enabled"},
		{"flow enabled in any case", strings.Replace(driverFile, "us->eu.enabled = true", "us->eu.enabled = True", 1), nil, ""},
		{"flow of unlisted clusters", "clusters = a, b\nx->y.enabled = true\n", nil, `x->y.enabled="true": cluster x and y not in clusters (a, b)`},
		{"clusters listed twice", "clusters = a, b, a\na.bootstrap.servers = a:1\nb.bootstrap.servers = b:1\na->b.enabled = true\n", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Load(writeFile(t, "mm2.properties", tt.file), tt.sets, nil)
			switch {
			case tt.want == "" && err != nil:
				t.Fatal(err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestDriverFileOverrides(t *testing.T) {
	env := []string{"CHECKPOINTD_US_BOOTSTRAP_SERVERS=us9:9092", "CHECKPOINTD_GROUPS=env-.*"}
	sets := []string{"target.cluster.bootstrap.servers=eu9:9092", "us->eu.sync.group.offsets.enabled=false"}
	cfg, _, err := Load(writeFile(t, "mm2.properties", driverFile), sets, env)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Source.BootstrapServers[0] != "us9:9092" {
		t.Errorf("env on a driver key: %v", cfg.Source.BootstrapServers)
	}
	if cfg.Target.BootstrapServers[0] != "eu9:9092" {
		t.Errorf("--set on a connector key: %v", cfg.Target.BootstrapServers)
	}
	if cfg.SyncGroupOffsets {
		t.Error("--set on a flow key")
	}
	if cfg.Groups != "env-.*" {
		t.Errorf("groups = %q: an override applies over the file's flow keys", cfg.Groups)
	}
}

func TestDriverFileAliasesNamedSourceAndTarget(t *testing.T) {
	file := "clusters = source, target\nsource.bootstrap.servers = s:1\ntarget.bootstrap.servers = t:1\nsource->target.enabled = true\n"
	cfg, rep, err := Load(writeFile(t, "mm2.properties", file), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.SourceAlias != "source" || cfg.Source.BootstrapServers[0] != "s:1" || cfg.Target.BootstrapServers[0] != "t:1" || len(rep.Warnings) != 0 {
		t.Fatalf("config %+v warnings %v", cfg, rep.Warnings)
	}
}
