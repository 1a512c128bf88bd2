package kafkalog_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/infra/kafkalog"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
)

// PartitionCounts answers from real metadata: the partitions a topic has,
// no answer for a topic the cluster does not have (and none created by
// asking), and partitions added later once a partition past the count is
// asked about after the recheck interval.
func TestPartitionCountsOnKafka(t *testing.T) {
	bed := kafkatest.Shared(t)
	topic := kafkatest.UniqueName(t, "orders")
	bed.Source.CreateTopic(t, topic, 4, nil)
	missing := kafkatest.UniqueName(t, "missing")
	dials := 0
	pc := kafkalog.NewPartitionCounts(func() (sarama.Client, error) {
		dials++
		cfg := bed.Source.SaramaConfig()
		cfg.Metadata.AllowAutoTopicCreation = false
		cfg.Metadata.Full = false
		return kafkalog.NewClient(bed.Source.Brokers(), cfg)
	}, nil)
	defer pc.Close()
	kafkalog.SetPartitionCountsRecheck(pc, 100*time.Millisecond)

	for _, tc := range []struct {
		topic            string
		partition        int32
		wantHas, wantKnw bool
	}{
		{topic, 0, true, true},
		{topic, 3, true, true},
		{topic, 4, false, true},
		{topic, 1 << 30, false, true},
		{topic, -3, false, true},
		{missing, 0, true, false},
	} {
		if has, known := pc.Has(tc.topic, tc.partition); has != tc.wantHas || known != tc.wantKnw {
			t.Errorf("Has(%s, %d) = %v, %v; want %v, %v", tc.topic, tc.partition, has, known, tc.wantHas, tc.wantKnw)
		}
	}
	if dials != 1 {
		t.Errorf("%d clients dialled, want 1", dials)
	}
	admin := bed.Source.Admin(t)
	if topics, err := admin.ListTopics(); err != nil {
		t.Fatal(err)
	} else if _, ok := topics[missing]; ok {
		t.Errorf("asking about %s created it", missing)
	}
	if err := admin.CreatePartitions(topic, 6, nil, false); err != nil {
		t.Fatal(err)
	}
	kafkatest.WaitFor(t, 10*time.Second, "partition 5 seen once added", func() error {
		if has, known := pc.Has(topic, 5); !has || !known {
			return fmt.Errorf("Has(%s, 5) = %v, %v", topic, has, known)
		}
		return nil
	})
}
