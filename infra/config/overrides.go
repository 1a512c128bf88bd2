package config

import (
	"slices"
	"strings"
)

// override is one property set from the environment or with --set.
type override struct {
	key, value, origin string
}

// overrides reads the environment and then --set, in that order so that --set wins. It
// splits them into those to apply before an MM2 driver file is mapped onto connector
// keys (driver keys such as us->eu.enabled or us.bootstrap.servers) and those to apply
// after (connector keys such as groups or source.cluster.bootstrap.servers), so each
// lands where it means something whatever the file's style.
func overrides(file settings, env, sets []string, rep *Report) (before, after []override) {
	var all []override
	envNames := envCandidates(file)
	for _, kv := range env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, EnvPrefix) || name == EnvPrefix {
			continue
		}
		key, known := envNames[name]
		if !known {
			// Not a key checkpointd knows of: take _ for ".", the usual case, and let the
			// unknown-key check name it.
			key = strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(name, EnvPrefix), "_", "."))
		}
		all = append(all, override{key: key, value: value, origin: "env " + name})
	}
	for _, s := range sets {
		key, value, ok := strings.Cut(s, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			rep.Problems = append(rep.Problems, Issue{Key: "--set", Value: s, Message: "want key=value"})
			continue
		}
		all = append(all, override{key: key, value: value, origin: "--set"})
	}
	driver := isDriverStyle(file)
	for _, o := range all {
		if driver && !isConnectorLevel(o.key) {
			before = append(before, o)
		} else {
			after = append(after, o)
		}
	}
	return before, after
}

// isConnectorLevel reports keys of the connector-level form.
func isConnectorLevel(key string) bool {
	if _, ok := specOf(key); ok {
		return true
	}
	_, _, client := splitClientKey(key)
	return client || strings.HasPrefix(key, "checkpointd.")
}

// envName is the environment variable that sets key.
func envName(key string) string {
	return EnvPrefix + strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(key))
}

// envCandidates maps environment variable names to the keys they set: every key
// checkpointd knows, every client property under every client prefix, and every key in
// the file (so CHECKPOINTD_US_BOOTSTRAP_SERVERS reaches us.bootstrap.servers).
func envCandidates(file settings) map[string]string {
	out := map[string]string{}
	add := func(key string) {
		if _, taken := out[envName(key)]; !taken {
			out[envName(key)] = key
		}
	}
	for _, s := range connectorKeys {
		add(s.name)
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for name := range clientKeys {
			if !yield(name) {
				return
			}
		}
	})
	for _, p := range clientPrefixes {
		for _, name := range names {
			add(p + name)
		}
	}
	for _, k := range file.sortedKeys() {
		add(k)
	}
	return out
}
