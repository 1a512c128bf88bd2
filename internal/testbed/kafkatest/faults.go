package kafkatest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// FaultProxy is a fault proxy between clients and a single-node cluster:
// Shopify's toxiproxy, in-process. The broker has a second listener,
// PROXIED, that advertises the proxy's address, so a client that bootstraps
// on Cluster.ProxiedBootstrap reaches the broker only through the proxy,
// for every connection, while the tests' own clients (Bootstrap) go direct
// and see no fault. Faults apply to open connections and new ones alike,
// until Heal.
type FaultProxy struct {
	Addr string // where the proxy listens: the PROXIED listener's advertised address

	server *toxiproxy.ApiServer
	proxy  *toxiproxy.Proxy

	mu sync.Mutex
	n  int // toxics added, for unique names
}

// proxiedSpec adds to a single-node cluster the PROXIED listener on
// ports[2], advertised as 127.0.0.1:ports[3], where the proxy will listen.
func proxiedSpec(spec clusterSpec) clusterSpec {
	base := spec.props
	spec.extraPorts += 2
	spec.props = func(ports []int) map[string]string {
		props := map[string]string{}
		if base != nil {
			props = base(ports)
		}
		addr := func(i int) string { return "127.0.0.1:" + strconv.Itoa(ports[i]) }
		extra := len(ports) - 2 // the proxied pair comes last
		props["listeners"] = "PLAINTEXT://" + addr(0) + ",CONTROLLER://" + addr(1) + ",PROXIED://" + addr(extra)
		props["advertised.listeners"] = "PLAINTEXT://" + addr(0) + ",CONTROLLER://" + addr(1) + ",PROXIED://" + addr(extra+1)
		props["listener.security.protocol.map"] = "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,PROXIED:PLAINTEXT"
		return props
	}
	return spec
}

// startFaultProxy starts the proxy of a cluster started with proxiedSpec.
func (c *Cluster) startFaultProxy() error {
	if len(c.extraPorts) < 2 {
		return fmt.Errorf("cluster %s has no proxied listener", c.Alias)
	}
	listen := "127.0.0.1:" + strconv.Itoa(c.extraPorts[len(c.extraPorts)-1])
	upstream := "127.0.0.1:" + strconv.Itoa(c.extraPorts[len(c.extraPorts)-2])
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	proxy := toxiproxy.NewProxy(server, "kafka-"+c.Alias, listen, upstream)
	if err := server.Collection.Add(proxy, true); err != nil {
		return fmt.Errorf("fault proxy of cluster %s on %s: %w", c.Alias, listen, err)
	}
	c.Faults = &FaultProxy{Addr: listen, server: server, proxy: proxy}
	c.ProxiedBootstrap = listen
	return nil
}

// add adds one toxic, on both directions unless stream is set.
func (f *FaultProxy) add(kind, stream string, attrs map[string]any) error {
	streams := []string{"downstream", "upstream"}
	if stream != "" {
		streams = []string{stream}
	}
	for _, s := range streams {
		f.mu.Lock()
		f.n++
		name := fmt.Sprintf("%s-%s-%d", kind, s, f.n)
		f.mu.Unlock()
		var b strings.Builder
		fmt.Fprintf(&b, `{"name":%q,"type":%q,"stream":%q,"toxicity":1,"attributes":{`, name, kind, s)
		first := true
		for k, v := range attrs {
			if !first {
				b.WriteString(",")
			}
			first = false
			fmt.Fprintf(&b, "%q:%v", k, v)
		}
		b.WriteString("}}")
		if _, err := f.proxy.Toxics.AddToxicJson(strings.NewReader(b.String())); err != nil {
			return fmt.Errorf("add %s toxic to %s: %w", kind, f.proxy.Name, err)
		}
	}
	return nil
}

// Latency delays the data both ways by ms, give or take jitter ms.
func (f *FaultProxy) Latency(ms, jitter int) error {
	return f.add("latency", "", map[string]any{"latency": ms, "jitter": jitter})
}

// Bandwidth limits each direction to kbps kilobytes a second.
func (f *FaultProxy) Bandwidth(kbps int) error {
	return f.add("bandwidth", "", map[string]any{"rate": kbps})
}

// BlackHole stops all data while connections stay open, as a network that
// drops every packet does.
func (f *FaultProxy) BlackHole() error {
	return f.add("timeout", "", map[string]any{"timeout": 0})
}

// ResetPeer resets each connection (TCP RST) after ms.
func (f *FaultProxy) ResetPeer(ms int) error {
	return f.add("reset_peer", "", map[string]any{"timeout": ms})
}

// SlowClose delays each connection's close by ms.
func (f *FaultProxy) SlowClose(ms int) error {
	return f.add("slow_close", "", map[string]any{"delay": ms})
}

// Heal removes every fault.
func (f *FaultProxy) Heal() {
	f.proxy.Toxics.ResetToxics(context.Background())
}

// close stops the proxy and closes its connections.
func (f *FaultProxy) close() {
	f.Heal()
	f.proxy.Stop()
}
