package config

import (
	"cmp"
	"maps"
	"slices"
	"strings"
)

// KeyValue is one property of the effective configuration.
type KeyValue struct {
	Key, Value string
	// Origin says where the value came from: default, file, properties, env NAME, --set,
	// or file (KEY) for a key of an MM2 driver file mapped onto a connector key.
	Origin string
}

// Effective lists the configuration as checkpointd uses it, sorted by key: every
// property given, after overrides, and every connector key left at its default. Secret
// values (passwords, secrets, tokens, sasl.jaas.config, private keys) are redacted. A
// value taken from a config provider names its references in Origin.
func (c *Config) Effective() []KeyValue {
	values := maps.Clone(c.Raw)
	origins := maps.Clone(c.origins)
	if origins == nil {
		origins = map[string]string{}
	}
	for _, s := range connectorKeys {
		if _, set := values[s.name]; !set {
			values[s.name], origins[s.name] = s.def, "default"
		}
	}
	if _, set := c.Raw["checkpointd.group.id"]; !set {
		values["checkpointd.group.id"] = c.GroupID
	}
	if _, set := c.Raw["checkpointd.health.address"]; !set {
		values["checkpointd.health.address"] = c.HealthAddress
	}
	out := make([]KeyValue, 0, len(values))
	for _, k := range slices.Sorted(maps.Keys(values)) {
		v := values[k]
		if isSecret(k) && v != "" {
			v = Redacted
		}
		origin := cmp.Or(origins[k], "default")
		if refs := c.provided[k]; len(refs) > 0 {
			origin += " via " + strings.Join(refs, ", ")
		}
		out = append(out, KeyValue{Key: k, Value: v, Origin: origin})
	}
	return out
}
