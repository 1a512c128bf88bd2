package config

import (
	"fmt"
	"sort"
	"strings"
)

// isDriverStyle reports whether props are an MM2 driver file (mm2.properties,
// connect-mirror-maker.properties): those list their clusters.
func isDriverStyle(props map[string]string) bool {
	_, ok := props["clusters"]
	return ok
}

// fromDriverStyle maps an MM2 driver file with one enabled flow A->B onto
// connector-level keys, the way MirrorMakerConfig builds the checkpoint
// connector's config: A.* client settings become source.cluster.* (and
// A.consumer.* source.consumer.*, ...), B.* target.*, top-level keys stay,
// and A->B.* keys override everything.
func fromDriverStyle(props map[string]string) (map[string]string, []string, error) {
	var clusters []string
	for _, c := range strings.Split(props["clusters"], ",") {
		if c = strings.TrimSpace(c); c != "" {
			clusters = append(clusters, c)
		}
	}
	var flows []string
	for k, v := range props {
		name, isEnabled := strings.CutSuffix(k, ".enabled")
		_, tgt, isFlow := strings.Cut(name, "->")
		if isEnabled && isFlow && !strings.Contains(tgt, ".") && strings.EqualFold(strings.TrimSpace(v), "true") {
			flows = append(flows, name)
		}
	}
	sort.Strings(flows)
	if len(flows) != 1 {
		return nil, nil, fmt.Errorf("clusters=%q: checkpointd runs exactly one flow, found %d enabled (%s); set exactly one SOURCE->TARGET.enabled=true",
			props["clusters"], len(flows), strings.Join(flows, ", "))
	}
	src, tgt, _ := strings.Cut(flows[0], "->")
	known := map[string]bool{}
	for _, c := range clusters {
		known[c] = true
	}
	if !known[src] || !known[tgt] {
		return nil, nil, fmt.Errorf("flow %s->%s: both aliases must be listed in clusters=%q", src, tgt, props["clusters"])
	}

	out := map[string]string{"source.cluster.alias": src, "target.cluster.alias": tgt}
	var ignored []string
	flowPrefix := src + "->" + tgt + "."
	roles := []string{"consumer.", "producer.", "admin."}
	for k, v := range props {
		switch {
		case k == "clusters" || strings.Contains(k, "->"):
			// flows are applied last; other flows are ignored
			if strings.Contains(k, "->") && !strings.HasPrefix(k, flowPrefix) && !isFlowSwitch(k) {
				ignored = append(ignored, k)
			}
		case hasClusterPrefix(k, clusters):
			alias, rest, _ := strings.Cut(k, ".")
			side := ""
			switch alias {
			case src:
				side = "source."
			case tgt:
				side = "target."
			default:
				ignored = append(ignored, k)
				continue
			}
			switch {
			case isClientConnectionKey(rest):
				out[side+"cluster."+rest] = v
			case hasAnyPrefix(rest, roles):
				out[side+rest] = v
			default:
				ignored = append(ignored, k) // worker settings of MM2's Connect herder
			}
		default:
			out[k] = v
		}
	}
	for k, v := range props {
		if strings.HasPrefix(k, flowPrefix) {
			out[strings.TrimPrefix(k, flowPrefix)] = v
		}
	}
	delete(out, "enabled")
	sort.Strings(ignored)
	return out, ignored, nil
}

func hasClusterPrefix(k string, clusters []string) bool {
	for _, c := range clusters {
		if strings.HasPrefix(k, c+".") {
			return true
		}
	}
	return false
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// isClientConnectionKey: the keys MM2 keeps from X.cluster.* settings.
func isClientConnectionKey(k string) bool {
	return k == "bootstrap.servers" || k == "security.protocol" || k == "client.id" ||
		strings.HasPrefix(k, "ssl.") || strings.HasPrefix(k, "sasl.")
}

// isFlowSwitch reports a key of the form A->B.enabled.
func isFlowSwitch(k string) bool {
	name, ok := strings.CutSuffix(k, ".enabled")
	_, tgt, isFlow := strings.Cut(name, "->")
	return ok && isFlow && !strings.Contains(tgt, ".")
}
