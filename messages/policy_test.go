package messages

import (
	"strings"
	"testing"
)

func TestDefaultReplicationPolicyRemoteTopics(t *testing.T) {
	tests := []struct {
		name      string
		separator string
		topic     string
		source    string
		upstream  string
		original  string
	}{
		{name: "remote", topic: "a.b", source: "a", upstream: "b", original: "b"},
		{name: "trailing separator is not remote", topic: "a.", original: "a."},
		{name: "leading separator gives empty source", topic: ".a", source: "", upstream: "a", original: "a"},
		{name: "not remote", topic: "orders", original: "orders"},
		{name: "empty", topic: "", original: ""},
		{name: "only separators", topic: "..", original: ".."},
		{name: "two hops", topic: "us-west.C.orders", source: "us-west", upstream: "C.orders", original: "orders"},
		{name: "doubled separator keeps the empty piece", topic: "a..b", source: "a", upstream: ".b", original: "b"},
		{name: "trailing separator after a hop", topic: "a.b.", source: "a", upstream: "b.", original: "b."},
		{name: "multi-char separator", separator: "__", topic: "A__orders", source: "A", upstream: "orders", original: "orders"},
		{name: "multi-char separator, non-overlapping matches", separator: "__", topic: "A___orders", source: "A", upstream: "_orders", original: "_orders"},
		{name: "multi-char separator leading", separator: "__", topic: "__consumer_offsets", source: "", upstream: "consumer_offsets", original: "consumer_offsets"},
		{name: "dash separator inside alias", separator: "-", topic: "us-west-orders", source: "us", upstream: "west-orders", original: "orders"},
		{name: "regex metacharacter is literal", separator: "*", topic: "a*b", source: "a", upstream: "b", original: "b"},
		{name: "regex metacharacter does not match anything", separator: "*", topic: "a.b", original: "a.b"},
		{name: "pipe separator", separator: "|", topic: "a|b|c", source: "a", upstream: "b|c", original: "c"},
		{name: "quote terminator separator", separator: `\E`, topic: `a\Eb`, source: "a", upstream: "b", original: "b"},
		{name: "custom separator ignores dots", separator: "_", topic: "a.b", original: "a.b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := DefaultReplicationPolicy{Separator: tt.separator}
			if got := p.TopicSource(tt.topic); got != tt.source {
				t.Errorf("TopicSource(%q) = %q, want %q", tt.topic, got, tt.source)
			}
			if got := p.UpstreamTopic(tt.topic); got != tt.upstream {
				t.Errorf("UpstreamTopic(%q) = %q, want %q", tt.topic, got, tt.upstream)
			}
			if got := p.OriginalTopic(tt.topic); got != tt.original {
				t.Errorf("OriginalTopic(%q) = %q, want %q", tt.topic, got, tt.original)
			}
		})
	}
}

func TestDefaultReplicationPolicyNames(t *testing.T) {
	tests := []struct {
		name        string
		policy      DefaultReplicationPolicy
		remote      string
		offsetSyncs string
		checkpoints string
	}{
		{
			name:        "defaults",
			remote:      "us-west.orders",
			offsetSyncs: "mm2-offset-syncs.B.internal",
			checkpoints: "A.checkpoints.internal",
		},
		{
			name:        "custom separator",
			policy:      DefaultReplicationPolicy{Separator: "_"},
			remote:      "us-west_orders",
			offsetSyncs: "mm2-offset-syncs_B_internal",
			checkpoints: "A_checkpoints_internal",
		},
		{
			name:        "custom separator, internal separator disabled",
			policy:      DefaultReplicationPolicy{Separator: "_", InternalTopicSeparatorDisabled: true},
			remote:      "us-west_orders",
			offsetSyncs: "mm2-offset-syncs.B.internal",
			checkpoints: "A.checkpoints.internal",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.policy.FormatRemoteTopic("us-west", "orders"); got != tt.remote {
				t.Errorf("FormatRemoteTopic = %q, want %q", got, tt.remote)
			}
			if got := tt.policy.OffsetSyncsTopic("B"); got != tt.offsetSyncs {
				t.Errorf("OffsetSyncsTopic = %q, want %q", got, tt.offsetSyncs)
			}
			if got := tt.policy.CheckpointsTopic("A"); got != tt.checkpoints {
				t.Errorf("CheckpointsTopic = %q, want %q", got, tt.checkpoints)
			}
			if got := tt.policy.HeartbeatsTopic(); got != "heartbeats" {
				t.Errorf("HeartbeatsTopic = %q, want heartbeats", got)
			}
			if !tt.policy.IsCheckpointsTopic(tt.checkpoints) || !tt.policy.IsMM2InternalTopic(tt.offsetSyncs) {
				t.Errorf("own internal topics %q, %q not recognised", tt.checkpoints, tt.offsetSyncs)
			}
		})
	}
}

func TestReplicationPolicyPredicates(t *testing.T) {
	dflt := DefaultReplicationPolicy{}
	underscore := DefaultReplicationPolicy{Separator: "_"}
	identity := IdentityReplicationPolicy{SourceClusterAlias: "A"}
	tests := []struct {
		policy      ReplicationPolicy
		topic       string
		heartbeats  bool
		checkpoints bool
		mm2Internal bool
		internal    bool
	}{
		{policy: dflt, topic: "heartbeats", heartbeats: true},
		{policy: dflt, topic: "A.heartbeats", heartbeats: true},
		{policy: dflt, topic: "B.A.heartbeats", heartbeats: true},
		{policy: dflt, topic: "myheartbeats"},
		{policy: dflt, topic: "A.heartbeats.x"},
		{policy: dflt, topic: "A.checkpoints.internal", checkpoints: true, mm2Internal: true, internal: true},
		{policy: dflt, topic: "mm2-offset-syncs.B.internal", mm2Internal: true, internal: true},
		{policy: dflt, topic: "mm2-offsets.CLUSTER.internal", mm2Internal: true, internal: true},
		// Kafka 4.0 (KIP-1074): look-alike user topics are not internal any more.
		{policy: dflt, topic: "mm2-offsets-CLUSTER-internal"},
		{policy: dflt, topic: "orders.internal"},
		{policy: dflt, topic: "orders-internal"},
		{policy: dflt, topic: "__consumer_offsets", internal: true},
		{policy: dflt, topic: ".hidden", internal: true},
		{policy: underscore, topic: "A_checkpoints_internal", checkpoints: true, mm2Internal: true, internal: true},
		{policy: underscore, topic: "A.checkpoints.internal"},
		{policy: underscore, topic: "mm2-offset-syncs_B_internal", mm2Internal: true, internal: true},
		{policy: underscore, topic: "A_heartbeats", heartbeats: true},
		{policy: identity, topic: "heartbeats", heartbeats: true},
		{policy: identity, topic: "B.A.heartbeats", heartbeats: true},
		{policy: identity, topic: "orders"},
		{policy: identity, topic: "A.checkpoints.internal", checkpoints: true, mm2Internal: true, internal: true},
	}
	for _, tt := range tests {
		t.Run(tt.topic, func(t *testing.T) {
			if got := tt.policy.IsHeartbeatsTopic(tt.topic); got != tt.heartbeats {
				t.Errorf("%T.IsHeartbeatsTopic(%q) = %v", tt.policy, tt.topic, got)
			}
			if got := tt.policy.IsCheckpointsTopic(tt.topic); got != tt.checkpoints {
				t.Errorf("%T.IsCheckpointsTopic(%q) = %v", tt.policy, tt.topic, got)
			}
			if got := tt.policy.IsMM2InternalTopic(tt.topic); got != tt.mm2Internal {
				t.Errorf("%T.IsMM2InternalTopic(%q) = %v", tt.policy, tt.topic, got)
			}
			if got := tt.policy.IsInternalTopic(tt.topic); got != tt.internal {
				t.Errorf("%T.IsInternalTopic(%q) = %v", tt.policy, tt.topic, got)
			}
		})
	}
}

func TestIdentityReplicationPolicy(t *testing.T) {
	withAlias := IdentityReplicationPolicy{SourceClusterAlias: "src"}
	tests := []struct {
		name     string
		policy   IdentityReplicationPolicy
		topic    string
		remote   string // FormatRemoteTopic("src", topic)
		source   string
		upstream string
		original string
	}{
		{name: "topic keeps its name", policy: withAlias, topic: "orders", remote: "orders", source: "src", upstream: "orders", original: "orders"},
		{name: "dotted topic keeps its name", policy: withAlias, topic: "B.orders", remote: "B.orders", source: "src", upstream: "B.orders", original: "B.orders"},
		{name: "no alias configured", topic: "orders", remote: "orders", source: "", upstream: "orders", original: "orders"},
		{name: "heartbeats are prefixed", policy: withAlias, topic: "heartbeats", remote: "src.heartbeats", source: "", upstream: "", original: "heartbeats"},
		{name: "remote heartbeats", policy: withAlias, topic: "B.heartbeats", remote: "src.B.heartbeats", source: "B", upstream: "heartbeats", original: "heartbeats"},
		{name: "anything ending in heartbeats", policy: withAlias, topic: "myheartbeats", remote: "src.myheartbeats", source: "", upstream: "", original: "myheartbeats"},
		{name: "custom separator for heartbeats", policy: IdentityReplicationPolicy{DefaultReplicationPolicy: DefaultReplicationPolicy{Separator: "_"}}, topic: "B_heartbeats", remote: "src_B_heartbeats", source: "B", upstream: "heartbeats", original: "heartbeats"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p ReplicationPolicy = tt.policy
			if got := p.FormatRemoteTopic("src", tt.topic); got != tt.remote {
				t.Errorf("FormatRemoteTopic = %q, want %q", got, tt.remote)
			}
			if got := p.TopicSource(tt.topic); got != tt.source {
				t.Errorf("TopicSource = %q, want %q", got, tt.source)
			}
			if got := p.UpstreamTopic(tt.topic); got != tt.upstream {
				t.Errorf("UpstreamTopic = %q, want %q", got, tt.upstream)
			}
			if got := p.OriginalTopic(tt.topic); got != tt.original {
				t.Errorf("OriginalTopic = %q, want %q", got, tt.original)
			}
		})
	}
}

func TestDownstreamTopic(t *testing.T) {
	tests := []struct {
		name     string
		policy   ReplicationPolicy
		source   string
		target   string
		upstream string
		want     string
	}{
		{name: "local topic gets remote name", policy: DefaultReplicationPolicy{}, source: "us-west", target: "us-east", upstream: "orders", want: "us-west.orders"},
		{name: "remote topic from a third cluster", policy: DefaultReplicationPolicy{}, source: "us-west", target: "us-east", upstream: "C.orders", want: "us-west.C.orders"},
		{name: "loop-back goes home", policy: DefaultReplicationPolicy{}, source: "B", target: "A", upstream: "A.orders", want: "orders"},
		// MM2 takes the original topic, not one hop back: a topic that went C->A->B and
		// comes home to A is named "orders", not "C.orders".
		{name: "loop-back takes the original name", policy: DefaultReplicationPolicy{}, source: "B", target: "A", upstream: "A.C.orders", want: "orders"},
		{name: "custom separator loop-back", policy: DefaultReplicationPolicy{Separator: "_"}, source: "B", target: "A", upstream: "A_orders", want: "orders"},
		{name: "custom separator", policy: DefaultReplicationPolicy{Separator: "_"}, source: "B", target: "A", upstream: "orders", want: "B_orders"},
		{name: "identity keeps names", policy: IdentityReplicationPolicy{SourceClusterAlias: "B"}, source: "B", target: "A", upstream: "orders", want: "orders"},
		{name: "identity prefixes heartbeats", policy: IdentityReplicationPolicy{SourceClusterAlias: "B"}, source: "B", target: "A", upstream: "heartbeats", want: "B.heartbeats"},
		{name: "identity heartbeats loop-back", policy: IdentityReplicationPolicy{SourceClusterAlias: "B"}, source: "B", target: "A", upstream: "A.heartbeats", want: "heartbeats"},
		{name: "empty target alias never matches", policy: DefaultReplicationPolicy{}, source: "B", target: "", upstream: "orders", want: "B.orders"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DownstreamTopic(tt.policy, tt.source, tt.target, tt.upstream); got != tt.want {
				t.Errorf("DownstreamTopic(%s->%s, %q) = %q, want %q", tt.source, tt.target, tt.upstream, got, tt.want)
			}
		})
	}
}

// FuzzDefaultReplicationPolicySplit checks that a remote topic always reassembles from its
// source, the separator and its upstream name, whatever the separator.
func FuzzDefaultReplicationPolicySplit(f *testing.F) {
	for _, seed := range [][2]string{{".", "a.b"}, {".", ".a"}, {".", "a."}, {"__", "a___b"}, {"-", "us-west-1"}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, separator, topic string) {
		p := DefaultReplicationPolicy{Separator: separator}
		upstream := p.UpstreamTopic(topic)
		if upstream == "" {
			if p.TopicSource(topic) != "" {
				t.Fatalf("%q: source without upstream", topic)
			}
			return
		}
		if got := p.FormatRemoteTopic(p.TopicSource(topic), upstream); got != topic {
			t.Fatalf("%q reassembles as %q", topic, got)
		}
		if strings.Contains(p.TopicSource(topic), p.separator()) {
			t.Fatalf("%q: source %q contains the separator", topic, p.TopicSource(topic))
		}
		_ = p.OriginalTopic(topic)
	})
}
