// Package config loads checkpointd's configuration: MirrorMaker 2's property
// names as they are (YAML, JSON or .properties, or an MM2 driver file with one
// flow), plus checkpointd's own keys under "checkpointd.", with environment
// and --set overrides. Every problem is reported at once, naming the key, the
// value and what is allowed.
package config

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/messages"
)

// Config is the validated configuration of one source->target flow.
type Config struct {
	SourceAlias string
	TargetAlias string
	Source      ClusterConfig
	Target      ClusterConfig

	Groups, GroupsExclude, Topics, TopicsExclude string

	EmitCheckpoints          bool
	EmitCheckpointsInterval  time.Duration
	SyncGroupOffsets         bool
	SyncGroupOffsetsInterval time.Duration
	RefreshGroupsInterval    time.Duration

	OffsetSyncsTopicLocation          string // "source" or "target"
	CheckpointsTopicReplicationFactor int16
	Policy                            messages.ReplicationPolicy
	TasksMax                          int
	ConsumerPollTimeout               time.Duration
	AdminTimeout                      time.Duration

	// checkpointd's own settings.
	CommitSource       string // auto | offsets-log | admin-poll
	AdminPollInterval  time.Duration
	MetricsAddress     string
	LogFormat          string // text | json
	LogLevel           string
	InstanceID         string
	GroupID            string // consumer group the instances share
	MetricsGroupLabels bool
	KafkaVersion       sarama.KafkaVersion

	// Raw holds every property after overrides, as given.
	Raw map[string]string
}

// ClusterConfig is one cluster's connection.
type ClusterConfig struct {
	BootstrapServers []string
}

// Report lists what Load found: warnings never stop start-up, problems do.
type Report struct {
	Warnings []string
	Problems []string
}

// Err joins the problems into one error, or nil.
func (r *Report) Err() error {
	if len(r.Problems) == 0 {
		return nil
	}
	return fmt.Errorf("invalid configuration:\n  %s", strings.Join(r.Problems, "\n  "))
}

func (r *Report) problem(format string, args ...any) {
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}

func (r *Report) warn(format string, args ...any) {
	r.Warnings = append(r.Warnings, fmt.Sprintf(format, args...))
}

// EnvPrefix starts the environment variables that override properties:
// CHECKPOINTD_SYNC_GROUP_OFFSETS_ENABLED=true sets sync.group.offsets.enabled.
const EnvPrefix = "CHECKPOINTD_"

// Load reads path, applies the environment (entries "KEY=VALUE", e.g.
// os.Environ()) and then sets ("key=value"), and validates the result.
// Precedence: file < environment < --set. It returns the report even when it
// returns an error, so every problem can be shown.
func Load(path string, sets []string, env []string) (*Config, *Report, error) {
	props, err := readFile(path)
	if err != nil {
		return nil, &Report{}, err
	}
	return FromProperties(props, sets, env)
}

// FromProperties is Load for properties already in memory.
func FromProperties(props map[string]string, sets []string, env []string) (*Config, *Report, error) {
	rep := &Report{}
	if isDriverStyle(props) {
		flat, ignored, err := fromDriverStyle(props)
		if err != nil {
			return nil, rep, err
		}
		for _, k := range ignored {
			rep.warn("%s: ignored (an MM2 driver setting for workers or other flows)", k)
		}
		props = flat
	} else {
		props = clone(props)
	}
	applyEnv(props, env)
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || strings.TrimSpace(k) == "" {
			rep.problem("--set %q: want key=value", s)
			continue
		}
		props[strings.TrimSpace(k)] = v
	}
	cfg := build(props, rep)
	if err := rep.Err(); err != nil {
		return cfg, rep, err
	}
	return cfg, rep, nil
}

func clone(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// applyEnv maps CHECKPOINTD_A_B_C to the known key whose dots and dashes
// became underscores (a.b-c), else to a.b.c.
func applyEnv(props map[string]string, env []string) {
	byEnvName := map[string]string{}
	for k := range knownKeys {
		byEnvName[envName(k)] = k
	}
	for _, kv := range env {
		name, v, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, EnvPrefix) {
			continue
		}
		key, known := byEnvName[name]
		if !known {
			key = strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(name, EnvPrefix), "_", "."))
		}
		props[key] = v
	}
}

func envName(key string) string {
	return EnvPrefix + strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(key))
}

// placeholder matches values left as templates: ALL_CAPS_WITH_UNDERSCORES
// tokens (as managed Connect services hand out) or ${...}.
var placeholder = regexp.MustCompile(`^\$\{[^}]*\}$|^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$`)

// placeholderOK lists keys whose legitimate values look like placeholders.
var placeholderOK = map[string]bool{"security.protocol": true, "sasl.mechanism": true}

func checkPlaceholders(props map[string]string, rep *Report) map[string]bool {
	bad := map[string]bool{}
	for _, k := range sortedKeys(props) {
		v := strings.TrimSpace(props[k])
		last := k[strings.LastIndex(k, ".")+1:]
		if placeholderOK[k] || placeholderOK[strings.TrimPrefix(k, "source.cluster.")] || placeholderOK[strings.TrimPrefix(k, "target.cluster.")] || last == "protocol" || last == "mechanism" {
			continue
		}
		if placeholder.MatchString(v) {
			rep.problem("%s: placeholder %s was not filled in", k, v)
			bad[k] = true
		}
	}
	return bad
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ErrNoConfig is returned by commands that need a config file and got none.
var ErrNoConfig = errors.New("no configuration given")
