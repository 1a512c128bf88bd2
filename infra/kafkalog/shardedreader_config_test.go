package kafkalog

import (
	"testing"
	"time"

	"github.com/IBM/sarama"
)

func TestShardedReaderNeverCommits(t *testing.T) {
	caller := sarama.NewConfig()
	caller.Version = sarama.V4_1_0_0
	caller.Consumer.Offsets.AutoCommit.Enable = true
	r, err := NewShardedReader(ShardedReaderConfig{
		ReaderConfig:   ReaderConfig{Brokers: []string{"b:9092"}, Sarama: caller},
		GroupID:        "g",
		SessionTimeout: 6 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.sarama.Consumer.Offsets.AutoCommit.Enable {
		t.Error("auto-commit left on")
	}
	if hb := r.sarama.Consumer.Group.Heartbeat.Interval; hb > 2*time.Second {
		t.Errorf("heartbeat %s with a 6s session, want at most a third of it", hb)
	}
	if r.cfg.RevokeTimeout <= 0 || r.cfg.RevokeTimeout > r.sarama.Consumer.Group.Rebalance.Timeout {
		t.Errorf("revoke timeout %s, rebalance timeout %s", r.cfg.RevokeTimeout, r.sarama.Consumer.Group.Rebalance.Timeout)
	}
	if !caller.Consumer.Offsets.AutoCommit.Enable {
		t.Error("the caller's config was modified")
	}
}
