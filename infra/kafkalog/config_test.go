package kafkalog

import (
	"testing"

	"github.com/IBM/sarama"
)

func TestReaderSaramaConfig(t *testing.T) {
	caller := sarama.NewConfig()
	caller.Version = sarama.V3_6_0_0
	caller.ClientID = "mine"
	caller.Consumer.Offsets.AutoCommit.Enable = true
	caller.Metadata.AllowAutoTopicCreation = true

	for _, readCommitted := range []bool{false, true} {
		rc := ReaderConfig{Brokers: []string{"b:9092"}, Sarama: caller, ReadCommitted: readCommitted}
		cfg := rc.saramaConfig()
		switch {
		case cfg.Metadata.AllowAutoTopicCreation:
			t.Error("readers must never create topics by asking for them")
		case cfg.Consumer.Offsets.Initial != sarama.OffsetOldest:
			t.Error("readers start from the oldest offset")
		case !cfg.Consumer.Return.Errors:
			t.Error("consumer errors must come back to be logged")
		case cfg.Version != sarama.V3_6_0_0 || cfg.ClientID != "mine":
			t.Errorf("caller's settings lost: version %s client id %q", cfg.Version, cfg.ClientID)
		case readCommitted != (cfg.Consumer.IsolationLevel == sarama.ReadCommitted):
			t.Errorf("ReadCommitted=%v gave isolation level %v", readCommitted, cfg.Consumer.IsolationLevel)
		}
	}
	if !caller.Metadata.AllowAutoTopicCreation || caller.Consumer.IsolationLevel != sarama.ReadUncommitted {
		t.Error("the caller's config was modified")
	}
}
