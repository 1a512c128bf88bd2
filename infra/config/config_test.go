package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/messages"
)

const managedExample = `connector.class: "org.apache.kafka.connect.mirror.MirrorCheckpointConnector"
emit.checkpoints.interval.seconds: "CHECKPOINT_INTERVAL"
groups: ".*"
groups.exclude: "console-consumer-.*,connect-.*,__.*"
source.cluster.alias: "source"
source.cluster.bootstrap.servers: "SOURCE_CLUSTER_BOOTSTRAP_ADDRESS"
sync.group.offsets.enabled: "true"
sync.group.offsets.interval.seconds: "OFFSETS_SYNC_INTERVAL"
target.cluster.alias: "target"
target.cluster.bootstrap.servers: "TARGET_CLUSTER_BOOTSTRAP_ADDRESS"
tasks.max: "3"
`

func filled(s string) string {
	return strings.NewReplacer(
		"CHECKPOINT_INTERVAL", "5",
		"SOURCE_CLUSTER_BOOTSTRAP_ADDRESS", "127.0.0.1:19092",
		"OFFSETS_SYNC_INTERVAL", "7",
		"TARGET_CLUSTER_BOOTSTRAP_ADDRESS", "127.0.0.1:29092,127.0.0.1:29093",
	).Replace(s)
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestManagedExampleLoadsFromYAMLAndJSON(t *testing.T) {
	yamlPath := writeFile(t, "c.yaml", filled(managedExample))
	var js strings.Builder
	js.WriteString("{")
	for i, line := range strings.Split(strings.TrimSpace(filled(managedExample)), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		if i > 0 {
			js.WriteString(",")
		}
		js.WriteString(`"` + k + `":` + v)
	}
	js.WriteString("}")
	jsonPath := writeFile(t, "c.json", js.String())
	for _, path := range []string{yamlPath, jsonPath} {
		cfg, rep, err := Load(path, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(path), err)
		}
		if len(rep.Warnings) != 0 {
			t.Errorf("%s: unexpected warnings %v", filepath.Base(path), rep.Warnings)
		}
		if cfg.SourceAlias != "source" || cfg.TargetAlias != "target" || !cfg.SyncGroupOffsets ||
			cfg.SyncGroupOffsetsInterval != 7*time.Second || cfg.EmitCheckpointsInterval != 5*time.Second ||
			cfg.TasksMax != 3 || len(cfg.Target.BootstrapServers) != 2 || cfg.Source.BootstrapServers[0] != "127.0.0.1:19092" {
			t.Fatalf("%s: wrong config %+v", filepath.Base(path), cfg)
		}
		if got := cfg.Policy.CheckpointsTopic(cfg.SourceAlias); got != "source.checkpoints.internal" {
			t.Fatalf("checkpoints topic %q", got)
		}
	}
}

func TestUnfilledPlaceholdersAreNamed(t *testing.T) {
	_, rep, err := Load(writeFile(t, "c.yaml", managedExample), nil, nil)
	if err == nil {
		t.Fatal("a file with placeholders loaded")
	}
	for _, ph := range []string{"CHECKPOINT_INTERVAL", "SOURCE_CLUSTER_BOOTSTRAP_ADDRESS", "OFFSETS_SYNC_INTERVAL", "TARGET_CLUSTER_BOOTSTRAP_ADDRESS"} {
		if !strings.Contains(err.Error(), ph) {
			t.Errorf("placeholder %s not reported: %v", ph, err)
		}
	}
	if len(rep.Problems) != 4 {
		t.Errorf("want exactly the 4 placeholders reported, got %d: %v", len(rep.Problems), rep.Problems)
	}
}

func base() map[string]string {
	return map[string]string{
		"source.cluster.alias": "A", "target.cluster.alias": "B",
		"source.cluster.bootstrap.servers": "a:9092", "target.cluster.bootstrap.servers": "b:9092",
	}
}

func with(kv ...string) map[string]string {
	m := base()
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func TestInvalidValuesNameKeyValueAndAllowed(t *testing.T) {
	cases := []struct {
		name  string
		props map[string]string
		want  []string
	}{
		{"bad bool", with("sync.group.offsets.enabled", "yes"), []string{"sync.group.offsets.enabled", `"yes"`, "true or false"}},
		{"bad number", with("tasks.max", "0"), []string{"tasks.max", `"0"`, "from 1"}},
		{"bad location", with("offset-syncs.topic.location", "A"), []string{"offset-syncs.topic.location", `"A"`, "source, target"}},
		{"java-only regex", with("groups", "(?!tmp).*"), []string{"groups", "(?!tmp)"}},
		{"missing alias", map[string]string{"source.cluster.bootstrap.servers": "a:1", "target.cluster.bootstrap.servers": "b:1"}, []string{"source.cluster.alias", "required"}},
		{"no port", with("target.cluster.bootstrap.servers", "b"), []string{"target.cluster.bootstrap.servers", "host:port"}},
		{"bad policy", with("replication.policy.class", "com.example.Mine"), []string{"replication.policy.class", "com.example.Mine"}},
		{"bad security protocol", with("source.cluster.security.protocol", "TLS"), []string{"security.protocol", "TLS"}},
		{"jks store", with("target.cluster.security.protocol", "SSL", "target.cluster.ssl.truststore.type", "JKS"), []string{"PEM"}},
		{"unsupported sasl", with("source.cluster.security.protocol", "SASL_SSL", "source.cluster.sasl.mechanism", "GSSAPI"), []string{"sasl.mechanism", "GSSAPI"}},
		{"wrong connector", with("connector.class", "org.apache.kafka.connect.mirror.MirrorSourceConnector"), []string{"connector.class", "MirrorSourceConnector"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := FromProperties(tc.props, nil, nil)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestAllProblemsReportedAtOnce(t *testing.T) {
	_, rep, err := FromProperties(with("tasks.max", "x", "groups", `(a)\1`, "checkpointd.log.format", "xml"), nil, nil)
	if err == nil || len(rep.Problems) != 3 {
		t.Fatalf("want 3 problems, got %v", rep.Problems)
	}
}

func TestOverridePrecedence(t *testing.T) {
	props := with("groups", "file", "topics", "file", "offset-syncs.topic.location", "source")
	env := []string{"CHECKPOINTD_GROUPS=env", "CHECKPOINTD_TOPICS=env", "CHECKPOINTD_OFFSET_SYNCS_TOPIC_LOCATION=target", "PATH=/bin"}
	cfg, _, err := FromProperties(props, []string{"topics=set"}, env)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Groups != "env" || cfg.Topics != "set" || cfg.OffsetSyncsTopicLocation != "target" {
		t.Fatalf("groups %q topics %q location %q", cfg.Groups, cfg.Topics, cfg.OffsetSyncsTopicLocation)
	}
	if _, _, err := FromProperties(base(), []string{"novalue"}, nil); err == nil {
		t.Fatal("--set without = accepted")
	}
}

func TestUnknownAndIgnoredKeysWarn(t *testing.T) {
	_, rep, err := FromProperties(with("offset.lag.max", "10", "colour", "blue", "source.consumer.fetch.min.bytes", "1"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(rep.Warnings, "\n")
	for _, w := range []string{"offset.lag.max: ignored", "colour: unknown key", "source.consumer.fetch.min.bytes"} {
		if !strings.Contains(joined, w) {
			t.Errorf("no warning %q in %q", w, joined)
		}
	}
}

func TestPropertiesAndDriverStyle(t *testing.T) {
	plain := "# connector\nsource.cluster.alias = A\ntarget.cluster.alias: B\nsource.cluster.bootstrap.servers=a:1\ntarget.cluster.bootstrap.servers=b:1\ngroups=app-.*,\\\n  other\n"
	cfg, _, err := Load(writeFile(t, "c.properties", plain), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.SourceAlias != "A" || cfg.TargetAlias != "B" || cfg.Groups != "app-.*,other" {
		t.Fatalf("properties: %+v", cfg)
	}

	driver := `clusters = us, eu
us.bootstrap.servers = us1:9092
eu.bootstrap.servers = eu1:9092
us.security.protocol = SASL_PLAINTEXT
us.sasl.mechanism = PLAIN
us.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p\\\"w";
us->eu.enabled = true
eu->us.enabled = false
groups = app-.*
us->eu.sync.group.offsets.enabled = true
eu.offset.flush.interval.ms = 1000
`
	cfg, rep, err := Load(writeFile(t, "mm2.properties", driver), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.SourceAlias != "us" || cfg.TargetAlias != "eu" || !cfg.SyncGroupOffsets || cfg.Groups != "app-.*" ||
		cfg.Source.BootstrapServers[0] != "us1:9092" || cfg.Target.BootstrapServers[0] != "eu1:9092" {
		t.Fatalf("driver: %+v", cfg)
	}
	if !strings.Contains(strings.Join(rep.Warnings, "\n"), "eu.offset.flush.interval.ms") {
		t.Errorf("worker setting not reported as ignored: %v", rep.Warnings)
	}
	sc, err := cfg.SaramaConfig(SourceAdmin)
	if err != nil {
		t.Fatal(err)
	}
	if !sc.Net.SASL.Enable || sc.Net.SASL.User != "u" || sc.Net.SASL.Password != `p"w` || sc.Net.SASL.Mechanism != sarama.SASLTypePlaintext {
		t.Fatalf("SASL from jaas config: %+v", sc.Net.SASL)
	}
	if cfg.Policy.CheckpointsTopic("us") != "us.checkpoints.internal" {
		t.Fatal("policy")
	}
	two := strings.Replace(driver, "eu->us.enabled = false", "eu->us.enabled = true", 1)
	if _, _, err := Load(writeFile(t, "two.properties", two), nil, nil); err == nil || !strings.Contains(err.Error(), "exactly one flow") {
		t.Fatalf("two flows: %v", err)
	}
}

func TestClientPrecedenceAndRedaction(t *testing.T) {
	props := with(
		"source.cluster.security.protocol", "SASL_PLAINTEXT",
		"source.cluster.sasl.mechanism", "SCRAM-SHA-512",
		"source.cluster.sasl.jaas.config", `org.apache.kafka.common.security.scram.ScramLoginModule required username="cluster" password="secret1";`,
		"source.admin.sasl.jaas.config", `org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="secret2";`,
		"source.cluster.fetch.max.bytes", "1", // not a connection key: dropped from cluster.*
	)
	cfg, _, err := FromProperties(props, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	admin, _ := cfg.SaramaConfig(SourceAdmin)
	consumer, _ := cfg.SaramaConfig(SourceConsumer)
	if admin.Net.SASL.User != "admin" || consumer.Net.SASL.User != "cluster" || admin.Net.SASL.Mechanism != sarama.SASLTypeSCRAMSHA512 {
		t.Fatalf("admin %q consumer %q", admin.Net.SASL.User, consumer.Net.SASL.User)
	}
	if admin.Net.SASL.SCRAMClientGeneratorFunc == nil {
		t.Fatal("no SCRAM client")
	}
	for _, kv := range cfg.Effective() {
		if strings.Contains(kv.Value, "secret") {
			t.Fatalf("secret printed: %s=%s", kv.Key, kv.Value)
		}
	}
}

func TestDefaults(t *testing.T) {
	cfg, _, err := FromProperties(base(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.SyncGroupOffsets || cfg.SyncGroupOffsetsInterval != time.Minute || cfg.CheckpointsTopicReplicationFactor != 3 ||
		cfg.OffsetSyncsTopicLocation != "source" || cfg.CommitSource != "auto" || cfg.GroupID != "checkpointd-A-B" ||
		cfg.GroupsExclude != "console-consumer-.*, connect-.*, __.*" {
		t.Fatalf("defaults: %+v", cfg)
	}
	if _, ok := cfg.Policy.(messages.DefaultReplicationPolicy); !ok {
		t.Fatalf("policy %T", cfg.Policy)
	}
	if cfg.Policy.OffsetSyncsTopic("B") != "mm2-offset-syncs.B.internal" {
		t.Fatal("offset syncs topic")
	}
}
