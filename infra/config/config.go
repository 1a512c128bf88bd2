package config

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/messages"
)

// Config is the validated configuration of one source->target flow.
type Config struct {
	Name        string // name: appears in client ids, as in MM2
	SourceAlias string
	TargetAlias string
	Source      ClusterConfig
	Target      ClusterConfig

	// The filter lists as configured (MM2's defaults when unset), each a valid list of
	// Java regexes; callers build their filters from them.
	Groups, GroupsExclude, Topics, TopicsExclude string

	EmitCheckpoints bool
	// EmitCheckpointsInterval is accepted for MM2 compatibility and has no effect:
	// checkpoints are written on every change (docs/configuration.md, Intervals).
	EmitCheckpointsInterval time.Duration
	SyncGroupOffsets        bool
	// SyncGroupOffsetsInterval is how long a target group that could not be written
	// waits for the next try; new checkpoints are committed at once.
	SyncGroupOffsetsInterval time.Duration
	// RefreshGroups and RefreshGroupsInterval are accepted for MM2 compatibility:
	// checkpointd learns of groups from their commits (or lists them on every admin poll).
	RefreshGroups         bool
	RefreshGroupsInterval time.Duration

	OffsetSyncsTopicLocation          string // "source" or "target"
	CheckpointsTopicReplicationFactor int16  // -1: the broker's default
	Policy                            messages.ReplicationPolicy
	TasksMax                          int // accepted; sharding is by Kafka's group coordinator
	ConsumerPollTimeout               time.Duration
	AdminTimeout                      time.Duration // bounds start-up admin work and shutdown

	// checkpointd's own settings.
	CommitSource      string // auto | offsets-log | admin-poll
	AdminPollInterval time.Duration
	// RefreshInterval paces sync-driven re-decisions of groups that did
	// not commit since (handlers.CheckpointerConfig.RefreshInterval).
	RefreshInterval    time.Duration
	MetricsAddress     string // "" disables the metrics server
	HealthAddress      string // defaults to MetricsAddress: one server for both
	LogFormat          string // text | json
	LogLevel           string // debug | info | warn | error
	InstanceID         string
	GroupID            string // consumer group the instances share
	MetricsGroupLabels bool
	KafkaVersion       sarama.KafkaVersion
	// Krb5Conf is the krb5.conf of GSSAPI clients (checkpointd.kerberos.krb5.conf,
	// else $KRB5_CONFIG, else /etc/krb5.conf); krb5From names where it came from.
	Krb5Conf string
	krb5From string

	// StageFailureTimeout is how long a stage may keep failing before the
	// instance is not ready (checkpointd.health.stage.failure.timeout.ms).
	StageFailureTimeout time.Duration
	// CommitLeaseSessionTimeout is the session timeout of the group that
	// shares the shards of source groups (over __consumer_offsets unless
	// the source consumer sets session.timeout.ms; over the shard topic in
	// admin-poll mode): how long a dead instance's groups wait. The key's
	// name is kept from when one instance held a commit lease.
	CommitLeaseSessionTimeout time.Duration
	// TargetCommitConnections is how many connections to each target
	// coordinator broker the commit stage's OffsetCommits use at most
	// (checkpointd.target.commit.connections); twice as many commits are
	// in flight.
	TargetCommitConnections int
	// FollowSourceRewinds moves an idle target group back when its source
	// group went back and the target's offset is still the one checkpointd
	// committed (checkpointd.sync.follow.source.rewinds); it keeps a commit
	// log topic on the target for that.
	FollowSourceRewinds bool
	// Shadow runs beside MM2's checkpoint connector, reading and deciding
	// as in production but writing nothing to the target, and compares
	// its decisions with MM2's checkpoints (checkpointd.shadow.enabled).
	Shadow bool
	// ExactFetchMaxBytes is how many record bytes (keys, values, headers)
	// one exact translation of a (group, partition) may read from the two
	// clusters together before it falls back to MM2's rule
	// (checkpointd.exact.fetch.max.bytes).
	ExactFetchMaxBytes int64
	// ExactIdle is how long a group's commit on a partition must stay put
	// before the service looks for its exact translation in the records
	// (checkpointd.exact.idle.ms); 0 turns that off.
	ExactIdle time.Duration

	// Raw holds every property after overrides (and, for an MM2 driver file, after
	// mapping it onto connector keys), as given. It includes secrets: print Effective.
	Raw map[string]string

	origins  map[string]string   // where each Raw key came from
	provided map[string][]string // config provider references each Raw key was resolved from
}

// ClusterConfig is one cluster's connection.
type ClusterConfig struct {
	BootstrapServers []string
	// Consumer, Producer and Admin are the Kafka client properties of each client kind
	// on this cluster, merged with MM2's precedence (see SaramaConfig). They include
	// secrets.
	Consumer, Producer, Admin map[string]string
}

// EnvPrefix starts the environment variables that override properties: the rest of the
// name is the key upper-cased with "." and "-" turned into "_", so
// CHECKPOINTD_OFFSET_SYNCS_TOPIC_LOCATION=target sets offset-syncs.topic.location.
const EnvPrefix = "CHECKPOINTD_"

// ErrNoConfig is returned by commands that need a config file and got none.
var ErrNoConfig = errors.New("no configuration given")

// Load reads the file at path (YAML, JSON, Java .properties or an MM2 driver file),
// applies the environment (entries "KEY=VALUE", as os.Environ returns them) and then
// sets ("key=value", from --set), and validates the result. Precedence: file <
// environment < --set. An MM2 driver file must enable exactly one flow; LoadFlows
// takes every flow.
//
// The report lists every warning and problem found. When there are problems, Load
// returns an *InvalidError along with a Config holding defaults in place of the invalid
// values, so that the effective configuration can still be shown. A file that cannot be
// read or parsed gives a nil Config.
func Load(path string, sets []string, env []string) (*Config, *Report, error) {
	props, err := readFile(path)
	if err != nil {
		return nil, &Report{}, err
	}
	return one(loadFlows(props, "file", sets, env))
}

// FromProperties is Load for properties already in memory.
func FromProperties(props map[string]string, sets []string, env []string) (*Config, *Report, error) {
	return one(loadFlows(props, "properties", sets, env))
}

// LoadFlows is Load for every flow the file holds: one for a connector config,
// one per enabled flow (sorted by name, A->B) for an MM2 driver file. Issues
// name the keys of the file (A.bootstrap.servers, A->B.groups), each once
// however many flows it concerns.
func LoadFlows(path string, sets []string, env []string) ([]*Config, *Report, error) {
	props, err := readFile(path)
	if err != nil {
		return nil, &Report{}, err
	}
	return loadFlows(props, "file", sets, env)
}

// FlowsFromProperties is LoadFlows for properties already in memory.
func FlowsFromProperties(props map[string]string, sets []string, env []string) ([]*Config, *Report, error) {
	return loadFlows(props, "properties", sets, env)
}

// one is the single flow of what loadFlows returns.
func one(cfgs []*Config, rep *Report, err error) (*Config, *Report, error) {
	switch {
	case len(cfgs) == 0:
		return nil, rep, err
	case len(cfgs) > 1:
		names := make([]string, len(cfgs))
		for i, c := range cfgs {
			names[i] = c.String()
		}
		rep.Problems = append(rep.Problems, Issue{Key: "clusters", Message: fmt.Sprintf(
			"this command takes one flow, and %d are enabled (%s); pick one by turning the others off (--set %s.enabled=false); run and validate take them all",
			len(cfgs), strings.Join(names, ", "), names[len(names)-1])})
		return nil, rep, rep.Err()
	}
	return cfgs[0], rep, err
}

func loadFlows(props map[string]string, origin string, sets, env []string) ([]*Config, *Report, error) {
	rep := &Report{}
	s := newSettings(props, origin)
	before, after := overrides(s, env, sets, rep)
	s.apply(before)
	if !isDriverStyle(s) {
		s.apply(after)
		res, bad := resolveProviders(s, env, rep)
		cfg := build(s, rep, bad, res, env)
		return []*Config{cfg}, rep, rep.Err()
	}
	flows, err := fromDriverStyle(s, rep)
	if err != nil {
		rep.Problems = append(rep.Problems, Issue{Message: err.Error()})
		return nil, rep, rep.Err()
	}
	cfgs := make([]*Config, len(flows))
	reps := make([]*Report, len(flows))
	for i, f := range flows {
		f.s.apply(after)
		for _, o := range after {
			f.fileKeys[o.key] = o.key // set as a connector key: named as given
		}
		reps[i] = &Report{}
		res, bad := resolveProviders(f.s, env, reps[i])
		cfgs[i] = build(f.s, reps[i], bad, res, env)
	}
	mergeFlows(rep, reps, flows)
	checkFlowsTogether(cfgs, flows, rep)
	return cfgs, rep, rep.Err()
}

// String names the flow, for logs.
func (c *Config) String() string { return c.SourceAlias + "->" + c.TargetAlias }
