package config

import (
	"fmt"
	"slices"
	"strings"
)

// isDriverStyle reports an MM2 driver file (mm2.properties,
// connect-mirror-maker.properties): it lists its clusters.
func isDriverStyle(s settings) bool {
	_, ok := s["clusters"]
	return ok
}

// flowSettings are the connector-level settings of one enabled flow of a
// driver file, with the key of the file each came from.
type flowSettings struct {
	source, target string
	s              settings
	fileKeys       map[string]string // connector key -> driver key it was mapped from
}

func (f flowSettings) name() string { return f.source + "->" + f.target }

// fileKey is the key of the driver file that sets (or would set) the
// connector key, so that an issue names what the user can change:
// source.cluster.bootstrap.servers is A.bootstrap.servers for the flow A->B.
func (f flowSettings) fileKey(key string) string {
	if k, ok := f.fileKeys[key]; ok {
		return k
	}
	for _, side := range []struct{ prefix, alias string }{{"source.", f.source}, {"target.", f.target}} {
		rest, ok := strings.CutPrefix(key, side.prefix)
		if !ok {
			continue
		}
		if name, ok := strings.CutPrefix(rest, "cluster."); ok && name != "alias" {
			return side.alias + "." + name
		}
		if hasClientKindPrefix(rest) {
			return side.alias + "." + rest
		}
	}
	return key
}

// fromDriverStyle maps an MM2 driver file onto the connector-level keys of the
// MirrorCheckpointConnector of each enabled flow, as
// MirrorMakerConfig.connectorBaseConfig does:
//
//   - a flow A->B runs when A and B are in clusters and A->B.enabled is true
//     (any case; MM2's default is false);
//   - top-level connector keys (groups, sync.group.offsets.enabled, ...),
//     replication.policy.* and checkpointd.* keep their names, for every flow;
//   - A.bootstrap.servers, A.security.protocol, A.ssl.* and A.sasl.* become
//     source.cluster.* of the flows from A and target.cluster.* of the flows
//     into A; A.consumer.*, A.producer.* and A.admin.* become source.consumer.*
//     (target.consumer.*) and so on;
//   - top-level bootstrap.servers, security.protocol, ssl.* and sasl.* apply to
//     every cluster that does not set them itself;
//   - A->B.<key> sets <key> of the flow A->B, over everything else;
//   - the aliases are A and B unless the file sets source.cluster.alias or
//     target.cluster.alias.
//
// Where MM2 silently runs nothing, checkpointd stops: a flow enabled for a
// cluster not in clusters, or from a cluster to itself, is a problem naming its
// key. Worker settings and the keys of clusters and flows that no enabled flow
// uses are reported as ignored, once.
func fromDriverStyle(s settings, rep *Report) ([]flowSettings, error) {
	var clusters []string
	for _, c := range parseList(s["clusters"].value) {
		if !slices.Contains(clusters, c) { // MM2 reads them into a set
			clusters = append(clusters, c)
		}
	}
	isCluster := func(alias string) bool { return alias != "" && slices.Contains(clusters, alias) }
	if len(clusters) == 0 || slices.Contains(clusters, "") {
		return nil, fmt.Errorf("clusters=%q: want a comma-separated list of cluster aliases", s["clusters"].value)
	}

	var flows []flowSettings
	switches := map[string]bool{} // the keys of known pairs' switches
	for _, src := range clusters {
		for _, tgt := range clusters {
			key := src + "->" + tgt + ".enabled"
			switches[key] = true
			if src != tgt && isTrue(s, key) {
				flows = append(flows, flowSettings{source: src, target: tgt})
			}
		}
	}
	slices.SortFunc(flows, func(a, b flowSettings) int { return strings.Compare(a.name(), b.name()) })
	for _, k := range s.sortedKeys() {
		src, tgt, ok := flowSwitch(k)
		if !ok || !isTrue(s, k) {
			continue
		}
		switch {
		case src == tgt:
			rep.problem(k, s[k].value, "a flow needs two different clusters; %s would replicate %s into itself", k, src)
		case !switches[k]:
			var missing []string
			for _, a := range []string{src, tgt} {
				if !isCluster(a) {
					missing = append(missing, a)
				}
			}
			rep.problem(k, s[k].value, "cluster %s not in clusters (%s): add it there with its bootstrap.servers, or turn the flow off",
				strings.Join(missing, " and "), strings.Join(clusters, ", "))
		}
	}
	if len(flows) == 0 {
		return nil, fmt.Errorf("clusters=%q: no flow is enabled; enable one with SOURCE->TARGET.enabled = true, in the file or with --set", s["clusters"].value)
	}

	inFlow := func(alias string) bool {
		return slices.ContainsFunc(flows, func(f flowSettings) bool { return f.source == alias || f.target == alias })
	}
	enabledFlow := func(k string) bool {
		return slices.ContainsFunc(flows, func(f flowSettings) bool { return strings.HasPrefix(k, f.name()+".") })
	}
	// Keys no flow uses are named once, whatever the number of flows.
	for _, k := range s.sortedKeys() {
		alias, rest := clusterOf(k, clusters)
		switch {
		case k == "clusters":
		case strings.Contains(k, "->"):
			if _, _, isSwitch := flowSwitch(k); !isSwitch && !switches[k] && !enabledFlow(k) {
				rep.warn(k, "", "ignored: a setting of a flow that is not enabled")
			}
		case alias != "":
			switch {
			case !inFlow(alias):
				rep.warn(k, "", "ignored: a setting of cluster %s, which no enabled flow uses", alias)
			case !isConnectionKey(rest) && !hasClientKindPrefix(rest):
				rep.warn(k, "", "ignored: MM2 takes only bootstrap.servers, security.protocol, ssl.* and sasl.* from a cluster's settings (this looks like a Connect worker setting)")
			}
		}
	}
	for i := range flows {
		flows[i].mapFrom(s, clusters)
	}
	return flows, nil
}

// mapFrom fills f.s with the connector-level settings of the flow f.
func (f *flowSettings) mapFrom(s settings, clusters []string) {
	f.s, f.fileKeys = settings{}, map[string]string{}
	from := func(key string) string { return s[key].origin + " (" + key + ")" }
	put := func(key, fileKey string, v setting) {
		f.s[key] = v
		f.fileKeys[key] = fileKey
	}
	putIfAbsent := func(key, fileKey string, v setting) {
		if _, ok := f.s[key]; !ok {
			put(key, fileKey, v)
		}
	}
	flowPrefix := f.name() + "."
	var topLevelClient []string
	for _, k := range s.sortedKeys() {
		v := s[k]
		alias, rest := clusterOf(k, clusters)
		switch {
		case k == "clusters", strings.Contains(k, "->"):
		case alias != "":
			for _, side := range []struct{ prefix, alias string }{{"source.", f.source}, {"target.", f.target}} {
				if alias != side.alias {
					continue
				}
				mapped := setting{value: v.value, origin: from(k)}
				switch {
				case isConnectionKey(rest):
					put(side.prefix+"cluster."+rest, k, mapped)
				case hasClientKindPrefix(rest):
					put(side.prefix+rest, k, mapped)
				}
			}
		case isConnectionKey(k):
			topLevelClient = append(topLevelClient, k)
		default:
			// Connector keys keep their names; the driver's and its workers' own
			// settings are named by the ignored- and unknown-key checks.
			put(k, k, v)
		}
	}
	for _, k := range topLevelClient {
		mapped := setting{value: s[k].value, origin: from(k)}
		putIfAbsent("source.cluster."+k, k, mapped)
		putIfAbsent("target.cluster."+k, k, mapped)
	}
	enabled := flowPrefix + "enabled"
	putIfAbsent("source.cluster.alias", enabled, setting{value: f.source, origin: from(enabled)})
	putIfAbsent("target.cluster.alias", enabled, setting{value: f.target, origin: from(enabled)})
	for _, k := range s.sortedKeys() {
		if key, ok := strings.CutPrefix(k, flowPrefix); ok && key != "enabled" {
			put(key, k, setting{value: s[k].value, origin: from(k)})
		}
	}
}

// clusterOf splits a key of a cluster's settings, A.bootstrap.servers, into
// the alias and the rest; alias is "" for other keys. The longest alias wins,
// as aliases may hold dots (us and us.east).
func clusterOf(k string, clusters []string) (alias, rest string) {
	for _, c := range clusters {
		if r, ok := strings.CutPrefix(k, c+"."); ok && r != "" && len(c) > len(alias) {
			alias, rest = c, r
		}
	}
	return alias, rest
}

// isTrue reads a boolean as Java's Boolean.parseBoolean does: "true" in any
// case is true, anything else false.
func isTrue(s settings, key string) bool {
	v, ok := s[key]
	return ok && strings.EqualFold(strings.TrimSpace(v.value), "true")
}

func hasClientKindPrefix(key string) bool {
	return strings.HasPrefix(key, "consumer.") || strings.HasPrefix(key, "producer.") || strings.HasPrefix(key, "admin.")
}

// flowSwitch splits a key of the form A->B.enabled; an alias of B with a dot
// in it is taken for a flow setting (A->B.x.enabled), as no switch has one.
func flowSwitch(k string) (source, target string, ok bool) {
	flow, ok := strings.CutSuffix(k, ".enabled")
	source, target, isFlow := strings.Cut(flow, "->")
	if !ok || !isFlow || strings.Contains(target, ".") {
		return "", "", false
	}
	return source, target, true
}

// parseList splits a LIST value as Kafka's ConfigDef does: trimmed, then split on
// commas with the blanks around them.
func parseList(v string) []string {
	v = strings.TrimFunc(v, func(r rune) bool { return r <= ' ' })
	if v == "" {
		return nil
	}
	items := strings.Split(v, ",")
	for i := range items {
		items[i] = strings.Trim(items[i], " \t\n\x0B\f\r")
	}
	return items
}
