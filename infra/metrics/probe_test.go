package metrics

import (
	"context"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"
)

// TestClusterProbe runs on kfake: the probe answers while the cluster is up
// and fails once it is gone.
func TestClusterProbe(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	addrs := cluster.ListenAddrs()
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.Net.DialTimeout = time.Second
	cfg.Metadata.Retry.Max = 0
	p := DialClusterProbe("target", func() (sarama.Client, error) { return sarama.NewClient(addrs, cfg) })
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Check(ctx); err != nil {
		t.Fatalf("Check with the cluster up: %v", err)
	}
	cluster.Close()
	time.Sleep(probeCache + 100*time.Millisecond)
	if err := p.Check(ctx); err == nil {
		t.Fatal("Check with the cluster gone: nil error")
	} else {
		t.Logf("cluster gone: %v", err)
	}
}
