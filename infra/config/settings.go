package config

import (
	"maps"
	"slices"
)

// setting is one property value and where it came from, for the effective
// configuration checkpointd validate prints.
type setting struct {
	value  string
	origin string // file, env CHECKPOINTD_X, --set, or file (us.bootstrap.servers) for driver files
}

type settings map[string]setting

func newSettings(props map[string]string, origin string) settings {
	s := make(settings, len(props))
	for k, v := range props {
		s[k] = setting{value: v, origin: origin}
	}
	return s
}

func (s settings) apply(overrides []override) {
	for _, o := range overrides {
		s[o.key] = setting{value: o.value, origin: o.origin}
	}
}

func (s settings) sortedKeys() []string {
	return slices.Sorted(maps.Keys(s))
}

func (s settings) values() map[string]string {
	out := make(map[string]string, len(s))
	for k, v := range s {
		out[k] = v.value
	}
	return out
}
