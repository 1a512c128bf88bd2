package kafkatest

import (
	"context"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// Through the fault proxy every connection of a client that bootstrapped on
// ProxiedBootstrap goes through the proxy (the broker advertises it), and
// each fault shows on it: added latency, a black hole that holds requests
// unanswered on open connections, and a heal; direct clients see none.
func TestFaultProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs real Kafka")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bed, err := StartBed(ctx, BedOptions{FaultProxies: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("bed with fault proxies ready in %v", bed.ReadyIn.Round(time.Millisecond))
	t.Cleanup(func() {
		closing := time.Now()
		_ = bed.Close()
		t.Logf("bed closed in %v", time.Since(closing).Round(time.Millisecond))
	})
	c := bed.Target
	if c.ProxiedBootstrap == "" || c.Faults == nil || bed.Source.Faults == nil {
		t.Fatal("no fault proxy")
	}
	cfg := c.SaramaConfig()
	cfg.Net.ReadTimeout = 2 * time.Second
	cfg.Metadata.Retry.Max = 0
	proxied, err := sarama.NewClient([]string{c.ProxiedBootstrap}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer proxied.Close()
	var addrs []string
	for _, b := range proxied.Brokers() {
		addrs = append(addrs, b.Addr())
	}
	if len(addrs) != 1 || addrs[0] != c.Faults.Addr {
		t.Fatalf("metadata through the proxy names %v, want the proxy's %s", addrs, c.Faults.Addr)
	}
	direct := c.Client(t)
	ask := func(client sarama.Client) (time.Duration, error) {
		start := time.Now()
		b := client.Brokers()[0]
		_ = b.Open(client.Config())
		_, err := b.ApiVersions(&sarama.ApiVersionsRequest{})
		return time.Since(start), err
	}
	if took, err := ask(proxied); err != nil || took > time.Second {
		t.Fatalf("through the healthy proxy: %v after %v", err, took)
	}

	if err := c.Faults.Latency(300, 50); err != nil {
		t.Fatal(err)
	}
	if took, err := ask(proxied); err != nil || took < 400*time.Millisecond {
		t.Errorf("with 300 ms each way: answered in %v (%v), want at least 400ms", took, err)
	}
	if took, err := ask(direct); err != nil || took > 250*time.Millisecond {
		t.Errorf("direct client under the proxy's latency: %v after %v", err, took)
	}
	c.Faults.Heal()

	// ApiVersions answers with about 500 bytes: at 1 KB/s, half a second.
	if err := c.Faults.Bandwidth(1); err != nil {
		t.Fatal(err)
	}
	if took, err := ask(proxied); err != nil || took < 250*time.Millisecond {
		t.Errorf("at 1 KB/s: answered in %v (%v), want at least 250ms", took, err)
	}
	c.Faults.Heal()

	if err := c.Faults.ResetPeer(0); err != nil {
		t.Fatal(err)
	}
	if took, err := ask(proxied); err == nil {
		t.Errorf("through resets: answered in %v, want the connection reset", took)
	}
	c.Faults.Heal()
	_ = proxied.Brokers()[0].Close()

	if err := c.Faults.BlackHole(); err != nil {
		t.Fatal(err)
	}
	if took, err := ask(proxied); err == nil || took < 1500*time.Millisecond {
		t.Errorf("through a black hole: %v after %v, want a timeout after the 2s read timeout", err, took)
	}
	c.Faults.Heal()
	healed := time.Now()
	WaitFor(t, 10*time.Second, "an answer through the healed proxy", func() error {
		_ = proxied.Brokers()[0].Close()
		_, err := ask(proxied)
		return err
	})
	t.Logf("answers again %v after the heal", time.Since(healed).Round(time.Millisecond))
}
