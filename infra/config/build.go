package config

import (
	"cmp"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/internal/javaregex"
	"github.com/checkpointd/checkpointd/messages"
)

// reader reads typed values, falling back to the key's default, and records a problem
// naming the key, the value and what is allowed for every value it cannot use.
type reader struct {
	s    settings
	skip map[string]bool // keys already reported
	rep  *Report
}

// value returns the value of key as given, if it is set and not already reported.
func (r *reader) value(key string) (string, bool) {
	v, ok := r.s[key]
	if !ok || r.skip[key] {
		return "", false
	}
	return v.value, true
}

// str returns the trimmed value of key, or its default.
func (r *reader) str(key string) string {
	if v, ok := r.value(key); ok {
		return strings.TrimSpace(v)
	}
	spec, _ := specOf(key)
	return spec.def
}

// invalid reports an unusable value; a value that is an unfilled placeholder is named
// as one.
func (r *reader) invalid(key, value, format string, args ...any) {
	r.skip[key] = true
	want := fmt.Sprintf(format, args...)
	if ph, ok := placeholderIn(value); ok {
		r.rep.problem(key, "", "placeholder %s was not filled in (%s)", ph, want)
		return
	}
	r.rep.problem(key, value, "%s", want)
}

func (r *reader) boolean(key string) bool {
	v := r.str(key)
	switch strings.ToLower(v) {
	case "true":
		return true
	case "false":
		return false
	}
	r.invalid(key, v, "want true or false")
	spec, _ := specOf(key)
	return spec.def == "true"
}

// integer reads a whole number from lo to hi; Java's int, long and short keys.
func (r *reader) integer(key string, lo, hi int64, what string) int64 {
	v := r.str(key)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		r.invalid(key, v, "want %s", what)
		spec, _ := specOf(key)
		n, _ = strconv.ParseInt(spec.def, 10, 64)
	}
	return n
}

// oneOf reads one of the allowed words, ignoring case, and returns it as listed.
func (r *reader) oneOf(key string, allowed ...string) string {
	v := r.str(key)
	for _, a := range allowed {
		if strings.EqualFold(v, a) {
			return a
		}
	}
	r.invalid(key, v, "want one of %s", strings.Join(allowed, ", "))
	spec, _ := specOf(key)
	return spec.def
}

// maxSeconds keeps a number of seconds within time.Duration.
const maxSeconds = int64(math.MaxInt64 / int64(time.Second))

func (r *reader) seconds(key string, lo int64, what string) time.Duration {
	return time.Duration(r.integer(key, lo, maxSeconds, what)) * time.Second
}

func (r *reader) millis(key string, lo int64, what string) time.Duration {
	return time.Duration(r.integer(key, lo, maxSeconds*1000, what)) * time.Millisecond
}

// build reads and validates every setting into a Config.
// Keys in bad were reported already (config provider references that could not be
// resolved); provided are the keys resolved from config providers; env is the
// process environment (for KRB5_CONFIG).
func build(s settings, rep *Report, bad map[string]bool, provided resolved, env []string) *Config {
	r := &reader{s: s, rep: rep, skip: checkFreeTextPlaceholders(s, kindOf, rep, bad, provided)}
	checkKeys(s, rep)
	c := &Config{Raw: s.values(), origins: map[string]string{}, provided: provided}
	for k, v := range s {
		c.origins[k] = v.origin
	}

	switch cls := r.str("connector.class"); cls {
	case checkpointConnectorClass, "MirrorCheckpointConnector", "MirrorCheckpoint":
	default:
		r.invalid("connector.class", cls, "checkpointd replaces %s only", checkpointConnectorClass)
	}
	c.Name = cmp.Or(r.str("name"), "checkpointd")
	if !r.boolean("enabled") {
		rep.problem("enabled", "false", "the connector is disabled, so there is nothing to run")
	}
	c.SourceAlias = r.alias("source.cluster.alias")
	c.TargetAlias = r.alias("target.cluster.alias")
	if c.SourceAlias != "" && c.SourceAlias == c.TargetAlias {
		rep.warn("target.cluster.alias", c.TargetAlias, "same as source.cluster.alias: remote topics and loop-back topics cannot be told apart")
	}

	r.filters(c)

	c.EmitCheckpoints = r.boolean("emit.checkpoints.enabled")
	if !c.EmitCheckpoints {
		rep.problem("emit.checkpoints.enabled", "false", "checkpointd's job is emitting checkpoints (MM2 3.9+ rejects this too)")
	}
	if !r.boolean("emit.offset-syncs.enabled") {
		rep.problem("emit.offset-syncs.enabled", "false", "checkpoints are translated from offset syncs, so they must be emitted (MM2 3.9+ rejects this too)")
	}
	c.EmitCheckpointsInterval = r.seconds("emit.checkpoints.interval.seconds", 0,
		"a whole number of seconds, 0 or more (0 writes every change at once; MM2's negative values, which turn checkpoints off, are not accepted)")
	c.SyncGroupOffsets = r.boolean("sync.group.offsets.enabled")
	syncSeconds := r.integer("sync.group.offsets.interval.seconds", math.MinInt64, maxSeconds, "a whole number of seconds")
	switch {
	case syncSeconds < 0:
		if c.SyncGroupOffsets {
			rep.warn("sync.group.offsets.interval.seconds", strconv.FormatInt(syncSeconds, 10), "negative: target group offsets are not synced, as in MM2")
		}
		c.SyncGroupOffsets = false
	case syncSeconds == 0:
		r.invalid("sync.group.offsets.interval.seconds", "0", "want a positive number of seconds, or a negative one to turn syncing off")
		syncSeconds = 60
	}
	c.SyncGroupOffsetsInterval = time.Duration(max(syncSeconds, 0)) * time.Second
	c.RefreshGroups = r.boolean("refresh.groups.enabled")
	refreshSeconds := r.integer("refresh.groups.interval.seconds", math.MinInt64, maxSeconds, "a whole number of seconds")
	if refreshSeconds < 0 {
		c.RefreshGroups = false
	}
	c.RefreshGroupsInterval = time.Duration(max(refreshSeconds, 0)) * time.Second

	if loc, ok := r.value("offset-syncs.topic.location"); ok && loc != "source" && loc != "target" {
		// MM2's ValidString is exact: the words, not cluster aliases, in lower case.
		r.invalid("offset-syncs.topic.location", loc, "want source or target (the words, not cluster aliases)")
	}
	c.OffsetSyncsTopicLocation = r.str("offset-syncs.topic.location")
	rf := r.integer("checkpoints.topic.replication.factor", -1, math.MaxInt16, "-1 (the broker's default) or a replication factor from 1 to 32767")
	if rf == 0 {
		r.invalid("checkpoints.topic.replication.factor", "0", "want -1 (the broker's default) or a replication factor from 1 to 32767")
		rf = 3
	}
	c.CheckpointsTopicReplicationFactor = int16(rf)
	c.Policy = r.policy(c.SourceAlias)
	if sep := c.separator(); sep != "" {
		for _, a := range []struct{ key, alias string }{{"source.cluster.alias", c.SourceAlias}, {"target.cluster.alias", c.TargetAlias}} {
			if strings.Contains(a.alias, sep) {
				rep.warn(a.key, a.alias, "contains the replication separator %q: topics named after it cannot be traced back to their cluster", sep)
			}
		}
	}
	c.TasksMax = int(r.integer("tasks.max", 1, math.MaxInt32, "a whole number from 1 (it has no effect: instances share the work through Kafka's group coordinator)"))
	c.ConsumerPollTimeout = r.millis("consumer.poll.timeout.ms", 0, "a whole number of milliseconds, 0 or more")
	c.AdminTimeout = r.millis("admin.timeout.ms", 1, "a positive whole number of milliseconds")
	for _, key := range []string{"group.filter.class", "topic.filter.class"} {
		spec, _ := specOf(key)
		if cls := r.str(key); cls != spec.def && cls != spec.def[strings.LastIndex(spec.def, ".")+1:] {
			list := strings.TrimSuffix(key, ".filter.class") + "s"
			r.invalid(key, cls, "checkpointd cannot load Java classes: use %s and %s.exclude, or swap the filter with the Go API in pipeline", list, list)
		}
	}

	c.CommitSource = r.oneOf("checkpointd.commit.source", "auto", "offsets-log", "admin-poll")
	c.AdminPollInterval = r.millis("checkpointd.admin.poll.interval.ms", 10, "a whole number of milliseconds, 10 or more")
	c.RefreshInterval = r.millis("checkpointd.checkpoints.refresh.interval.ms", 0, "a whole number of milliseconds, 0 or more")
	c.MetricsAddress = r.address("checkpointd.metrics.address")
	c.HealthAddress = c.MetricsAddress
	if _, set := r.s["checkpointd.health.address"]; set {
		c.HealthAddress = r.address("checkpointd.health.address")
	}
	c.StageFailureTimeout = r.millis("checkpointd.health.stage.failure.timeout.ms", 1, "a whole number of milliseconds, 1 or more")
	c.CommitLeaseSessionTimeout = r.millis("checkpointd.commit.lease.session.timeout.ms", 1000, "a whole number of milliseconds, 1000 or more")
	c.TargetCommitConnections = int(r.integer("checkpointd.target.commit.connections", 1, 1024, "a whole number from 1 to 1024"))
	c.FollowSourceRewinds = r.boolean("checkpointd.sync.follow.source.rewinds")
	c.Shadow = r.boolean("checkpointd.shadow.enabled")
	c.ExactIdle = r.millis("checkpointd.exact.idle.ms", 0, "a whole number of milliseconds, 0 (off) or more")
	c.ExactFetchMaxBytes = r.integer("checkpointd.exact.fetch.max.bytes", 1024, 1<<40, "a whole number of bytes, 1024 or more")
	c.LogFormat = r.oneOf("checkpointd.log.format", "text", "json")
	c.LogLevel = r.oneOf("checkpointd.log.level", "debug", "info", "warn", "error")
	c.InstanceID = r.str("checkpointd.instance.id")
	c.GroupID = r.str("checkpointd.group.id")
	if _, set := r.s["checkpointd.group.id"]; !set {
		c.GroupID = "checkpointd-" + c.SourceAlias + "-" + c.TargetAlias
	} else if c.GroupID == "" {
		r.invalid("checkpointd.group.id", "", "want a consumer group id")
	}
	c.MetricsGroupLabels = r.boolean("checkpointd.metrics.group.labels")
	c.KafkaVersion = r.kafkaVersion("checkpointd.kafka.version")
	c.Krb5Conf, c.krb5From = krb5Location(r.str(Krb5ConfKey), env)

	c.buildClients(r)
	return c
}

// kindOf says how a key's value is checked for placeholders.
func kindOf(key string) valueKind {
	if spec, ok := specOf(key); ok {
		return spec.kind
	}
	if _, name, ok := splitClientKey(key); ok {
		if ck, known := clientKeys[name]; known {
			return ck.kind
		}
	}
	return freeText
}

func (r *reader) alias(key string) string {
	v := r.str(key)
	if v == "" {
		if _, set := r.s[key]; set || key == "source.cluster.alias" {
			r.invalid(key, "", "required: the cluster alias used in topic names")
		}
		spec, _ := specOf(key)
		return spec.def
	}
	return v
}

// filters validates the Java regex lists, each under its own key.
func (r *reader) filters(c *Config) {
	list := func(key string) string {
		v := r.str(key)
		if _, err := javaregex.ParseList(v); err != nil {
			r.invalid(key, v, "%v", err)
			spec, _ := specOf(key)
			return spec.def
		}
		return v
	}
	c.Groups, c.GroupsExclude = list("groups"), list("groups.exclude")
	c.Topics, c.TopicsExclude = list("topics"), list("topics.exclude")
}

func (r *reader) policy(sourceAlias string) messages.ReplicationPolicy {
	var base messages.DefaultReplicationPolicy
	if sep, ok := r.value("replication.policy.separator"); ok {
		// Only an explicit separator counts, as in DefaultReplicationPolicy.configure.
		if sep == "" {
			r.invalid("replication.policy.separator", sep, "want a non-empty separator (an empty one would split topic names at every character)")
		}
		base.Separator = sep
		base.InternalTopicSeparatorDisabled = !r.boolean("replication.policy.internal.topic.separator.enabled")
	} else {
		r.boolean("replication.policy.internal.topic.separator.enabled") // still validated
	}
	switch cls := r.str("replication.policy.class"); cls {
	case defaultPolicyClass, "DefaultReplicationPolicy":
		return base
	case identityPolicyClass, "IdentityReplicationPolicy":
		return messages.IdentityReplicationPolicy{DefaultReplicationPolicy: base, SourceClusterAlias: sourceAlias}
	default:
		r.invalid("replication.policy.class", cls, "want %s or %s (checkpointd cannot load Java classes)", defaultPolicyClass, identityPolicyClass)
		return base
	}
}

func (c *Config) separator() string {
	switch p := c.Policy.(type) {
	case messages.DefaultReplicationPolicy:
		return cmp.Or(p.Separator, messages.DefaultSeparator)
	case messages.IdentityReplicationPolicy:
		return "" // remote topics keep their names
	}
	return ""
}

// address reads host:port for a server to listen on; empty turns the server off.
func (r *reader) address(key string) string {
	v := r.str(key)
	if v == "" {
		return ""
	}
	if _, port, err := net.SplitHostPort(v); err != nil || !isPort(port) {
		r.invalid(key, v, "want host:port to listen on (for example 127.0.0.1:9464 or :9464), or empty to turn it off")
		spec, _ := specOf(key)
		return spec.def
	}
	return v
}

func isPort(s string) bool {
	n, err := strconv.ParseUint(s, 10, 16)
	return err == nil && (n > 0 || s == "0")
}

func (r *reader) kafkaVersion(key string) sarama.KafkaVersion {
	v := r.str(key)
	kv, err := sarama.ParseKafkaVersion(v)
	switch {
	case err != nil:
		r.invalid(key, v, "want a Kafka version such as %s", defaultKafkaVersion)
	case !kv.IsAtLeast(sarama.V2_4_0_0) || !sarama.MaxVersion.IsAtLeast(kv):
		r.invalid(key, v, "want a Kafka version from 2.4.0 to %s", sarama.MaxVersion)
	default:
		return kv
	}
	return sarama.V4_1_0_0
}

// checkKeys warns about keys checkpointd ignores or does not know.
func checkKeys(s settings, rep *Report) {
	for _, k := range s.sortedKeys() {
		n := len(rep.Warnings)
		checkKey(k, rep)
		// A key read from the environment is named by its variable too.
		if origin := s[k].origin; len(rep.Warnings) > n && strings.HasPrefix(origin, "env ") {
			rep.Warnings[n].Message += " (from " + strings.TrimPrefix(origin, "env ") + ")"
		}
	}
}

// checkKey warns about one key checkpointd does not read, saying why.
func checkKey(k string, rep *Report) {
	if _, ok := specOf(k); ok || isProviderKey(k) {
		return // config.providers.* are checked as the providers are built
	}
	if why, ok := ignoredReason(k); ok {
		rep.warn(k, "", "ignored by checkpointd: %s", why)
		return
	}
	if repl, ok := removedKeys[k]; ok {
		rep.warn(k, "", "ignored: removed in Kafka 4.0; use %s", repl)
		return
	}
	if prefix, name, ok := splitClientKey(k); ok {
		checkClientKey(k, prefix, name, rep)
		return
	}
	if isConnectionKey(k) {
		rep.warn(k, "", "ignored: MM2's clients take it from source.cluster.%[1]s and target.cluster.%[1]s, not from the connector level", k)
		return
	}
	if hint := suggest(k); hint != "" {
		rep.warn(k, "", "unknown key; ignored (did you mean %s?)", hint)
		return
	}
	rep.warn(k, "", "unknown key; ignored")
}

func checkClientKey(key, prefix, name string, rep *Report) {
	kind := clientKindOfPrefix(prefix)
	ck, known := clientKeys[name]
	switch {
	case kind == "cluster" && !isConnectionKey(name):
		side := strings.TrimSuffix(prefix, "cluster.")
		rep.warn(key, "", "ignored: MM2 takes only bootstrap.servers, security.protocol, ssl.* and sasl.* from %scluster.*; set %sconsumer.%s (or producer., admin.) instead", side, side, name)
	case known && kind != "cluster" && !strings.Contains(ck.kinds, kind[:1]):
		rep.warn(key, "", "ignored: not a %s setting", kind)
	case known:
	case isUnsupportedClientKey(name):
		rep.warn(key, "", "ignored: checkpointd's Kafka client (sarama) has no such setting")
	default:
		rep.warn(key, "", "ignored: not a Kafka client setting checkpointd knows")
	}
}

// clientKindOfPrefix returns consumer, producer, admin or cluster.
func clientKindOfPrefix(prefix string) string {
	parts := strings.Split(strings.TrimSuffix(prefix, "."), ".")
	return parts[len(parts)-1]
}
