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

// fromDriverStyle maps an MM2 driver file with one enabled flow A->B onto the
// connector-level keys of that flow's MirrorCheckpointConnector, as
// MirrorMakerConfig.connectorBaseConfig does:
//
//   - top-level connector keys (groups, sync.group.offsets.enabled, ...), replication.policy.*
//     and checkpointd.* keep their names;
//   - A.bootstrap.servers, A.security.protocol, A.ssl.* and A.sasl.* become
//     source.cluster.*; A.consumer.*, A.producer.* and A.admin.* become source.consumer.*
//     and so on; B likewise becomes target.*;
//   - top-level bootstrap.servers, security.protocol, ssl.* and sasl.* apply to both
//     clusters where the cluster does not set them itself;
//   - A->B.<key> sets <key>, over everything else;
//   - the aliases are A and B unless the file sets source.cluster.alias or
//     target.cluster.alias.
//
// Worker settings, other clusters' and other flows' keys are reported as ignored.
func fromDriverStyle(s settings, rep *Report) (settings, error) {
	clusters := parseList(s["clusters"].value)
	isCluster := func(alias string) bool { return slices.Contains(clusters, alias) }

	var flows []string
	for _, k := range s.sortedKeys() {
		flow, ok := strings.CutSuffix(k, ".enabled")
		src, tgt, isFlow := strings.Cut(flow, "->")
		if ok && isFlow && isCluster(src) && isCluster(tgt) && src != tgt && strings.EqualFold(strings.TrimSpace(s[k].value), "true") {
			flows = append(flows, flow)
		}
	}
	if len(flows) != 1 {
		found := "none"
		if len(flows) > 0 {
			found = strings.Join(flows, ", ")
		}
		return nil, fmt.Errorf("clusters=%q: checkpointd runs exactly one flow, and %d are enabled (%s); enable one with SOURCE->TARGET.enabled = true, in the file or with --set", s["clusters"].value, len(flows), found)
	}
	src, tgt, _ := strings.Cut(flows[0], "->")
	flowPrefix := flows[0] + "."

	out := settings{}
	from := func(key string) string { return s[key].origin + " (" + key + ")" }
	put := func(key, value, origin string) { out[key] = setting{value: value, origin: origin} }
	putIfAbsent := func(key, value, origin string) {
		if _, ok := out[key]; !ok {
			put(key, value, origin)
		}
	}

	var topLevelClient []string
	for _, k := range s.sortedKeys() {
		v := s[k]
		alias, rest, _ := strings.Cut(k, ".")
		switch {
		case k == "clusters":
		case strings.Contains(k, "->"):
			if !strings.HasPrefix(k, flowPrefix) && !isFlowSwitch(k) {
				rep.warn(k, "", "ignored: a setting of another flow")
			}
		case isCluster(alias) && rest != "":
			side := map[string]string{src: "source.", tgt: "target."}[alias]
			switch {
			case side == "":
				rep.warn(k, "", "ignored: a setting of cluster %s, which is not in the flow %s->%s", alias, src, tgt)
			case isConnectionKey(rest):
				put(side+"cluster."+rest, v.value, from(k))
			case hasClientKindPrefix(rest):
				put(side+rest, v.value, from(k))
			default:
				rep.warn(k, "", "ignored: MM2 takes only bootstrap.servers, security.protocol, ssl.* and sasl.* from a cluster's settings (this looks like a Connect worker setting)")
			}
		case isConnectionKey(k):
			topLevelClient = append(topLevelClient, k)
		default:
			// Connector keys keep their names; the driver's and its workers' own
			// settings are named by the ignored- and unknown-key checks.
			put(k, v.value, v.origin)
		}
	}
	for _, k := range topLevelClient {
		putIfAbsent("source.cluster."+k, s[k].value, from(k))
		putIfAbsent("target.cluster."+k, s[k].value, from(k))
	}
	putIfAbsent("source.cluster.alias", src, from(flows[0]+".enabled"))
	putIfAbsent("target.cluster.alias", tgt, from(flows[0]+".enabled"))
	for _, k := range s.sortedKeys() {
		if key, ok := strings.CutPrefix(k, flowPrefix); ok && key != "enabled" {
			put(key, s[k].value, from(k))
		}
	}
	return out, nil
}

func hasClientKindPrefix(key string) bool {
	return strings.HasPrefix(key, "consumer.") || strings.HasPrefix(key, "producer.") || strings.HasPrefix(key, "admin.")
}

// isFlowSwitch reports a key of the form A->B.enabled.
func isFlowSwitch(k string) bool {
	flow, ok := strings.CutSuffix(k, ".enabled")
	_, tgt, isFlow := strings.Cut(flow, "->")
	return ok && isFlow && !strings.Contains(tgt, ".")
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
