package metrics

import (
	"context"
	"net"
	"strings"
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

// A cluster that accepts connections and never answers (a broker stalled, a
// network dropping replies) makes Check fail, naming it, but never wait:
// each call returns within probeWait, and once a check has gone unanswered
// for probeTimeout it says so.
func TestClusterProbeNeverBlocks(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conns := make(chan net.Conn, 16)
	defer func() {
		ln.Close()
		for len(conns) > 0 {
			_ = (<-conns).Close()
		}
	}()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			select {
			case conns <- c: // kept open: read nothing, answer nothing
			default:
				_ = c.Close()
			}
		}
	}()
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.Net.ReadTimeout = time.Minute // sarama alone would wait this long
	cfg.Metadata.Retry.Max = 0
	p := DialClusterProbe(`target "us"`, func() (sarama.Client, error) { return sarama.NewClient([]string{ln.Addr().String()}, cfg) })
	defer p.Close()

	deadline := time.Now().Add(probeTimeout + time.Second)
	var last error
	for time.Now().Before(deadline) {
		began := time.Now()
		last = p.Check(context.Background())
		if took := time.Since(began); took > probeWait+200*time.Millisecond {
			t.Fatalf("Check took %v, want at most about %v", took, probeWait)
		}
		if last == nil {
			t.Fatal("Check = nil for a cluster that never answers")
		}
		if !strings.Contains(last.Error(), `cluster target "us"`) {
			t.Fatalf("Check = %v, want it to name the cluster", last)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(last.Error(), "did not answer within") {
		t.Errorf("after %v: Check = %v, want 'did not answer within'", probeTimeout+time.Second, last)
	}
}
