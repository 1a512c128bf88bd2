package targetgroups

import (
	"strings"
	"testing"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

func orders(p int32) messages.TopicPartition {
	return messages.TopicPartition{Topic: "src.orders", Partition: p}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestClassicGroupState(t *testing.T) {
	member := map[string]*sarama.GroupMemberDescription{"m-1": {}}
	tests := []struct {
		name string
		d    sarama.GroupDescription
		want GroupState
	}{
		{"unknown group is Dead without members", sarama.GroupDescription{GroupId: "g", State: "Dead"},
			GroupState{Group: "g", State: targetgroup.StateNotFound}},
		{"simple group", sarama.GroupDescription{GroupId: "g", State: "Empty"},
			GroupState{Group: "g", State: targetgroup.StateEmpty, Protocol: ProtocolClassic}},
		{"stable group", sarama.GroupDescription{GroupId: "g", State: "Stable", ProtocolType: "consumer", Members: member},
			GroupState{Group: "g", State: "Stable", Protocol: ProtocolClassic, Members: 1, Active: true}},
		{"rebalancing group", sarama.GroupDescription{GroupId: "g", State: "PreparingRebalance"},
			GroupState{Group: "g", State: "PreparingRebalance", Protocol: ProtocolClassic, Active: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := classicGroupState(&tc.d); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestFailedDescribeIsActive(t *testing.T) {
	s := failedGroupState("g", sarama.ErrConsumerCoordinatorNotAvailable)
	if !s.Active || s.Target().Writable() {
		t.Fatalf("a failed describe must never look idle: %+v", s)
	}
}

func TestCommittedOffsets(t *testing.T) {
	v8 := &sarama.OffsetFetchResponse{Version: 8}
	v8.AddGroupBlock("g", "src.orders", 0, &sarama.OffsetFetchResponseBlock{Offset: 42, LeaderEpoch: -1})
	v8.AddGroupBlock("g", "src.orders", 1, &sarama.OffsetFetchResponseBlock{Offset: -1, LeaderEpoch: -1})
	got, err := committedOffsets(v8, "g")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[orders(0)] != 42 {
		t.Errorf("v8: got %v, want only src.orders-0 at 42", got)
	}

	v7 := &sarama.OffsetFetchResponse{Version: 7}
	v7.AddBlock("src.orders", 2, &sarama.OffsetFetchResponseBlock{Offset: 7})
	if got, err := committedOffsets(v7, "g"); err != nil || got[orders(2)] != 7 {
		t.Errorf("v7: got %v, %v", got, err)
	}

	notFound := &sarama.OffsetFetchResponse{Version: 8, Groups: []sarama.OffsetFetchResponseGroup{{GroupId: "g", Err: sarama.ErrGroupIDNotFound}}}
	if got, err := committedOffsets(notFound, "g"); err != nil || len(got) != 0 {
		t.Errorf("GROUP_ID_NOT_FOUND (kfake) should read as no offsets: %v, %v", got, err)
	}

	denied := &sarama.OffsetFetchResponse{Version: 8, Groups: []sarama.OffsetFetchResponseGroup{{GroupId: "g", Err: sarama.ErrGroupAuthorizationFailed}}}
	if _, err := committedOffsets(denied, "g"); err == nil || !contains(err.Error(), "DESCRIBE on group") {
		t.Errorf("authorization failure: %v", err)
	}

	bad := &sarama.OffsetFetchResponse{Version: 8}
	bad.AddGroupBlock("g", "src.orders", 0, &sarama.OffsetFetchResponseBlock{Err: sarama.ErrUnstableOffsetCommit})
	if _, err := committedOffsets(bad, "g"); err == nil {
		t.Error("a partition error must fail the read")
	}
}
