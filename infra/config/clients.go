package config

import (
	"cmp"
	"errors"
	"net"
	"slices"
	"strings"
)

// Role is one Kafka client checkpointd makes: a kind of client on one cluster.
type Role int

const (
	SourceConsumer Role = iota
	SourceAdmin
	SourceProducer
	TargetConsumer
	TargetAdmin
	TargetProducer
)

// usedRoles are the clients checkpointd makes; their settings are validated at load.
var usedRoles = []Role{SourceConsumer, SourceAdmin, TargetConsumer, TargetAdmin, TargetProducer}

func (r Role) side() string {
	if r <= SourceProducer {
		return "source"
	}
	return "target"
}

func (r Role) kind() string {
	switch r {
	case SourceConsumer, TargetConsumer:
		return "consumer"
	case SourceAdmin, TargetAdmin:
		return "admin"
	}
	return "producer"
}

// String is the role as client ids carry it, e.g. source-consumer.
func (r Role) String() string { return r.side() + "-" + r.kind() }

// clientProp is a resolved client property and the key it was given under.
type clientProp struct {
	value string
	key   string
}

// clientProps merges a role's client properties with MM2's precedence (as in
// MirrorConnectorConfig.sourceConsumerConfig and friends), later layers winning:
//
//  1. <side>.cluster.* — connection keys only: bootstrap.servers, security.protocol,
//     ssl.*, sasl.*;
//  2. <kind>.* — connector-level consumer.*, producer.* or admin.*, for both sides;
//  3. <side>.<kind>.*, e.g. source.consumer.*.
func (c *Config) clientProps(role Role) map[string]clientProp {
	out := map[string]clientProp{}
	layer := func(prefix string, connectionOnly bool) {
		for k, v := range c.Raw {
			name, ok := strings.CutPrefix(k, prefix)
			if !ok || name == "" || connectionOnly && !isConnectionKey(name) {
				continue
			}
			if k == "consumer.poll.timeout.ms" || k == "admin.timeout.ms" {
				continue // the connector's own keys, not client properties
			}
			out[name] = clientProp{value: v, key: k}
		}
	}
	layer(role.side()+".cluster.", true)
	layer(role.kind()+".", false)
	layer(role.side()+"."+role.kind()+".", false)
	return out
}

// buildClients resolves each cluster's client properties and validates every client
// checkpointd makes by building its sarama configuration once.
func (c *Config) buildClients(r *reader) {
	c.Source = c.cluster(r, "source", SourceConsumer, SourceProducer, SourceAdmin)
	c.Target = c.cluster(r, "target", TargetConsumer, TargetProducer, TargetAdmin)
	warned := map[string]bool{}
	for _, role := range usedRoles {
		props := c.clientProps(role)
		c.warnUnused(role, props, warned, r.rep)
		if _, err := c.SaramaConfig(role); err != nil {
			var ce *clientError
			switch {
			case errors.As(err, &ce) && (r.skip[ce.key] || r.rep.hasProblem(ce.key)):
				// reported already, by its key or for another client
			case errors.As(err, &ce):
				if ph, ok := placeholderIn(ce.value); ok && !isSecret(ce.key) {
					r.rep.problem(ce.key, "", "placeholder %s was not filled in (%s)", ph, ce.msg)
				} else {
					r.rep.problem(ce.key, ce.value, "%s", ce.msg)
				}
			default:
				r.rep.problem("", "", "%s client: %v", role, err)
			}
		}
	}
}

func (c *Config) cluster(r *reader, side string, kinds ...Role) ClusterConfig {
	key := side + ".cluster.bootstrap.servers"
	cc := ClusterConfig{}
	if v, ok := r.value(key); ok && strings.TrimSpace(v) != "" {
		servers, err := parseServers(v)
		if _, placeholder := placeholderIn(v); err != nil && placeholder {
			r.invalid(key, v, "want host:port of one or more brokers, comma-separated")
		} else if err != nil {
			r.invalid(key, v, "%v", err)
		}
		cc.BootstrapServers = servers
	} else if !r.skip[key] {
		r.invalid(key, "", "required: host:port of one or more brokers, comma-separated")
	}
	dst := []*map[string]string{&cc.Consumer, &cc.Producer, &cc.Admin}
	for i, role := range kinds {
		props := c.clientProps(role)
		m := make(map[string]string, len(props))
		for name, p := range props {
			m[name] = p.value
		}
		*dst[i] = m
		if bs, ok := props["bootstrap.servers"]; ok && bs.key != key && !slices.Equal(mustServers(bs.value), cc.BootstrapServers) {
			r.rep.warn(bs.key, bs.value, "differs from %s: checkpointd connects every %s client to %s", key, side, key)
		}
	}
	return cc
}

// parseServers reads bootstrap.servers as Kafka does: a comma-separated list of
// host:port, blanks and empty entries ignored.
func parseServers(v string) ([]string, error) {
	var out []string
	for _, s := range parseList(v) {
		if s == "" {
			continue
		}
		host, port, err := net.SplitHostPort(s)
		if err != nil || host == "" || !isPort(port) || port == "0" {
			return nil, errors.New("want host:port of one or more brokers, comma-separated (" + s + " is not host:port)")
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, errors.New("required: host:port of one or more brokers, comma-separated")
	}
	return out, nil
}

func mustServers(v string) []string {
	s, _ := parseServers(v)
	return s
}

// warnUnused names TLS and SASL settings that the security protocol leaves unused, once
// per key.
func (c *Config) warnUnused(role Role, props map[string]clientProp, warned map[string]bool, rep *Report) {
	proto := strings.ToUpper(strings.TrimSpace(props["security.protocol"].value))
	for name, p := range props {
		unused := strings.HasPrefix(name, "ssl.") && proto != "SSL" && proto != "SASL_SSL" ||
			strings.HasPrefix(name, "sasl.") && proto != "SASL_PLAINTEXT" && proto != "SASL_SSL"
		if unused && !warned[p.key] {
			warned[p.key] = true
			rep.warn(p.key, "", "unused: security.protocol for the %s clients is %s", role.side(), cmp.Or(proto, "PLAINTEXT"))
		}
	}
}

// clientID is MM2's client.id: [user's client.id|]source->target|name|role.
func (c *Config) clientID(role Role, props map[string]clientProp) string {
	id := c.SourceAlias + "->" + c.TargetAlias + "|" + c.Name + "|" + role.String()
	if user := strings.TrimSpace(props["client.id"].value); user != "" {
		id = user + "|" + id
	}
	return id
}
