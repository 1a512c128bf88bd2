package kafkalog

import (
	"testing"

	"github.com/IBM/sarama"
)

func TestCheckpointProducerConfig(t *testing.T) {
	caller := sarama.NewConfig()
	caller.Version = sarama.V4_1_0_0
	caller.Producer.RequiredAcks = sarama.WaitForLocal
	caller.Metadata.AllowAutoTopicCreation = true
	cfg, err := producerConfig(caller)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case cfg.Metadata.AllowAutoTopicCreation:
		t.Error("publishing must not auto-create the checkpoints topic")
	case cfg.Producer.RequiredAcks != sarama.WaitForAll:
		t.Error("checkpoints need acks from all in-sync replicas")
	case cfg.Net.MaxOpenRequests != 1:
		t.Error("more than one request in flight can reorder checkpoints on retry")
	case !cfg.Producer.Return.Successes:
		t.Error("a sync producer needs Return.Successes")
	}
	pm := &sarama.ProducerMessage{Topic: "t", Partition: 0}
	if p, err := cfg.Producer.Partitioner("t").Partition(pm, 3); err != nil || p != 0 {
		t.Errorf("partitioner put a partition-0 message in %d (%v): want the manual partitioner", p, err)
	}
	if caller.Producer.RequiredAcks != sarama.WaitForLocal {
		t.Error("the caller's config was modified")
	}

	old := sarama.NewConfig()
	old.Version = sarama.V0_10_2_0
	if _, err := producerConfig(old); err == nil {
		t.Error("a version without record headers was accepted")
	}
}
