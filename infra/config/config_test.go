package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/checkpointd/checkpointd/internal/javaregex"
	"github.com/checkpointd/checkpointd/messages"
)

// managedExample is the connector config managed Kafka Connect services hand out.
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

var managedPlaceholders = map[string]string{
	"emit.checkpoints.interval.seconds":   "CHECKPOINT_INTERVAL",
	"source.cluster.bootstrap.servers":    "SOURCE_CLUSTER_BOOTSTRAP_ADDRESS",
	"sync.group.offsets.interval.seconds": "OFFSETS_SYNC_INTERVAL",
	"target.cluster.bootstrap.servers":    "TARGET_CLUSTER_BOOTSTRAP_ADDRESS",
}

func filled(s string) string {
	return strings.NewReplacer(
		"CHECKPOINT_INTERVAL", "5",
		"SOURCE_CLUSTER_BOOTSTRAP_ADDRESS", "127.0.0.1:19092",
		"OFFSETS_SYNC_INTERVAL", "7",
		"TARGET_CLUSTER_BOOTSTRAP_ADDRESS", "127.0.0.1:29092,127.0.0.1:29093",
	).Replace(s)
}

// asJSON writes the managed example as the JSON object a Connect REST call would carry.
func asJSON(t *testing.T, yamlText string) string {
	t.Helper()
	obj := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(yamlText), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		obj[k] = strings.Trim(v, `"`)
	}
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestManagedExampleLoadsUnchanged(t *testing.T) {
	files := map[string]string{
		"connector.yaml": filled(managedExample),
		"connector.json": asJSON(t, filled(managedExample)),
		"connector.conf": filled(managedExample), // sniffed as YAML
	}
	for name, content := range files {
		t.Run(name, func(t *testing.T) {
			cfg, rep, err := Load(writeFile(t, name, content), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Warnings) != 0 {
				t.Errorf("warnings: %v", rep.Warnings)
			}
			if cfg.SourceAlias != "source" || cfg.TargetAlias != "target" || !cfg.SyncGroupOffsets ||
				cfg.SyncGroupOffsetsInterval != 7*time.Second || cfg.EmitCheckpointsInterval != 5*time.Second ||
				cfg.TasksMax != 3 || cfg.GroupsExclude != "console-consumer-.*,connect-.*,__.*" ||
				!slices.Equal(cfg.Source.BootstrapServers, []string{"127.0.0.1:19092"}) ||
				!slices.Equal(cfg.Target.BootstrapServers, []string{"127.0.0.1:29092", "127.0.0.1:29093"}) {
				t.Fatalf("wrong config %+v", cfg)
			}
			if got := cfg.Policy.CheckpointsTopic(cfg.SourceAlias); got != "source.checkpoints.internal" {
				t.Errorf("checkpoints topic %q", got)
			}
			if exclude, err := javaregex.ParseList(cfg.GroupsExclude); err != nil || !exclude.Match("connect-mm2") || exclude.Match("orders-app") {
				t.Errorf("groups.exclude %q does not exclude what the file says (err %v)", cfg.GroupsExclude, err)
			}
		})
	}
}

func TestUnfilledPlaceholdersAreNamed(t *testing.T) {
	for name, content := range map[string]string{"c.yaml": managedExample, "c.json": asJSON(t, managedExample)} {
		t.Run(name, func(t *testing.T) {
			_, rep, err := Load(writeFile(t, name, content), nil, nil)
			if !IsInvalid(err) {
				t.Fatalf("err = %v, want an *InvalidError", err)
			}
			if len(rep.Problems) != len(managedPlaceholders) {
				t.Errorf("want one problem per placeholder, got %v", rep.Problems)
			}
			for key, ph := range managedPlaceholders {
				found := slices.ContainsFunc(rep.Problems, func(p Issue) bool {
					return p.Key == key && strings.Contains(p.Message, "placeholder "+ph+" was not filled in")
				})
				if !found {
					t.Errorf("placeholder %s of %s not reported: %v", ph, key, rep.Problems)
				}
			}
		})
	}
}

func TestPlaceholdersElsewhere(t *testing.T) {
	_, rep, err := FromProperties(with(
		"source.cluster.sasl.jaas.config", "${file:/secrets.properties:jaas}",
		"source.cluster.security.protocol", "SASL_SSL", // a valid value that merely looks like one
		"source.cluster.sasl.mechanism", "PLAIN",
		"target.cluster.security.protocol", "SECURITY_PROTOCOL",
		"source.cluster.alias", "SOURCE_ALIAS",
	), nil, nil)
	if err == nil {
		t.Fatal("accepted")
	}
	wantProblem := map[string]string{
		"source.cluster.sasl.jaas.config":  `${file:/secrets.properties:jaas} refers to config provider "file", which config.providers does not declare`,
		"target.cluster.security.protocol": "placeholder SECURITY_PROTOCOL",
	}
	for key, msg := range wantProblem {
		if !slices.ContainsFunc(rep.Problems, func(p Issue) bool { return p.Key == key && strings.Contains(p.Message, msg) }) {
			t.Errorf("no problem %q for %s: %v", msg, key, rep.Problems)
		}
	}
	if slices.ContainsFunc(rep.Problems, func(p Issue) bool { return p.Key == "source.cluster.security.protocol" }) {
		t.Errorf("SASL_SSL taken for a placeholder: %v", rep.Problems)
	}
	if !slices.ContainsFunc(rep.Warnings, func(w Issue) bool {
		return w.Key == "source.cluster.alias" && strings.Contains(w.Message, "SOURCE_ALIAS")
	}) {
		t.Errorf("free-text placeholder not warned about: %v", rep.Warnings)
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

func without(key string) map[string]string {
	m := base()
	delete(m, key)
	return m
}

func TestDefaults(t *testing.T) {
	cfg, rep, err := FromProperties(base(), nil, nil)
	if err != nil || len(rep.Warnings) != 0 {
		t.Fatalf("err %v, warnings %v", err, rep.Warnings)
	}
	want := Config{
		Name: "checkpointd", EmitCheckpoints: true, EmitCheckpointsInterval: time.Minute,
		SyncGroupOffsets: false, SyncGroupOffsetsInterval: time.Minute, RefreshGroups: true,
		RefreshGroupsInterval: 10 * time.Minute, OffsetSyncsTopicLocation: "source",
		CheckpointsTopicReplicationFactor: 3, TasksMax: 1, ConsumerPollTimeout: time.Second,
		AdminTimeout: time.Minute, CommitSource: "auto", AdminPollInterval: time.Second, RefreshInterval: time.Second,
		MetricsAddress: "127.0.0.1:9464", HealthAddress: "127.0.0.1:9464", LogFormat: "text",
		LogLevel: "info", GroupID: "checkpointd-A-B", MetricsGroupLabels: true, StageFailureTimeout: 30 * time.Second, CommitLeaseSessionTimeout: 6 * time.Second, TargetCommitConnections: 32,
		FollowSourceRewinds: true, ExactFetchMaxBytes: 16 << 20,
		Krb5Conf: "/etc/krb5.conf", krb5From: "checkpointd.kerberos.krb5.conf (unset: the default /etc/krb5.conf)",
		Groups: ".*", GroupsExclude: "console-consumer-.*, connect-.*, __.*",
		Topics: ".*", TopicsExclude: `mm2.*\.internal, .*\.replica, __.*`,
	}
	got := *cfg
	got.Source, got.Target, got.Raw, got.origins, got.Policy, got.KafkaVersion = ClusterConfig{}, ClusterConfig{}, nil, nil, nil, want.KafkaVersion
	got.SourceAlias, got.TargetAlias, got.provided = "", "", nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("defaults\n got %+v\nwant %+v", got, want)
	}
	if cfg.KafkaVersion.String() != "4.1.0" {
		t.Errorf("Kafka version %s", cfg.KafkaVersion)
	}
	if p, ok := cfg.Policy.(messages.DefaultReplicationPolicy); !ok || p != (messages.DefaultReplicationPolicy{}) {
		t.Errorf("policy %#v", cfg.Policy)
	}
}

func TestValidValues(t *testing.T) {
	tests := []struct {
		name  string
		props map[string]string
		check func(*Config) bool
	}{
		{"identity policy", with("replication.policy.class", identityPolicyClass), func(c *Config) bool {
			p, ok := c.Policy.(messages.IdentityReplicationPolicy)
			return ok && p.SourceClusterAlias == "A" && c.Policy.FormatRemoteTopic("A", "orders") == "orders"
		}},
		{"separator", with("replication.policy.separator", "_"), func(c *Config) bool {
			return c.Policy.OffsetSyncsTopic("B") == "mm2-offset-syncs_B_internal"
		}},
		{"separator, internal names dotted", with("replication.policy.separator", "_", "replication.policy.internal.topic.separator.enabled", "FALSE"), func(c *Config) bool {
			return c.Policy.OffsetSyncsTopic("B") == "mm2-offset-syncs.B.internal" && c.Policy.FormatRemoteTopic("A", "t") == "A_t"
		}},
		{"internal flag alone changes nothing", with("replication.policy.internal.topic.separator.enabled", "false"), func(c *Config) bool {
			return c.Policy.CheckpointsTopic("A") == "A.checkpoints.internal"
		}},
		{"negative sync interval turns sync off", with("sync.group.offsets.enabled", "true", "sync.group.offsets.interval.seconds", "-1"), func(c *Config) bool {
			return !c.SyncGroupOffsets
		}},
		{"negative refresh interval turns refresh off", with("refresh.groups.interval.seconds", "-1"), func(c *Config) bool {
			return !c.RefreshGroups
		}},
		{"zero emit interval", with("emit.checkpoints.interval.seconds", "0"), func(c *Config) bool { return c.EmitCheckpointsInterval == 0 }},
		{"broker default replication factor", with("checkpoints.topic.replication.factor", "-1"), func(c *Config) bool {
			return c.CheckpointsTopicReplicationFactor == -1
		}},
		{"trimmed numbers and booleans", with("tasks.max", " 4 ", "sync.group.offsets.enabled", " True "), func(c *Config) bool {
			return c.TasksMax == 4 && c.SyncGroupOffsets
		}},
		{"simple connector class name", with("connector.class", "MirrorCheckpointConnector"), func(c *Config) bool { return true }},
		{"health address of its own", with("checkpointd.health.address", ":8080"), func(c *Config) bool {
			return c.HealthAddress == ":8080" && c.MetricsAddress == defaultMetricsAddress
		}},
		{"metrics off", with("checkpointd.metrics.address", ""), func(c *Config) bool { return c.MetricsAddress == "" && c.HealthAddress == "" }},
		{"group id", with("checkpointd.group.id", "mine"), func(c *Config) bool { return c.GroupID == "mine" }},
		{"stage failure timeout", with("checkpointd.health.stage.failure.timeout.ms", "5000"), func(c *Config) bool { return c.StageFailureTimeout == 5*time.Second }},
		{"older Kafka", with("checkpointd.kafka.version", "3.6.0"), func(c *Config) bool { return c.KafkaVersion.String() == "3.6.0" }},
		{"log settings ignore case", with("checkpointd.log.level", "DEBUG", "checkpointd.log.format", "JSON"), func(c *Config) bool {
			return c.LogLevel == "debug" && c.LogFormat == "json"
		}},
		{"IPv6 broker", with("source.cluster.bootstrap.servers", "[::1]:9092, b:9093"), func(c *Config) bool {
			return slices.Equal(c.Source.BootstrapServers, []string{"[::1]:9092", "b:9093"})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _, err := FromProperties(tt.props, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(cfg) {
				t.Errorf("unexpected config %+v", cfg)
			}
		})
	}
}

func TestInvalidValuesNameKeyValueAndAllowed(t *testing.T) {
	tests := []struct {
		name  string
		props map[string]string
		key   string
		want  []string // in the problem's text
	}{
		{"connector class", with("connector.class", "org.apache.kafka.connect.mirror.MirrorSourceConnector"), "connector.class", []string{"MirrorSourceConnector", "MirrorCheckpointConnector only"}},
		{"disabled", with("enabled", "false"), "enabled", []string{"nothing to run"}},
		{"enabled not a boolean", with("enabled", "yes"), "enabled", []string{`"yes"`, "true or false"}},
		{"missing source alias", without("source.cluster.alias"), "source.cluster.alias", []string{"required"}},
		{"empty target alias", with("target.cluster.alias", " "), "target.cluster.alias", []string{"required"}},
		{"missing bootstrap", without("target.cluster.bootstrap.servers"), "target.cluster.bootstrap.servers", []string{"required"}},
		{"no port", with("source.cluster.bootstrap.servers", "a"), "source.cluster.bootstrap.servers", []string{`"a"`, "host:port"}},
		{"bad port", with("source.cluster.bootstrap.servers", "a:x"), "source.cluster.bootstrap.servers", []string{"host:port"}},
		{"groups regex", with("groups", "(?!tmp).*"), "groups", []string{"(?!tmp)", "lookahead"}},
		{"groups.exclude regex", with("groups.exclude", `a\1`), "groups.exclude", []string{"backreference"}},
		{"topics regex", with("topics", "a*+"), "topics", []string{"possessive"}},
		{"topics.exclude regex", with("topics.exclude", "(a"), "topics.exclude", []string{"unclosed group"}},
		{"emit off", with("emit.checkpoints.enabled", "false"), "emit.checkpoints.enabled", []string{"emitting checkpoints"}},
		{"emit bool", with("emit.checkpoints.enabled", "1"), "emit.checkpoints.enabled", []string{"true or false"}},
		{"offset syncs off", with("emit.offset-syncs.enabled", "false"), "emit.offset-syncs.enabled", []string{"offset syncs"}},
		{"negative emit interval", with("emit.checkpoints.interval.seconds", "-1"), "emit.checkpoints.interval.seconds", []string{`"-1"`, "0 or more"}},
		{"emit interval not a number", with("emit.checkpoints.interval.seconds", "1m"), "emit.checkpoints.interval.seconds", []string{`"1m"`, "whole number of seconds"}},
		{"emit interval overflows", with("emit.checkpoints.interval.seconds", "9999999999999"), "emit.checkpoints.interval.seconds", []string{"whole number"}},
		{"sync bool", with("sync.group.offsets.enabled", "yes"), "sync.group.offsets.enabled", []string{`"yes"`, "true or false"}},
		{"zero sync interval", with("sync.group.offsets.interval.seconds", "0"), "sync.group.offsets.interval.seconds", []string{"positive"}},
		{"sync interval", with("sync.group.offsets.interval.seconds", "1.5"), "sync.group.offsets.interval.seconds", []string{"whole number"}},
		{"refresh bool", with("refresh.groups.enabled", "no"), "refresh.groups.enabled", []string{"true or false"}},
		{"refresh interval", with("refresh.groups.interval.seconds", "x"), "refresh.groups.interval.seconds", []string{"whole number"}},
		{"location", with("offset-syncs.topic.location", "A"), "offset-syncs.topic.location", []string{`"A"`, "source or target"}},
		{"location case", with("offset-syncs.topic.location", "Target"), "offset-syncs.topic.location", []string{"source or target"}},
		{"replication factor zero", with("checkpoints.topic.replication.factor", "0"), "checkpoints.topic.replication.factor", []string{"-1"}},
		{"replication factor too big", with("checkpoints.topic.replication.factor", "40000"), "checkpoints.topic.replication.factor", []string{"32767"}},
		{"policy class", with("replication.policy.class", "com.example.Mine"), "replication.policy.class", []string{"com.example.Mine", "IdentityReplicationPolicy"}},
		{"empty separator", with("replication.policy.separator", ""), "replication.policy.separator", []string{"non-empty"}},
		{"internal separator flag", with("replication.policy.internal.topic.separator.enabled", "maybe"), "replication.policy.internal.topic.separator.enabled", []string{"true or false"}},
		{"tasks.max", with("tasks.max", "0"), "tasks.max", []string{`"0"`, "from 1"}},
		{"poll timeout", with("consumer.poll.timeout.ms", "-5"), "consumer.poll.timeout.ms", []string{"milliseconds"}},
		{"admin timeout", with("admin.timeout.ms", "0"), "admin.timeout.ms", []string{"positive"}},
		{"group filter class", with("group.filter.class", "com.example.Filter"), "group.filter.class", []string{"groups and groups.exclude"}},
		{"topic filter class", with("topic.filter.class", "com.example.Filter"), "topic.filter.class", []string{"topics and topics.exclude"}},
		{"commit source", with("checkpointd.commit.source", "poll"), "checkpointd.commit.source", []string{`"poll"`, "auto, offsets-log, admin-poll"}},
		{"admin poll interval", with("checkpointd.admin.poll.interval.ms", "5"), "checkpointd.admin.poll.interval.ms", []string{"10 or more"}},
		{"metrics address", with("checkpointd.metrics.address", "localhost"), "checkpointd.metrics.address", []string{"host:port"}},
		{"health address", with("checkpointd.health.address", "x:y"), "checkpointd.health.address", []string{"host:port"}},
		{"stage failure timeout", with("checkpointd.health.stage.failure.timeout.ms", "0"), "checkpointd.health.stage.failure.timeout.ms", []string{"1 or more"}},
		{"commit lease session timeout", with("checkpointd.commit.lease.session.timeout.ms", "500"), "checkpointd.commit.lease.session.timeout.ms", []string{"1000 or more"}},
		{"target commit connections", with("checkpointd.target.commit.connections", "0"), "checkpointd.target.commit.connections", []string{`"0"`, "from 1 to 1024"}},
		{"log format", with("checkpointd.log.format", "xml"), "checkpointd.log.format", []string{"text, json"}},
		{"log level", with("checkpointd.log.level", "trace"), "checkpointd.log.level", []string{"debug, info, warn, error"}},
		{"group id", with("checkpointd.group.id", ""), "checkpointd.group.id", []string{"consumer group"}},
		{"group labels", with("checkpointd.metrics.group.labels", "on"), "checkpointd.metrics.group.labels", []string{"true or false"}},
		{"kafka version", with("checkpointd.kafka.version", "four"), "checkpointd.kafka.version", []string{"Kafka version"}},
		{"kafka version too old", with("checkpointd.kafka.version", "2.3.0"), "checkpointd.kafka.version", []string{"from 2.4.0"}},
		{"security protocol", with("source.cluster.security.protocol", "TLS"), "source.cluster.security.protocol", []string{`"TLS"`, "PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"}},
		{"store type", with("target.cluster.security.protocol", "SSL", "target.cluster.ssl.truststore.type", "BKS"), "target.cluster.ssl.truststore.type", []string{"BKS", "want JKS, PKCS12 or PEM"}},
		{"kerberos without JAAS", with("source.cluster.security.protocol", "SASL_SSL", "source.cluster.sasl.mechanism", "GSSAPI"), "source.cluster.sasl.jaas.config", []string{"required", "Krb5LoginModule", "useKeyTab=true"}},
		{"kerberos by default", with("source.cluster.security.protocol", "SASL_PLAINTEXT"), "source.cluster.sasl.jaas.config", []string{"sasl.mechanism is not set", "Kafka's default GSSAPI", "Krb5LoginModule", "or set sasl.mechanism"}},
		{"oauth without a token endpoint", with("source.cluster.security.protocol", "SASL_SSL", "source.cluster.sasl.mechanism", "OAUTHBEARER", "source.cluster.sasl.jaas.config", `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId="c" clientSecret="s";`), "source.cluster.sasl.oauthbearer.token.endpoint.url", []string{"required for OAUTHBEARER"}},
		{"request timeout", with("source.consumer.request.timeout.ms", "soon"), "source.consumer.request.timeout.ms", []string{`"soon"`, "milliseconds"}},
		{"auto offset reset", with("source.consumer.auto.offset.reset", "none"), "source.consumer.auto.offset.reset", []string{"earliest or latest"}},
		{"isolation level", with("consumer.isolation.level", "serializable"), "consumer.isolation.level", []string{"read_committed"}},
		{"acks", with("target.producer.acks", "2"), "target.producer.acks", []string{"all, -1, 0, 1"}},
		{"compression", with("producer.compression.type", "brotli"), "producer.compression.type", []string{"zstd"}},
		{"admin api timeout", with("target.admin.default.api.timeout.ms", "0"), "target.admin.default.api.timeout.ms", []string{"1 or more"}},
		{"role bootstrap", with("source.admin.bootstrap.servers", "nohost"), "source.admin.bootstrap.servers", []string{"host:port"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, rep, err := FromProperties(tt.props, nil, nil)
			if !IsInvalid(err) {
				t.Fatalf("err = %v, want an *InvalidError", err)
			}
			i := slices.IndexFunc(rep.Problems, func(p Issue) bool { return p.Key == tt.key })
			if i < 0 {
				t.Fatalf("no problem for %s: %v", tt.key, rep.Problems)
			}
			if len(rep.Problems) != 1 {
				t.Errorf("want exactly one problem, got %v", rep.Problems)
			}
			text := rep.Problems[i].String()
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("problem %q does not mention %q", text, w)
				}
			}
			if !strings.Contains(err.Error(), text) {
				t.Errorf("error %q does not carry the problem", err)
			}
		})
	}
}

func TestEveryProblemReportedAtOnce(t *testing.T) {
	props := with("tasks.max", "x", "groups", `(a)\1`, "checkpointd.log.format", "xml",
		"source.cluster.security.protocol", "TLS", "target.cluster.bootstrap.servers", "nohost")
	delete(props, "source.cluster.alias")
	_, rep, err := FromProperties(props, []string{"broken"}, nil)
	if err == nil {
		t.Fatal("accepted")
	}
	var keys []string
	for _, p := range rep.Problems {
		keys = append(keys, p.Key)
	}
	slices.Sort(keys)
	want := []string{"--set", "checkpointd.log.format", "groups", "source.cluster.alias", "source.cluster.security.protocol", "target.cluster.bootstrap.servers", "tasks.max"}
	if !slices.Equal(keys, want) {
		t.Errorf("problems for %v, want %v: %v", keys, want, rep.Problems)
	}
}

func TestOverridePrecedence(t *testing.T) {
	props := with("groups", "file", "topics", "file", "tasks.max", "2", "offset-syncs.topic.location", "source")
	env := []string{
		"CHECKPOINTD_GROUPS=env", "CHECKPOINTD_TOPICS=env", "CHECKPOINTD_OFFSET_SYNCS_TOPIC_LOCATION=target",
		"CHECKPOINTD_SOURCE_CONSUMER_CLIENT_RACK=rack-1", "PATH=/bin", "CHECKPOINTD_=x",
	}
	cfg, rep, err := FromProperties(props, []string{"topics=set", "tasks.max = 5"}, env)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Groups != "env" || cfg.Topics != "set" || cfg.OffsetSyncsTopicLocation != "target" || cfg.TasksMax != 5 {
		t.Fatalf("groups %q topics %q location %q tasks %d", cfg.Groups, cfg.Topics, cfg.OffsetSyncsTopicLocation, cfg.TasksMax)
	}
	if cfg.Source.Consumer["client.rack"] != "rack-1" {
		t.Errorf("env client property: %v", cfg.Source.Consumer)
	}
	if len(rep.Warnings) != 0 {
		t.Errorf("warnings %v", rep.Warnings)
	}
	origins := map[string]string{}
	for _, kv := range cfg.Effective() {
		origins[kv.Key] = kv.Origin
	}
	for key, want := range map[string]string{
		"groups": "env CHECKPOINTD_GROUPS", "topics": "--set", "tasks.max": "--set",
		"source.cluster.alias": "properties", "emit.checkpoints.enabled": "default",
	} {
		if origins[key] != want {
			t.Errorf("origin of %s = %q, want %q", key, origins[key], want)
		}
	}
}

func TestEnvName(t *testing.T) {
	for key, want := range map[string]string{
		"offset-syncs.topic.location":            "CHECKPOINTD_OFFSET_SYNCS_TOPIC_LOCATION",
		"checkpointd.admin.poll.interval.ms":     "CHECKPOINTD_CHECKPOINTD_ADMIN_POLL_INTERVAL_MS",
		"source.cluster.ssl.truststore.location": "CHECKPOINTD_SOURCE_CLUSTER_SSL_TRUSTSTORE_LOCATION",
	} {
		if got := envName(key); got != want {
			t.Errorf("envName(%q) = %q, want %q", key, got, want)
		}
	}
	// No two keys checkpointd knows share a variable.
	seen := map[string]string{}
	for _, s := range connectorKeys {
		if other, dup := seen[envName(s.name)]; dup {
			t.Errorf("%s and %s share %s", s.name, other, envName(s.name))
		}
		seen[envName(s.name)] = s.name
	}
}

func TestUnknownAndIgnoredKeysWarn(t *testing.T) {
	cfg, rep, err := FromProperties(with(
		"offset.lag.max", "10",
		"colour", "blue",
		"emit.checkpoint.interval.seconds", "5",
		"checkpointd.metric.address", ":1",
		"groups.blacklist", "x",
		"transforms", "route",
		"key.converter", "org.apache.kafka.connect.converters.ByteArrayConverter",
		"security.protocol", "SSL",
		"source.consumer.max.poll.records", "10",
		"source.consumer.acks", "all",
		"source.cluster.fetch.min.bytes", "1",
		"target.admin.frobnicate", "1",
	), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"offset.lag.max":                   "ignored by checkpointd: MirrorSourceConnector's",
		"colour":                           "unknown key",
		"emit.checkpoint.interval.seconds": "did you mean emit.checkpoints.interval.seconds?",
		"checkpointd.metric.address":       "did you mean checkpointd.metrics.address?",
		"groups.blacklist":                 "use groups.exclude",
		"transforms":                       "no single message transforms",
		"key.converter":                    "ignored by checkpointd",
		"security.protocol":                "source.cluster.security.protocol",
		"source.consumer.max.poll.records": "sarama",
		"source.consumer.acks":             "not a consumer setting",
		"source.cluster.fetch.min.bytes":   "source.consumer.fetch.min.bytes",
		"target.admin.frobnicate":          "not a Kafka client setting",
	}
	for key, msg := range want {
		if !slices.ContainsFunc(rep.Warnings, func(w Issue) bool { return w.Key == key && strings.Contains(w.Message, msg) }) {
			t.Errorf("no warning %q for %s in %v", msg, key, rep.Warnings)
		}
	}
	if len(rep.Warnings) != len(want) {
		t.Errorf("%d warnings, want %d: %v", len(rep.Warnings), len(want), rep.Warnings)
	}
	if cfg.Source.Consumer["fetch.min.bytes"] != "" {
		t.Error("source.cluster.fetch.min.bytes reached the consumer")
	}
}

func TestUnusedSecuritySettingsWarn(t *testing.T) {
	_, rep, err := FromProperties(with("source.cluster.sasl.mechanism", "PLAIN", "target.cluster.ssl.truststore.location", "/x.pem"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"source.cluster.sasl.mechanism", "target.cluster.ssl.truststore.location"} {
		if !slices.ContainsFunc(rep.Warnings, func(w Issue) bool { return w.Key == key && strings.Contains(w.Message, "PLAINTEXT") }) {
			t.Errorf("no warning for unused %s: %v", key, rep.Warnings)
		}
	}
}

func TestRedaction(t *testing.T) {
	secrets := map[string]string{
		"source.cluster.sasl.jaas.config":        `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="hunter2";`,
		"source.cluster.ssl.key.password":        "hunter2",
		"target.cluster.ssl.truststore.password": "hunter2",
		"target.cluster.ssl.keystore.key":        "-----BEGIN PRIVATE KEY-----hunter2",
		"checkpointd.api.secret":                 "hunter2",
		"source.admin.sasl.oauthbearer.token":    "hunter2",
	}
	props := base()
	for k, v := range secrets {
		props[k] = v
	}
	props["tasks.max"] = "hunter2" // not secret: shown in its problem
	cfg, rep, _ := FromProperties(props, nil, []string{"CHECKPOINTD_TARGET_CONSUMER_SSL_KEY_PASSWORD=hunter2"})
	var printed strings.Builder
	for _, kv := range cfg.Effective() {
		if kv.Key != "tasks.max" {
			printed.WriteString(kv.Key + "=" + kv.Value + "\n")
		}
		if _, secret := secrets[kv.Key]; secret && kv.Value != Redacted {
			t.Errorf("%s printed as %q", kv.Key, kv.Value)
		}
	}
	for _, i := range append(rep.Warnings, rep.Problems...) {
		if i.Key != "tasks.max" {
			printed.WriteString(i.String() + "\n")
		}
	}
	if strings.Contains(printed.String(), "hunter2") {
		t.Errorf("a secret was printed:\n%s", printed.String())
	}
}

func TestEffectiveListsDefaultsAndDerivedValues(t *testing.T) {
	cfg, _, err := FromProperties(base(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]KeyValue{}
	var keys []string
	for _, kv := range cfg.Effective() {
		got[kv.Key] = kv
		keys = append(keys, kv.Key)
	}
	if !slices.IsSorted(keys) {
		t.Error("not sorted")
	}
	for _, s := range connectorKeys {
		if _, ok := got[s.name]; !ok {
			t.Errorf("%s missing", s.name)
		}
	}
	if got["checkpointd.group.id"].Value != "checkpointd-A-B" || got["checkpointd.health.address"].Value != defaultMetricsAddress ||
		got["sync.group.offsets.enabled"] != (KeyValue{"sync.group.offsets.enabled", "false", "default"}) {
		t.Errorf("effective: %v", got)
	}
}

func TestLoadErrors(t *testing.T) {
	if _, _, err := Load(filepath.Join(t.TempDir(), "missing.yaml"), nil, nil); err == nil || IsInvalid(err) {
		t.Errorf("missing file: %v", err)
	}
	if _, _, err := Load(writeFile(t, "bad.json", `{"a": {"b": 1}}`), nil, nil); err == nil || !strings.Contains(err.Error(), `"a"`) {
		t.Errorf("nested JSON: %v", err)
	}
}

func TestUnknownEnvironmentVariableIsNamed(t *testing.T) {
	_, rep, err := FromProperties(base(), nil, []string{"CHECKPOINTD_COLOUR_SCHEME=blue"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Warnings) != 1 || rep.Warnings[0].Key != "colour.scheme" || !strings.Contains(rep.Warnings[0].Message, "from CHECKPOINTD_COLOUR_SCHEME") {
		t.Errorf("warnings %v", rep.Warnings)
	}
}

func TestIsSecret(t *testing.T) {
	cases := []struct {
		key    string
		secret bool
	}{
		{"source.cluster.sasl.jaas.config", true},
		{"source.cluster.sasl.jaas.confg", true}, // misspelled: still a JAAS config
		{"source.cluster.sasl.jass.config", true},
		{"source.cluster.sasl.mechanism", false},
		{"target.admin.ssl.key.password", true},
		{"target.admin.ssl.keystore.pasword", true},
		{"target.admin.ssl.keystore.passowrd", true},
		{"source.cluster.ssl.keystore.key", true},
		{"source.cluster.ssl.keystore.kye", false},
		{"source.admin.basic.auth.user.info", true},
		{"schema.registry.basic.auth.userinfo", true},
		{"source.consumer.some.token", true},
		{"sasl.oauthbearer.client.secret", true},
		{"producer.api.key", true},
		{"producer.apikey", true},
		{"producer.api-keys", true},
		{"aws.secret.access.key", true},
		{"cloud.private_key", true},
		{"target.cluster.ssl.truststore.passwd", true},
		{"google.credentials.json", true},
		{"source.cluster.ssl.keystore.location", false},
		{"source.cluster.ssl.keystore.type", false},
		{"ssl.keymanager.algorithm", false},
		{"key.converter", false},
		{"source.consumer.key.deserializer", false},
		{"value.serializer", false},
		{"source.cluster.bootstrap.servers", false},
		{"groups", false},
		{"groups.exclude", false},
		{"tasks.max", false},
		{"name", false},
		{"enabled", false},
		{"source.cluster.alias", false},
		{"sync.group.offsets.interval.seconds", false},
		{"replication.policy.separator", false},
		{"source.cluster.sasl.oauthbearer.token.endpoint.url", false},
		{"source.cluster.sasl.oauthbearer.client.credentials.client.secret", true},
	}
	for _, tc := range cases {
		if got := isSecret(tc.key); got != tc.secret {
			t.Errorf("isSecret(%q) = %v, want %v", tc.key, got, tc.secret)
		}
	}
}

// TestMisspelledSecretsRedacted: a key checkpointd does not know is warned about, and
// its value is redacted in the warning and in the effective configuration when its
// name looks secret.
func TestMisspelledSecretsRedacted(t *testing.T) {
	const secret = "pl4nted-S3cret"
	keys := []string{"source.cluster.sasl.jaas.confg", "source.admin.basic.auth.user.info", "target.consumer.sasl.oauthbearer.client.secret", "source.cluster.ssl.keystore.kee"}
	props := base()
	for _, k := range keys {
		props[k] = secret
	}
	cfg, rep, err := FromProperties(props, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, w := range rep.Warnings {
		all = append(all, w.String())
	}
	for _, kv := range cfg.Effective() {
		all = append(all, kv.Key+"="+kv.Value)
	}
	text := strings.Join(all, "\n")
	for _, k := range keys[:3] {
		if !strings.Contains(text, k+"="+Redacted) {
			t.Errorf("%s not shown redacted:\n%s", k, text)
		}
	}
	if strings.Count(text, secret) != 1 || !strings.Contains(text, "source.cluster.ssl.keystore.kee="+secret) {
		t.Errorf("want only the non-secret-looking key shown in full:\n%s", text)
	}
}
