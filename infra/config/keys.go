package config

import (
	"strings"
)

// keyUse says what checkpointd does with a known key.
type keyUse int

const (
	used    keyUse = iota // read and validated
	ignored               // MM2 key that means nothing here; warned about
)

// knownKeys are the connector-level keys checkpointd understands. Client
// settings under the source./target. prefixes are checked separately.
var knownKeys = map[string]keyUse{
	"connector.class":                      used,
	"name":                                 used,
	"enabled":                              used,
	"source.cluster.alias":                 used,
	"target.cluster.alias":                 used,
	"groups":                               used,
	"groups.exclude":                       used,
	"topics":                               used,
	"topics.exclude":                       used,
	"emit.checkpoints.enabled":             used,
	"emit.checkpoints.interval.seconds":    used,
	"sync.group.offsets.enabled":           used,
	"sync.group.offsets.interval.seconds":  used,
	"refresh.groups.enabled":               used,
	"refresh.groups.interval.seconds":      used,
	"offset-syncs.topic.location":          used,
	"checkpoints.topic.replication.factor": used,
	"replication.policy.class":             used,
	"replication.policy.separator":         used,
	"replication.policy.internal.topic.separator.enabled": used,
	"tasks.max":                used,
	"consumer.poll.timeout.ms": used,
	"admin.timeout.ms":         used,

	"checkpointd.commit.source":          used,
	"checkpointd.admin.poll.interval.ms": used,
	"checkpointd.metrics.address":        used,
	"checkpointd.health.address":         used,
	"checkpointd.log.format":             used,
	"checkpointd.log.level":              used,
	"checkpointd.instance.id":            used,
	"checkpointd.group.id":               used,
	"checkpointd.metrics.group.labels":   used,
	"checkpointd.kafka.version":          used,

	// Keys of MM2's other connectors and of Connect: accepted, ignored.
	"tasks.max.enforce":                     ignored,
	"key.converter":                         ignored,
	"value.converter":                       ignored,
	"header.converter":                      ignored,
	"emit.heartbeats.enabled":               ignored,
	"emit.heartbeats.interval.seconds":      ignored,
	"heartbeats.topic.replication.factor":   ignored,
	"offset-syncs.topic.replication.factor": ignored,
	"emit.offset-syncs.enabled":             ignored,
	"offset.lag.max":                        ignored,
	"sync.topic.configs.enabled":            ignored,
	"sync.topic.configs.interval.seconds":   ignored,
	"sync.topic.acls.enabled":               ignored,
	"sync.topic.acls.interval.seconds":      ignored,
	"refresh.topics.enabled":                ignored,
	"refresh.topics.interval.seconds":       ignored,
	"replication.factor":                    ignored,
	"config.properties.exclude":             ignored,
	"group.filter.class":                    ignored,
	"topic.filter.class":                    ignored,
	"config.property.filter.class":          ignored,
	"forwarding.admin.class":                ignored,
	"metric.reporters":                      ignored,
	"offset.storage.replication.factor":     ignored,
	"config.storage.replication.factor":     ignored,
	"status.storage.replication.factor":     ignored,
	"dedicated.mode.enable.internal.rest":   ignored,
	"exactly.once.source.support":           ignored,
	"use.incremental.alter.configs":         ignored,
}

// clientPrefixes are where Kafka client settings live, per MM2 (spec §1.2).
var clientPrefixes = []string{
	"source.cluster.", "target.cluster.",
	"source.consumer.", "target.consumer.",
	"source.admin.", "target.admin.",
	"source.producer.", "target.producer.",
	"consumer.", "admin.", "producer.",
}

func clientPrefixOf(k string) string {
	for _, p := range clientPrefixes {
		if strings.HasPrefix(k, p) {
			return p
		}
	}
	return ""
}

// isSecret reports keys whose values must never be printed or logged.
func isSecret(k string) bool {
	k = strings.ToLower(k)
	return strings.Contains(k, "password") || strings.Contains(k, "secret") || strings.Contains(k, "token") ||
		strings.HasSuffix(k, "sasl.jaas.config") || strings.HasSuffix(k, "ssl.keystore.key") ||
		strings.HasSuffix(k, ".key") && strings.Contains(k, "ssl")
}
