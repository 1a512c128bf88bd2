package config

import (
	"slices"
	"strings"
	"testing"
)

// activeActive is the issue's example: two clusters replicating into each
// other, with cluster-level security settings and flow-level overrides.
const activeActive = `clusters = A, B
A.bootstrap.servers = a1:9092, a2:9092
B.bootstrap.servers = b1:9092
A.security.protocol = SASL_SSL
A.sasl.mechanism = SCRAM-SHA-512
A.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required username="a" password="pa";
A.ssl.endpoint.identification.algorithm =
A.consumer.fetch.min.bytes = 10
B.admin.request.timeout.ms = 5000
A->B.enabled = true
B->A.enabled = true
A->B.topics = .*
A->B.sync.group.offsets.enabled = true
B->A.groups = payments-.*
groups = .*
replication.policy.class = org.apache.kafka.connect.mirror.DefaultReplicationPolicy
B.offset.flush.interval.ms = 1000
`

func TestDriverFileFlowsEachGetTheirSettings(t *testing.T) {
	cfgs, rep, err := LoadFlows(writeFile(t, "mm2.properties", activeActive), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfgs) != 2 {
		t.Fatalf("got %d flows, want 2", len(cfgs))
	}
	ab, ba := cfgs[0], cfgs[1]
	tests := []struct {
		what      string
		got, want any
	}{
		{"A->B source", ab.String(), "A->B"},
		{"B->A source", ba.String(), "B->A"},
		{"A->B source servers", ab.Source.BootstrapServers, []string{"a1:9092", "a2:9092"}},
		{"A->B target servers", ab.Target.BootstrapServers, []string{"b1:9092"}},
		{"B->A source servers", ba.Source.BootstrapServers, []string{"b1:9092"}},
		{"B->A target servers", ba.Target.BootstrapServers, []string{"a1:9092", "a2:9092"}},
		{"A->B source security", ab.Raw["source.cluster.security.protocol"], "SASL_SSL"},
		{"B->A target security", ba.Raw["target.cluster.security.protocol"], "SASL_SSL"},
		{"B->A source security (B sets none)", ba.Raw["source.cluster.security.protocol"], ""},
		{"A->B source sasl", ab.Raw["source.cluster.sasl.mechanism"], "SCRAM-SHA-512"},
		{"B->A target sasl", ba.Raw["target.cluster.sasl.mechanism"], "SCRAM-SHA-512"},
		{"A->B source ssl", ab.Raw["source.cluster.ssl.endpoint.identification.algorithm"], ""},
		{"A->B source consumer", ab.Raw["source.consumer.fetch.min.bytes"], "10"},
		{"B->A target consumer", ba.Raw["target.consumer.fetch.min.bytes"], "10"},
		{"B->A source admin", ba.Raw["source.admin.request.timeout.ms"], "5000"},
		{"A->B sync (flow key)", ab.SyncGroupOffsets, true},
		{"B->A sync (default)", ba.SyncGroupOffsets, false},
		{"A->B groups (top level)", ab.Groups, ".*"},
		{"B->A groups (flow key over top level)", ba.Groups, "payments-.*"},
		{"A->B group id", ab.GroupID, "checkpointd-A-B"},
		{"B->A group id", ba.GroupID, "checkpointd-B-A"},
		{"A->B checkpoints topic", ab.Policy.CheckpointsTopic(ab.SourceAlias), "A.checkpoints.internal"},
		{"B->A offset syncs topic", ba.OffsetSyncs().Topic, "mm2-offset-syncs.A.internal"},
	}
	for _, tt := range tests {
		if !equal(tt.got, tt.want) {
			t.Errorf("%s = %v, want %v", tt.what, tt.got, tt.want)
		}
	}
	if _, ok := ab.Raw["source.cluster.offset.flush.interval.ms"]; ok {
		t.Error("a worker setting became a connector key")
	}
	src, err := ba.SaramaConfig(TargetConsumer)
	if err != nil {
		t.Fatal(err)
	}
	if src.Net.SASL.User != "a" || !src.Net.TLS.Enable || src.Consumer.Fetch.Min != 10 {
		t.Errorf("B->A's target consumer (cluster A): user %q TLS %v fetch.min %d", src.Net.SASL.User, src.Net.TLS.Enable, src.Consumer.Fetch.Min)
	}
	if n := count(rep.Warnings, "B.offset.flush.interval.ms"); n != 1 {
		t.Errorf("worker setting warned %d times, want once: %v", n, rep.Warnings)
	}
}

func equal(a, b any) bool {
	as, aok := a.([]string)
	bs, bok := b.([]string)
	if aok && bok {
		return slices.Equal(as, bs)
	}
	return a == b
}

func count(issues []Issue, key string) int {
	n := 0
	for _, is := range issues {
		if is.Key == key {
			n++
		}
	}
	return n
}

func TestDriverFileFlowProblems(t *testing.T) {
	tests := []struct {
		name string
		file string
		sets []string
		// wantKey is the key the problem names, and want a part of its message.
		wantKey, want string
	}{
		{
			name:    "flow enabled for a cluster not in clusters",
			file:    activeActive + "A->C.enabled = true\n",
			wantKey: "A->C.enabled", want: "cluster C not in clusters (A, B)",
		},
		{
			name:    "flow into itself",
			file:    activeActive + "A->A.enabled = true\n",
			wantKey: "A->A.enabled", want: "two different clusters",
		},
		{
			name:    "cluster without bootstrap.servers",
			file:    strings.Replace(activeActive, "B.bootstrap.servers = b1:9092\n", "", 1),
			wantKey: "B.bootstrap.servers", want: "required",
		},
		{
			name:    "bad value of a cluster key, used by both flows",
			file:    strings.Replace(activeActive, "B.bootstrap.servers = b1:9092", "B.bootstrap.servers = b1", 1),
			wantKey: "B.bootstrap.servers", want: "",
		},
		{
			name:    "bad value of a flow key",
			file:    activeActive + "B->A.sync.group.offsets.enabled = maybe\n",
			wantKey: "B->A.sync.group.offsets.enabled", want: "want true or false",
		},
		{
			name:    "bad top-level key",
			file:    activeActive + "emit.checkpoints.interval.seconds = -1\n",
			wantKey: "emit.checkpoints.interval.seconds", want: "0 or more",
		},
		{
			name:    "flows sharing a consumer group",
			file:    activeActive + "checkpointd.group.id = cpd\n",
			wantKey: "checkpointd.group.id", want: "flows A->B and B->A would share this consumer group",
		},
		{
			name:    "flows with a metrics server each",
			file:    activeActive + "B->A.checkpointd.metrics.address = :9999\n",
			wantKey: "checkpointd.metrics.address", want: `B->A ":9999"`,
		},
		{
			name:    "no flow",
			file:    "clusters = A, B\nA.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\nA->B.enabled = false\n",
			wantKey: "", want: "no flow is enabled",
		},
		{
			name:    "empty clusters",
			file:    "clusters = \nA->B.enabled = true\n",
			wantKey: "", want: "clusters=\"\"",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, rep, err := LoadFlows(writeFile(t, "mm2.properties", tt.file), tt.sets, nil)
			if err == nil {
				t.Fatal("no error")
			}
			i := slices.IndexFunc(rep.Problems, func(p Issue) bool { return p.Key == tt.wantKey && strings.Contains(p.Message, tt.want) })
			if i < 0 {
				t.Fatalf("want a problem of key %q with %q, got %v", tt.wantKey, tt.want, rep.Problems)
			}
			if n := count(rep.Problems, tt.wantKey); n != 1 {
				t.Errorf("%d problems of key %q, want 1 (one per key, not per flow): %v", n, tt.wantKey, rep.Problems)
			}
		})
	}
}

func TestDriverFileFlowWarnings(t *testing.T) {
	tests := []struct {
		name    string
		extra   string
		key     string // warned once
		message string // in the message
	}{
		{"unknown top-level key", "grups = x\n", "grups", "did you mean groups"},
		{"unknown flow key", "A->B.grups = x\n", "A->B.grups", "did you mean groups"},
		{"key of a flow not enabled", "C->A.groups = x\nclusters = A, B, C\nC.bootstrap.servers = c:1\n", "C->A.groups", "not enabled"},
		{"key of a cluster in no flow", "clusters = A, B, C\nC.bootstrap.servers = c:1\n", "C.bootstrap.servers", "no enabled flow uses"},
		{"worker setting of a cluster", "A.client.id = x\n", "A.client.id", "Connect worker setting"},
		{"MirrorSourceConnector key", "offset.lag.max = 0\n", "offset.lag.max", "ignored by checkpointd"},
		{"client key not mapped", "A.consumer.max.poll.records = 5\n", "A.consumer.max.poll.records", "ignored"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := activeActive
			if strings.Contains(tt.extra, "clusters =") {
				file = strings.Replace(file, "clusters = A, B\n", "", 1)
			}
			_, rep, err := LoadFlows(writeFile(t, "mm2.properties", file+tt.extra), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			var found []Issue
			for _, w := range rep.Warnings {
				if w.Key == tt.key {
					found = append(found, w)
				}
			}
			if len(found) != 1 || !strings.Contains(found[0].Message, tt.message) {
				t.Fatalf("want one warning of %s with %q, got %v (all: %v)", tt.key, tt.message, found, rep.Warnings)
			}
		})
	}
}

func TestDriverFileFlowOverrides(t *testing.T) {
	tests := []struct {
		name  string
		sets  []string
		env   []string
		check func(t *testing.T, cfgs []*Config)
	}{
		{"turn a flow off", []string{"B->A.enabled=false"}, nil, func(t *testing.T, cfgs []*Config) {
			if len(cfgs) != 1 || cfgs[0].String() != "A->B" {
				t.Errorf("flows %v", cfgs)
			}
		}},
		{"a connector key for every flow", []string{"groups=all-.*"}, nil, func(t *testing.T, cfgs []*Config) {
			if cfgs[0].Groups != "all-.*" || cfgs[1].Groups != "all-.*" {
				t.Errorf("groups %q %q", cfgs[0].Groups, cfgs[1].Groups)
			}
		}},
		{"a flow key", []string{"B->A.sync.group.offsets.enabled=true"}, nil, func(t *testing.T, cfgs []*Config) {
			if !cfgs[1].SyncGroupOffsets {
				t.Error("B->A not syncing")
			}
		}},
		{"a cluster key from the environment", nil, []string{"CHECKPOINTD_B_BOOTSTRAP_SERVERS=b9:9092"}, func(t *testing.T, cfgs []*Config) {
			if cfgs[0].Target.BootstrapServers[0] != "b9:9092" || cfgs[1].Source.BootstrapServers[0] != "b9:9092" {
				t.Errorf("B's servers %v %v", cfgs[0].Target.BootstrapServers, cfgs[1].Source.BootstrapServers)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfgs, _, err := LoadFlows(writeFile(t, "mm2.properties", activeActive), tt.sets, tt.env)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, cfgs)
		})
	}
}

// TestLoadTakesOneFlow: commands that work on one flow (translate, inspect)
// name the flows and how to pick one.
func TestLoadTakesOneFlow(t *testing.T) {
	_, _, err := Load(writeFile(t, "mm2.properties", activeActive), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "2 are enabled (A->B, B->A)") || !strings.Contains(err.Error(), "--set B->A.enabled=false") {
		t.Fatalf("err = %v", err)
	}
	cfg, _, err := Load(writeFile(t, "mm2.properties", activeActive), []string{"A->B.enabled=false"}, nil)
	if err != nil || cfg.String() != "B->A" {
		t.Fatalf("cfg %v, err %v", cfg, err)
	}
}

// TestConnectorConfigIsOneFlow: the managed-service form is one flow for
// LoadFlows too, with the same result as Load.
func TestConnectorConfigIsOneFlow(t *testing.T) {
	file := writeFile(t, "connector.yaml", "source.cluster.alias: s\nsource.cluster.bootstrap.servers: s:1\ntarget.cluster.bootstrap.servers: t:1\ngrups: x\n")
	cfgs, rep, err := LoadFlows(file, nil, nil)
	if err != nil || len(cfgs) != 1 || cfgs[0].String() != "s->target" {
		t.Fatalf("cfgs %v err %v", cfgs, err)
	}
	cfg, single, err := Load(file, nil, nil)
	if err != nil || cfg.GroupID != cfgs[0].GroupID || len(single.Warnings) != len(rep.Warnings) || count(rep.Warnings, "grups") != 1 {
		t.Fatalf("Load %v %v, LoadFlows warnings %v", cfg, err, rep.Warnings)
	}
}
