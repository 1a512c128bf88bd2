package config

import (
	"fmt"
	"slices"
	"strings"
)

// mergeFlows adds the issues found in each flow of a driver file (reps[i] for
// flows[i]) to rep, naming the keys of the file (A.bootstrap.servers rather than
// source.cluster.bootstrap.servers), each issue once: a top-level key that is
// wrong for every flow is one issue. An issue of a top-level key found in only
// some of the flows names them.
func mergeFlows(rep *Report, reps []*Report, flows []flowSettings) {
	type found struct {
		issue Issue
		flows []string
	}
	merge := func(dst *[]Issue, issues func(*Report) []Issue) {
		var all []*found
		for i, r := range reps {
			for _, is := range issues(r) {
				if is.Key != "" {
					is.Key = flows[i].fileKey(is.Key)
				}
				j := slices.IndexFunc(all, func(f *found) bool { return f.issue == is })
				if j < 0 {
					all = append(all, &found{issue: is})
					j = len(all) - 1
				}
				all[j].flows = append(all[j].flows, flows[i].name())
			}
		}
		for _, f := range all {
			if len(f.flows) < len(flows) && !namesFlowOrCluster(f.issue.Key, flows) {
				f.issue.Message += " (flow " + strings.Join(f.flows, ", ") + ")"
			}
			*dst = append(*dst, f.issue)
		}
	}
	merge(&rep.Warnings, func(r *Report) []Issue { return r.Warnings })
	merge(&rep.Problems, func(r *Report) []Issue { return r.Problems })
}

// namesFlowOrCluster reports a key of one flow (A->B.groups) or one cluster
// (A.bootstrap.servers): an issue under it needs no flow named.
func namesFlowOrCluster(key string, flows []flowSettings) bool {
	for _, f := range flows {
		if strings.HasPrefix(key, f.name()+".") || strings.HasPrefix(key, f.source+".") || strings.HasPrefix(key, f.target+".") {
			return true
		}
	}
	return false
}

// checkFlowsTogether reports what cannot hold when the flows run in one
// process: two flows sharing a consumer group (they would split each other's
// work and leases), and flows disagreeing on the process's own settings (one
// metrics and health server, one log).
func checkFlowsTogether(cfgs []*Config, flows []flowSettings, rep *Report) {
	if len(cfgs) < 2 {
		return
	}
	owner := map[string]int{}
	for i, c := range cfgs {
		j, taken := owner[c.GroupID]
		if !taken {
			owner[c.GroupID] = i
			continue
		}
		rep.problem(flows[i].fileKey("checkpointd.group.id"), c.GroupID,
			"flows %s and %s would share this consumer group and split each other's work; set it per flow (%s.checkpointd.group.id) or leave it out (default checkpointd-<source>-<target>)",
			flows[j].name(), flows[i].name(), flows[i].name())
	}
	process := []struct {
		key   string
		value func(*Config) string
	}{
		{"checkpointd.metrics.address", func(c *Config) string { return c.MetricsAddress }},
		{"checkpointd.health.address", func(c *Config) string { return c.HealthAddress }},
		{"checkpointd.log.format", func(c *Config) string { return c.LogFormat }},
		{"checkpointd.log.level", func(c *Config) string { return c.LogLevel }},
	}
	for _, p := range process {
		var values []string
		for i, c := range cfgs {
			values = append(values, fmt.Sprintf("%s %q", flows[i].name(), p.value(c)))
		}
		if slices.ContainsFunc(cfgs, func(c *Config) bool { return p.value(c) != p.value(cfgs[0]) }) {
			rep.problem(p.key, "", "one process runs every flow, with one value of it, and the flows differ (%s): set it at the top level only",
				strings.Join(values, ", "))
		}
	}
}
