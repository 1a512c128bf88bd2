package config

import (
	"testing"

	"github.com/checkpointd/checkpointd/internal/javaregex"
)

// TestDefaultFilterLists: MM2's default groups and topics lists parse, and a name is kept
// when the include list matches it and the exclude list does not, as MM2's
// DefaultGroupFilter and DefaultTopicFilter decide.
func TestDefaultFilterLists(t *testing.T) {
	tests := []struct {
		include, exclude string
		names            map[string]bool
	}{
		{include: "groups", exclude: "groups.exclude", names: map[string]bool{
			"app-1":                  true,
			"":                       true,
			"console-consumer-12345": false,
			"console-consumer-":      false,
			"my-console-consumer-1":  true,
			"connect-mm2":            false,
			"__strimzi":              false,
			"_single":                true,
			"Connect-X":              true, // case-sensitive
		}},
		{include: "topics", exclude: "topics.exclude", names: map[string]bool{
			"orders":                      true,
			"us-west.orders":              true,
			"mm2-offset-syncs.B.internal": false,
			"mm2-configs.A.internal":      false,
			"mm2internal":                 true, // needs the dot
			"orders.internal":             true, // Kafka 4.x no longer excludes it
			"orders.replica":              false,
			"orders-replica":              true,
			"__consumer_offsets":          false,
			"A.checkpoints.internal":      true, // not excluded by name; it is never mirrored
		}},
	}
	parse := func(key string) *javaregex.List {
		t.Helper()
		spec, ok := specOf(key)
		if !ok || spec.def == "" {
			t.Fatalf("%s has no default", key)
		}
		l, err := javaregex.ParseList(spec.def)
		if err != nil {
			t.Fatalf("default %s: %v", key, err)
		}
		return l
	}
	for _, tt := range tests {
		t.Run(tt.include, func(t *testing.T) {
			include, exclude := parse(tt.include), parse(tt.exclude)
			for name, want := range tt.names {
				if got := include.Match(name) && !exclude.Match(name); got != want {
					t.Errorf("%s/%s keep %q = %v, want %v", tt.include, tt.exclude, name, got, want)
				}
			}
		})
	}
}
