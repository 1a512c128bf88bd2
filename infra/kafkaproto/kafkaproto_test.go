package kafkaproto

import (
	"testing"

	"github.com/IBM/sarama"
)

func TestVersions(t *testing.T) {
	for _, tt := range []struct {
		request string
		pick    func(sarama.KafkaVersion) int16
		kafka   sarama.KafkaVersion
		want    int16
	}{
		{"ListGroups", ListGroups, sarama.V4_1_0_0, 5},
		{"ListGroups", ListGroups, sarama.V3_8_0_0, 5},
		{"ListGroups", ListGroups, sarama.V3_7_0_0, 4},
		{"ListGroups", ListGroups, sarama.V2_6_0_0, 4},
		{"ListGroups", ListGroups, sarama.V2_5_0_0, 3},
		{"ListGroups", ListGroups, sarama.V2_4_0_0, 3},
		{"ListGroups", ListGroups, sarama.V2_0_0_0, 2},
		{"ListGroups", ListGroups, sarama.V1_0_0_0, 1},
		{"ListGroups", ListGroups, sarama.V0_10_2_0, 0},
		{"DescribeGroups", DescribeGroups, sarama.V4_1_0_0, 5},
		{"DescribeGroups", DescribeGroups, sarama.V2_4_0_0, 5},
		{"DescribeGroups", DescribeGroups, sarama.V2_3_0_0, 3},
		{"DescribeGroups", DescribeGroups, sarama.V2_2_0_0, 2},
		{"DescribeGroups", DescribeGroups, sarama.V1_1_0_0, 1},
		{"DescribeGroups", DescribeGroups, sarama.V1_0_0_0, 0},
		{"Fetch", Fetch, sarama.V4_1_0_0, 12},
		{"Fetch", Fetch, sarama.V2_7_0_0, 12},
		{"Fetch", Fetch, sarama.V2_6_0_0, 11},
		{"Fetch", Fetch, sarama.V2_4_0_0, 11},
		{"Fetch", Fetch, sarama.V2_2_0_0, 10},
		{"Fetch", Fetch, sarama.V2_0_0_0, 7},
		{"Fetch", Fetch, sarama.V1_1_0_0, 7},
		{"Fetch", Fetch, sarama.V1_0_0_0, 5},
		{"Fetch", Fetch, sarama.V0_10_2_0, 0},
	} {
		if got := tt.pick(tt.kafka); got != tt.want {
			t.Errorf("%s for Kafka %s = v%d, want v%d", tt.request, tt.kafka, got, tt.want)
		}
	}
}

// A table must be newest first: a step out of order would hide the ones
// after it.
func TestTablesNewestFirst(t *testing.T) {
	for name, tab := range map[string]table{"ListGroups": listGroups, "DescribeGroups": describeGroups, "Fetch": fetch} {
		for i := 1; i < len(tab); i++ {
			prev, s := tab[i-1], tab[i]
			if !prev.since.IsAtLeast(s.since) || prev.since == s.since || prev.version <= s.version {
				t.Errorf("%s: step %d (Kafka %s, v%d) is not older and lower than step %d (Kafka %s, v%d)",
					name, i, s.since, s.version, i-1, prev.since, prev.version)
			}
		}
	}
}

// A one-off fetch asks for one partition outside any fetch session, with
// the isolation level where the version carries one.
func TestFetchOne(t *testing.T) {
	for _, tt := range []struct {
		kv          sarama.KafkaVersion
		wantSession bool // SessionEpoch -1: no fetch session
		wantIsolate bool
	}{
		{sarama.V4_1_0_0, true, true},
		{sarama.V0_11_0_0, false, true},
		{sarama.V0_10_0_0, false, false},
	} {
		req := FetchOne(tt.kv, sarama.ReadCommitted, "t", 3, 42, 1024, 1, 500)
		if req.Version != Fetch(tt.kv) || req.MaxBytes != 1024 || req.MinBytes != 1 || req.MaxWaitTime != 500 {
			t.Errorf("%s: request %+v", tt.kv, req)
		}
		if got := req.SessionEpoch == -1; got != tt.wantSession {
			t.Errorf("%s: outside a fetch session = %v, want %v", tt.kv, got, tt.wantSession)
		}
		if got := req.Isolation == sarama.ReadCommitted; got != tt.wantIsolate {
			t.Errorf("%s: isolation read_committed = %v, want %v", tt.kv, got, tt.wantIsolate)
		}
	}
}
