package kafkalog_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/checkpointd/checkpointd/infra/kafkalog"
)

// OffsetsLogReadable tells a principal that may not see __consumer_offsets
// and a cluster that hides it (unreadable, with the reason) from a cluster
// it could not ask (an error). kfake, like some managed services, never
// shows the topic: the probe gives up after its bounded wait.
func TestOffsetsLogReadableOnKfake(t *testing.T) {
	t.Parallel()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("PLAIN", "admin", "admin"), kfake.User("PLAIN", "alice", "alice"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close() // nothing listens there now

	as := func(user string) *sarama.Config {
		cfg := sarama.NewConfig()
		cfg.Version = sarama.V4_0_0_0
		cfg.Net.SASL.Enable = true
		cfg.Net.SASL.Mechanism = sarama.SASLTypePlaintext
		cfg.Net.SASL.User, cfg.Net.SASL.Password = user, user
		cfg.Metadata.Retry.Max = 0
		return cfg
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()

	for _, tt := range []struct {
		name    string
		ctx     context.Context
		user    string
		brokers []string
		wantWhy string // "" when an error is wanted
		wantErr string
	}{
		{"no permission", context.Background(), "alice", cluster.ListenAddrs(), "metadata: __consumer_offsets: kafka server: The client is not authorized", ""},
		{"hidden topic", context.Background(), "admin", cluster.ListenAddrs(), "topic not visible", ""},
		{"unreachable", context.Background(), "admin", []string{closed}, "", "connect"},
		{"context ended", cancelled, "admin", cluster.ListenAddrs(), "", "context canceled"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			readable, why, err := kafkalog.OffsetsLogReadable(tt.ctx, tt.brokers, as(tt.user), "checkpointd")
			t.Logf("readable=%v why=%q err=%v after %v", readable, why, err, time.Since(start).Round(time.Millisecond))
			if took := time.Since(start); took > 8*time.Second {
				t.Errorf("took %v, want the probe's wait of about 5s at most", took)
			}
			if readable {
				t.Fatal("readable, want not")
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("err = %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !strings.Contains(why, tt.wantWhy) {
				t.Errorf("why = %q, err = %v; want why saying %q and no error", why, err, tt.wantWhy)
			}
		})
	}
}
