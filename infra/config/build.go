package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/handlers/filter"
	"github.com/checkpointd/checkpointd/messages"
)

const checkpointConnectorClass = "org.apache.kafka.connect.mirror.MirrorCheckpointConnector"

// reader reads typed values from the properties, recording problems.
type reader struct {
	props map[string]string
	skip  map[string]bool // keys already reported (placeholders)
	rep   *Report
}

func (r *reader) str(key, def string) string {
	v, ok := r.props[key]
	if !ok || r.skip[key] {
		return def
	}
	return strings.TrimSpace(v)
}

func (r *reader) boolean(key string, def bool) bool {
	v, ok := r.props[key]
	if !ok || r.skip[key] {
		return def
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true
	case "false":
		return false
	}
	r.rep.problem("%s=%q: want true or false", key, v)
	return def
}

func (r *reader) integer(key string, def, lo, hi int64) int64 {
	v, ok := r.props[key]
	if !ok || r.skip[key] {
		return def
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < lo || n > hi {
		r.rep.problem("%s=%q: want a whole number from %d to %d", key, v, lo, hi)
		return def
	}
	return n
}

func (r *reader) oneOf(key, def string, allowed ...string) string {
	v := r.str(key, def)
	for _, a := range allowed {
		if strings.EqualFold(v, a) {
			return a
		}
	}
	r.rep.problem("%s=%q: want one of %s", key, v, strings.Join(allowed, ", "))
	return def
}

const maxSeconds = int64(365 * 24 * 3600)

func build(props map[string]string, rep *Report) *Config {
	r := &reader{props: props, skip: checkPlaceholders(props, rep), rep: rep}
	checkKeys(props, rep)
	c := &Config{Raw: props}

	if cls := r.str("connector.class", checkpointConnectorClass); cls != checkpointConnectorClass && cls != "MirrorCheckpointConnector" {
		rep.problem("connector.class=%q: checkpointd replaces %s only", cls, checkpointConnectorClass)
	}
	if !r.boolean("enabled", true) {
		rep.problem("enabled=false: the connector is disabled, so there is nothing to run")
	}
	c.SourceAlias = r.str("source.cluster.alias", "")
	if c.SourceAlias == "" && !r.skip["source.cluster.alias"] {
		rep.problem("source.cluster.alias: required (no default, as in MM2)")
	}
	c.TargetAlias = r.str("target.cluster.alias", "target")
	if c.TargetAlias == "" {
		rep.problem("target.cluster.alias: must not be empty")
	}
	c.Source.BootstrapServers = r.servers("source")
	c.Target.BootstrapServers = r.servers("target")

	c.Groups = r.str("groups", filter.DefaultGroups)
	c.GroupsExclude = r.str("groups.exclude", filter.DefaultGroupsExclude)
	c.Topics = r.str("topics", filter.DefaultTopics)
	c.TopicsExclude = r.str("topics.exclude", filter.DefaultTopicsExclude)
	for _, pair := range [][2]string{{"groups", "groups.exclude"}, {"topics", "topics.exclude"}} {
		if _, err := filter.New(r.str(pair[0], ".*"), r.str(pair[1], "")); err != nil {
			rep.problem("%s / %s: %v", pair[0], pair[1], err)
		}
	}

	c.EmitCheckpoints = r.boolean("emit.checkpoints.enabled", true)
	if !c.EmitCheckpoints {
		rep.problem("emit.checkpoints.enabled=false: checkpointd's job is emitting checkpoints (MM2 3.9+ rejects this too)")
	}
	c.EmitCheckpointsInterval = time.Duration(r.integer("emit.checkpoints.interval.seconds", 60, -1, maxSeconds)) * time.Second
	if c.EmitCheckpointsInterval < 0 {
		rep.problem("emit.checkpoints.interval.seconds=%s: a negative interval disables checkpoints in MM2; remove the key instead", props["emit.checkpoints.interval.seconds"])
	}
	c.SyncGroupOffsets = r.boolean("sync.group.offsets.enabled", false)
	c.SyncGroupOffsetsInterval = time.Duration(r.integer("sync.group.offsets.interval.seconds", 60, -1, maxSeconds)) * time.Second
	if c.SyncGroupOffsetsInterval < 0 {
		c.SyncGroupOffsets = false
		rep.warn("sync.group.offsets.interval.seconds is negative: target group offsets are not synced (as in MM2)")
	} else if c.SyncGroupOffsetsInterval == 0 {
		rep.problem("sync.group.offsets.interval.seconds=0: want a positive number of seconds")
	}
	if !r.boolean("refresh.groups.enabled", true) {
		rep.warn("refresh.groups.enabled=false: checkpointd sees groups from their commits, so this changes nothing")
	}
	c.RefreshGroupsInterval = time.Duration(r.integer("refresh.groups.interval.seconds", 600, -1, maxSeconds)) * time.Second

	c.OffsetSyncsTopicLocation = r.oneOf("offset-syncs.topic.location", "source", "source", "target")
	c.CheckpointsTopicReplicationFactor = int16(r.integer("checkpoints.topic.replication.factor", 3, -1, 32767))
	if c.CheckpointsTopicReplicationFactor == 0 {
		rep.problem("checkpoints.topic.replication.factor=0: want a positive number, or -1 for the broker default")
	}
	c.Policy = r.policy(c.SourceAlias)
	c.TasksMax = int(r.integer("tasks.max", 1, 1, 1<<20))
	c.ConsumerPollTimeout = time.Duration(r.integer("consumer.poll.timeout.ms", 1000, 1, maxSeconds*1000)) * time.Millisecond
	c.AdminTimeout = time.Duration(r.integer("admin.timeout.ms", 60000, 1, maxSeconds*1000)) * time.Millisecond

	c.CommitSource = r.oneOf("checkpointd.commit.source", "auto", "auto", "offsets-log", "admin-poll")
	c.AdminPollInterval = time.Duration(r.integer("checkpointd.admin.poll.interval.ms", 1000, 10, maxSeconds*1000)) * time.Millisecond
	c.MetricsAddress = r.str("checkpointd.metrics.address", "127.0.0.1:9464")
	c.LogFormat = r.oneOf("checkpointd.log.format", "text", "text", "json")
	c.LogLevel = r.oneOf("checkpointd.log.level", "info", "debug", "info", "warn", "error")
	c.InstanceID = r.str("checkpointd.instance.id", "")
	c.GroupID = r.str("checkpointd.group.id", "checkpointd-"+c.SourceAlias+"-"+c.TargetAlias)
	c.MetricsGroupLabels = r.boolean("checkpointd.metrics.group.labels", true)
	c.KafkaVersion = sarama.V4_1_0_0
	if v := r.str("checkpointd.kafka.version", ""); v != "" {
		kv, err := sarama.ParseKafkaVersion(v)
		if err != nil {
			rep.problem("checkpointd.kafka.version=%q: %v", v, err)
		} else {
			c.KafkaVersion = kv
		}
	}
	// Client settings are checked by building every client config once.
	for _, role := range allRoles {
		if _, err := c.SaramaConfig(role); err != nil {
			rep.problem("%v", err)
			break
		}
	}
	return c
}

func (r *reader) servers(side string) []string {
	key := side + ".cluster.bootstrap.servers"
	v := r.str(key, "")
	if v == "" {
		if !r.skip[key] {
			r.rep.problem("%s: required", key)
		}
		return nil
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if _, port, ok := strings.Cut(s, ":"); !ok || port == "" {
			r.rep.problem("%s=%q: %q is not host:port", key, v, s)
			continue
		}
		out = append(out, s)
	}
	return out
}

func (r *reader) policy(sourceAlias string) messages.ReplicationPolicy {
	sep := r.str("replication.policy.separator", "")
	internal := r.boolean("replication.policy.internal.topic.separator.enabled", true)
	switch cls := r.str("replication.policy.class", "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"); cls {
	case "org.apache.kafka.connect.mirror.DefaultReplicationPolicy", "DefaultReplicationPolicy":
		return messages.DefaultReplicationPolicy{Separator: sep, InternalTopicSeparatorDisabled: !internal}
	case "org.apache.kafka.connect.mirror.IdentityReplicationPolicy", "IdentityReplicationPolicy":
		return messages.IdentityReplicationPolicy{SourceClusterAlias: sourceAlias,
			DefaultReplicationPolicy: messages.DefaultReplicationPolicy{Separator: sep, InternalTopicSeparatorDisabled: !internal}}
	default:
		r.rep.problem("replication.policy.class=%q: want org.apache.kafka.connect.mirror.DefaultReplicationPolicy or IdentityReplicationPolicy", cls)
		return messages.DefaultReplicationPolicy{}
	}
}

// checkKeys warns about keys checkpointd ignores or does not know.
func checkKeys(props map[string]string, rep *Report) {
	for _, k := range sortedKeys(props) {
		if use, ok := knownKeys[k]; ok {
			if use == ignored {
				rep.warn("%s: ignored (an MM2 setting that means nothing to checkpointd)", k)
			}
			continue
		}
		if p := clientPrefixOf(k); p != "" {
			if _, ok := clientKeys[strings.TrimPrefix(k, p)]; !ok {
				rep.warn("%s: Kafka client setting not supported by checkpointd; ignored", k)
			}
			continue
		}
		rep.warn("%s: unknown key; ignored", k)
	}
}

// String summarises the flow for logs.
func (c *Config) String() string {
	return fmt.Sprintf("%s->%s", c.SourceAlias, c.TargetAlias)
}
