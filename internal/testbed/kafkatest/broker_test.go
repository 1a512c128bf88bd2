package kafkatest

import (
	"errors"
	"slices"
	"testing"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/messages"
)

// Facts only a Kafka 4.1 broker shows on the wire.
const (
	metadataVersion41IV1 = 27 // MetadataVersion.IBP_4_1_IV1, the 4.1 default at format
	apiFetch             = 1  // 4.0 removed Fetch v0-v3 (KIP-896)
	apiConsumerGroupHB   = 68 // ConsumerGroupHeartbeat, GA in 4.0 (KIP-848)
)

func TestBrokersAreKafka41(t *testing.T) {
	b := Shared(t)
	for _, c := range []*Cluster{b.Source, b.Target} {
		t.Run(c.Alias, func(t *testing.T) {
			broker, err := c.Client(t).Broker(1)
			if err != nil {
				t.Fatalf("broker 1: %v", err)
			}
			resp, err := broker.ApiVersions(&sarama.ApiVersionsRequest{Version: 3, ClientSoftwareName: "kafkatest", ClientSoftwareVersion: "1"})
			if err != nil {
				t.Fatalf("ApiVersions: %v", err)
			}
			apis := make(map[int16]sarama.ApiVersionsResponseKey, len(resp.ApiKeys))
			for _, k := range resp.ApiKeys {
				apis[k.ApiKey] = k
			}
			if fetch, ok := apis[apiFetch]; !ok || fetch.MinVersion != 4 || fetch.MaxVersion < 17 {
				t.Errorf("Fetch versions = %+v, want min 4 (4.x dropped 0-3) and max >= 17", fetch)
			}
			if _, ok := apis[apiConsumerGroupHB]; !ok {
				t.Errorf("broker does not offer ConsumerGroupHeartbeat (api %d)", apiConsumerGroupHB)
			}
			i := slices.IndexFunc(resp.FinalizedFeatures, func(f sarama.FinalizedFeatureKey) bool { return f.Name == "metadata.version" })
			if i < 0 || resp.FinalizedFeatures[i].MaxVersionLevel != metadataVersion41IV1 {
				t.Errorf("finalized features %+v, want metadata.version %d (4.1-IV1)", resp.FinalizedFeatures, metadataVersion41IV1)
			}

			dc, err := broker.DescribeCluster(sarama.NewDescribeClusterRequest(saramaVersion))
			if err != nil {
				t.Fatalf("DescribeCluster: %v", err)
			}
			if dc.Version != 2 || !errors.Is(dc.Err, sarama.ErrNoError) {
				t.Fatalf("DescribeCluster v%d: %v, want v2 (4.x) without error", dc.Version, dc.Err)
			}
			if dc.ClusterID != c.ID {
				t.Errorf("cluster id = %q, want %q as formatted", dc.ClusterID, c.ID)
			}
		})
	}
	if b.Source.ID == b.Target.ID {
		t.Errorf("both clusters have id %s", b.Source.ID)
	}
}

func TestCompactedTopicConfig(t *testing.T) {
	c := Shared(t).Source
	topic := UniqueName(t, "compacted")
	c.CreateTopic(t, topic, 1, map[string]string{"cleanup.policy": "compact"})
	entries, err := c.Admin(t).DescribeConfig(sarama.ConfigResource{
		Type: sarama.TopicResource, Name: topic, ConfigNames: []string{"cleanup.policy"},
	})
	if err != nil {
		t.Fatalf("describe configs of %s: %v", topic, err)
	}
	if len(entries) != 1 || entries[0].Value != "compact" || entries[0].Default {
		t.Fatalf("cleanup.policy entries = %+v, want one non-default \"compact\"", entries)
	}
}

func TestProduceConsumeCommit(t *testing.T) {
	b := Shared(t)
	for _, c := range []*Cluster{b.Source, b.Target} {
		t.Run(c.Alias, func(t *testing.T) {
			topic := UniqueName(t, "pc")
			c.CreateTopic(t, topic, 2, nil)
			first, last := c.Produce(t, topic, 1, 5)
			if first != 0 || last != 4 {
				t.Fatalf("offsets of 5 records on a new partition = %d..%d, want 0..4", first, last)
			}
			if ends := c.EndOffsets(t, topic); ends[0] != 0 || ends[1] != 5 {
				t.Fatalf("end offsets = %v, want map[0:0 1:5]", ends)
			}
			msgs := c.ReadAll(t, topic)
			if len(msgs) != 5 {
				t.Fatalf("read %d records, want 5", len(msgs))
			}
			seen := make(map[string]bool)
			for i, m := range msgs {
				if m.Partition != 1 || m.Offset != int64(i) {
					t.Errorf("record %d at %d/%d, want 1/%d", i, m.Partition, m.Offset, i)
				}
				if seen[string(m.Value)] {
					t.Errorf("value %q repeats", m.Value)
				}
				seen[string(m.Value)] = true
			}

			group := UniqueName(t, "group")
			want := map[messages.TopicPartition]int64{{Topic: topic, Partition: 0}: 0, {Topic: topic, Partition: 1}: 3}
			c.CommitOffsets(t, group, want)
			got := c.CommittedOffsets(t, group)
			if len(got) != len(want) {
				t.Fatalf("committed %v, want %v", got, want)
			}
			for tp, off := range want {
				if got[tp] != off {
					t.Errorf("committed %s = %d, want %d", tp, got[tp], off)
				}
			}
		})
	}
}
