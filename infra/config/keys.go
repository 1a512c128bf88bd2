package config

import (
	"slices"
	"strings"
)

// valueKind says how a key's value is read; it also decides whether a value that looks
// like an unfilled placeholder is an error (typed values) or only suspicious (free text).
type valueKind int

const (
	freeText  valueKind = iota // names, aliases, regex lists, separators
	typed                      // numbers, booleans, enumerations, addresses
	className                  // a Java class name
)

// keySpec describes one connector-level key checkpointd reads.
type keySpec struct {
	name string
	def  string // the default as a property value; "" for none
	kind valueKind
}

const (
	checkpointConnectorClass = "org.apache.kafka.connect.mirror.MirrorCheckpointConnector"
	defaultPolicyClass       = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"
	identityPolicyClass      = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
	defaultMetricsAddress    = "127.0.0.1:9464"
	defaultKafkaVersion      = "4.1.0"
)

// connectorKeys are the keys of MirrorCheckpointConnector (MirrorCheckpointConfig) and checkpointd's
// own, with MM2's defaults. Defaults that depend on other keys (checkpointd.group.id,
// checkpointd.health.address) are filled in by build.
var connectorKeys = []keySpec{
	{"connector.class", checkpointConnectorClass, className},
	{"name", "checkpointd", freeText},
	{"enabled", "true", typed},
	{"source.cluster.alias", "", freeText},
	{"target.cluster.alias", "target", freeText},
	{"source.cluster.bootstrap.servers", "", typed},
	{"target.cluster.bootstrap.servers", "", typed},
	// MM2's filter lists, Java regexes (Kafka 4.x; 3.x excluded topics with
	// `.*[\-\.]internal, .*\.replica, __.*`).
	{"groups", ".*", freeText},
	{"groups.exclude", "console-consumer-.*, connect-.*, __.*", freeText},
	{"topics", ".*", freeText},
	{"topics.exclude", `mm2.*\.internal, .*\.replica, __.*`, freeText},
	{"emit.checkpoints.enabled", "true", typed},
	{"emit.checkpoints.interval.seconds", "60", typed},
	{"sync.group.offsets.enabled", "false", typed},
	{"sync.group.offsets.interval.seconds", "60", typed},
	{"refresh.groups.enabled", "true", typed},
	{"refresh.groups.interval.seconds", "600", typed},
	{"offset-syncs.topic.location", "source", typed},
	{"checkpoints.topic.replication.factor", "3", typed},
	{"replication.policy.class", defaultPolicyClass, className},
	{"replication.policy.separator", ".", freeText},
	{"replication.policy.internal.topic.separator.enabled", "true", typed},
	{"tasks.max", "1", typed},
	{"consumer.poll.timeout.ms", "1000", typed},
	{"admin.timeout.ms", "60000", typed},
	{"emit.offset-syncs.enabled", "true", typed},
	{"group.filter.class", "org.apache.kafka.connect.mirror.DefaultGroupFilter", className},
	{"topic.filter.class", "org.apache.kafka.connect.mirror.DefaultTopicFilter", className},

	{"checkpointd.commit.source", "auto", typed},
	{"checkpointd.admin.poll.interval.ms", "1000", typed},
	{"checkpointd.checkpoints.refresh.interval.ms", "1000", typed},
	{"checkpointd.metrics.address", defaultMetricsAddress, typed},
	{"checkpointd.health.address", "", typed},
	{"checkpointd.health.stage.failure.timeout.ms", "30000", typed},
	{"checkpointd.commit.lease.session.timeout.ms", "6000", typed},
	{"checkpointd.target.commit.connections", "32", typed},
	{"checkpointd.sync.follow.source.rewinds", "true", typed},
	{"checkpointd.shadow.enabled", "false", typed},
	{"checkpointd.exact.fetch.max.bytes", "16777216", typed},
	{"checkpointd.exact.idle.ms", "0", typed},
	{"checkpointd.log.format", "text", typed},
	{"checkpointd.log.level", "info", typed},
	{"checkpointd.instance.id", "", freeText},
	{"checkpointd.group.id", "", freeText},
	{"checkpointd.metrics.group.labels", "true", typed},
	{"checkpointd.kafka.version", defaultKafkaVersion, typed},
	{Krb5ConfKey, "", freeText},
}

func specOf(key string) (keySpec, bool) {
	i := slices.IndexFunc(connectorKeys, func(s keySpec) bool { return s.name == key })
	if i < 0 {
		return keySpec{}, false
	}
	return connectorKeys[i], true
}

// ignoredKeys are keys of MM2's other connectors, its driver and Kafka Connect that a
// shared configuration carries; checkpointd accepts them and says it ignores them.
var ignoredKeys = map[string]string{
	"tasks.max.enforce":                     "a Connect setting",
	"key.converter":                         "checkpointd writes MM2's bytes as they are",
	"value.converter":                       "checkpointd writes MM2's bytes as they are",
	"header.converter":                      "checkpoint records carry no headers",
	"emit.heartbeats.enabled":               "MirrorHeartbeatConnector's",
	"emit.heartbeats.interval.seconds":      "MirrorHeartbeatConnector's",
	"heartbeats.topic.replication.factor":   "MirrorHeartbeatConnector's",
	"offset-syncs.topic.replication.factor": "MirrorSourceConnector's",
	"offset.lag.max":                        "MirrorSourceConnector's",
	"sync.topic.configs.enabled":            "MirrorSourceConnector's",
	"sync.topic.configs.interval.seconds":   "MirrorSourceConnector's",
	"sync.topic.acls.enabled":               "MirrorSourceConnector's",
	"sync.topic.acls.interval.seconds":      "MirrorSourceConnector's",
	"refresh.topics.enabled":                "MirrorSourceConnector's",
	"refresh.topics.interval.seconds":       "MirrorSourceConnector's",
	"replication.factor":                    "MirrorSourceConnector's",
	"config.properties.exclude":             "MirrorSourceConnector's",
	"config.property.filter.class":          "MirrorSourceConnector's",
	"use.incremental.alter.configs":         "MirrorSourceConnector's",
	"forwarding.admin.class":                "checkpointd cannot load Java classes; its admin calls go to the cluster directly",
	"metric.reporters":                      "checkpointd exports Prometheus metrics",
	"offset.storage.replication.factor":     "an MM2 driver (Connect worker) setting",
	"config.storage.replication.factor":     "an MM2 driver (Connect worker) setting",
	"status.storage.replication.factor":     "an MM2 driver (Connect worker) setting",
	"offset.flush.interval.ms":              "an MM2 driver (Connect worker) setting",
	"dedicated.mode.enable.internal.rest":   "an MM2 driver setting",
	"exactly.once.source.support":           "a Connect worker setting",
	"exactly.once.support":                  "a Connect setting",
	"transaction.boundary":                  "a Connect setting",
	"task.assigned.groups":                  "set by MM2 for its tasks",
	"task.index":                            "set by MM2 for its tasks",
	"config.action.reload":                  "a Connect setting",
}

// ignoredPrefixes are families of keys accepted and ignored, with the reason.
var ignoredPrefixes = []struct{ prefix, why string }{
	{"transforms", "checkpointd applies no single message transforms"},
	{"predicates", "checkpointd applies no single message transforms"},
	{"errors.", "a Connect error-handling setting"},
	{"emit.heartbeats.", "MirrorHeartbeatConnector's"},
	{"sync.topic.", "MirrorSourceConnector's"},
	{"offset.storage.", "an MM2 driver (Connect worker) setting"},
	{"config.storage.", "an MM2 driver (Connect worker) setting"},
	{"status.storage.", "an MM2 driver (Connect worker) setting"},
}

// removedKeys were aliases MM2 dropped in Kafka 4.0; naming the replacement helps more
// than calling them unknown.
var removedKeys = map[string]string{
	"groups.blacklist": "groups.exclude",
	"topics.blacklist": "topics.exclude",
	"topics.whitelist": "topics",
	"groups.whitelist": "groups",
}

func ignoredReason(key string) (string, bool) {
	if why, ok := ignoredKeys[key]; ok {
		return why, true
	}
	for _, p := range ignoredPrefixes {
		if strings.HasPrefix(key, p.prefix) {
			return p.why, true
		}
	}
	return "", false
}

// isSecret reports keys whose values are never printed, known keys or not (a misspelled
// source.cluster.sasl.jaas.confg holds a password all the same): names containing
// password, passwd, secret, token, jaas, credential or user.info (basic.auth.user.info
// is user:password), words that are near misspellings of password, secret or jaas,
// and names with a word ending in "key" (ssl.keystore.key,
// api.key, apikey, private-key), except Kafka's key.converter, key.serializer and
// key.deserializer.
func isSecret(key string) bool {
	k := strings.ToLower(key)
	if strings.HasSuffix(k, "sasl.oauthbearer.token.endpoint.url") {
		return false // "token" names what the URL serves; Kafka does not hide it either
	}
	for _, w := range secretWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	words := strings.FieldsFunc(k, func(r rune) bool { return r == '.' || r == '-' || r == '_' })
	for i, w := range words {
		if nearSecretWord(w) {
			return true
		}
		if !strings.HasSuffix(w, "key") && !strings.HasSuffix(w, "keys") {
			continue
		}
		if i+1 < len(words) && notSecretAfterKey[words[i+1]] {
			continue
		}
		return true
	}
	return false
}

// nearSecretWord catches misspellings of the secret words (pasword, secert, jass).
func nearSecretWord(w string) bool {
	for _, near := range []struct {
		word string
		dist int
	}{{"password", 2}, {"secret", 1}, {"jaas", 1}} {
		if len(w) >= len(near.word)-near.dist && editDistance(w, near.word) <= near.dist {
			return true
		}
	}
	return false
}

var secretWords = []string{"password", "passwd", "secret", "token", "jaas", "credential", "user.info", "userinfo"}

// notSecretAfterKey are the words after "key" in Kafka keys that name no secret.
var notSecretAfterKey = map[string]bool{"converter": true, "serializer": true, "deserializer": true}

// Redacted is printed instead of a secret's value.
const Redacted = "[redacted]"

// suggest returns the known key closest to an unknown one, for typos, or "".
func suggest(key string) string {
	best, bestDist := "", 3
	for _, s := range connectorKeys {
		if d := editDistance(key, s.name); d < bestDist {
			best, bestDist = s.name, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
