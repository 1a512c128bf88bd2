package adminpoll

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/messages"
)

func tp(topic string, p int32) messages.TopicPartition {
	return messages.TopicPartition{Topic: topic, Partition: p}
}

func at(offset int64) *commit { return &commit{Offset: offset, LeaderEpoch: -1} }

func TestDiff(t *testing.T) {
	told := snapshot{
		"a": {tp("t", 0): *at(10), tp("t", 1): *at(20)},
		"b": {tp("t", 0): *at(5)},
		"c": {tp("t", 0): *at(1)},
	}
	tests := []struct {
		name string
		told snapshot
		poll pollResult
		want []change
	}{
		{
			name: "first poll tells everything",
			told: snapshot{},
			poll: pollResult{complete: true, offsets: map[string]groupOffsets{
				"b": {tp("t", 0): *at(5)},
				"a": {tp("t", 1): *at(20), tp("t", 0): *at(10)},
			}},
			want: []change{{"a", tp("t", 0), at(10)}, {"a", tp("t", 1), at(20)}, {"b", tp("t", 0), at(5)}},
		},
		{
			name: "nothing changed, nothing told",
			told: told,
			poll: pollResult{complete: true, offsets: map[string]groupOffsets{
				"a": told["a"], "b": told["b"], "c": told["c"],
			}},
		},
		{
			name: "moved offset, new metadata, new partition",
			told: told,
			poll: pollResult{complete: true, offsets: map[string]groupOffsets{
				"a": {tp("t", 0): *at(11), tp("t", 1): {Offset: 20, LeaderEpoch: -1, Metadata: "m"}, tp("u", 0): *at(0)},
				"b": told["b"], "c": told["c"],
			}},
			want: []change{
				{"a", tp("t", 0), at(11)},
				{"a", tp("t", 1), &commit{Offset: 20, LeaderEpoch: -1, Metadata: "m"}},
				{"a", tp("u", 0), at(0)},
			},
		},
		{
			name: "a partition's offset vanished",
			told: told,
			poll: pollResult{complete: true, offsets: map[string]groupOffsets{
				"a": {tp("t", 1): *at(20)}, "b": told["b"], "c": told["c"],
			}},
			want: []change{{"a", tp("t", 0), nil}},
		},
		{
			name: "a group listed without offsets loses them all",
			told: told,
			poll: pollResult{complete: true, offsets: map[string]groupOffsets{
				"a": {}, "b": told["b"], "c": told["c"],
			}},
			want: []change{{"a", tp("t", 0), nil}, {"a", tp("t", 1), nil}},
		},
		{
			name: "a deleted group is no longer listed",
			told: told,
			poll: pollResult{complete: true, offsets: map[string]groupOffsets{"a": told["a"], "b": told["b"]}},
			want: []change{{"c", tp("t", 0), nil}},
		},
		{
			name: "a failed group keeps what was told",
			told: told,
			poll: pollResult{complete: true,
				offsets: map[string]groupOffsets{"a": told["a"], "c": told["c"]},
				failed:  map[string]error{"b": errors.New("coordinator not available")}},
		},
		{
			name: "an incomplete listing deletes nothing it did not see",
			told: told,
			poll: pollResult{complete: false, offsets: map[string]groupOffsets{
				"a": {tp("t", 0): *at(12), tp("t", 1): *at(20)},
			}},
			want: []change{{"a", tp("t", 0), at(12)}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := diff(tc.told, tc.poll)
			if !slices.EqualFunc(got, tc.want, equalChange) {
				t.Errorf("diff =\n%v\nwant\n%v", show(got), show(tc.want))
			}
		})
	}
}

func TestSnapshotApply(t *testing.T) {
	s := snapshot{}
	s.apply(change{"g", tp("t", 0), at(3)})
	s.apply(change{"g", tp("t", 1), at(4)})
	s.apply(change{"g", tp("t", 0), nil})
	if len(s["g"]) != 1 || s["g"][tp("t", 1)].Offset != 4 {
		t.Fatalf("after one deletion: %v", s)
	}
	s.apply(change{"g", tp("t", 1), nil})
	if _, ok := s["g"]; ok {
		t.Fatalf("a group without commits must be forgotten: %v", s)
	}
}

func equalChange(a, b change) bool {
	if a.Group != b.Group || a.TP != b.TP || (a.Commit == nil) != (b.Commit == nil) {
		return false
	}
	return a.Commit == nil || *a.Commit == *b.Commit
}

func show(cs []change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		if c.Commit == nil {
			out[i] = fmt.Sprintf("%s/%s deleted", c.Group, c.TP)
		} else {
			out[i] = fmt.Sprintf("%s/%s=%+v", c.Group, c.TP, *c.Commit)
		}
	}
	return out
}

// A poll whose every offset fetch was refused names DESCRIBE on a group.
func TestPollOutcomeNamesPermission(t *testing.T) {
	err := pollOutcome(pollResult{failed: map[string]error{"app": sarama.ErrGroupAuthorizationFailed}}, nil)
	want := `fetching offsets of group "app" (and 0 more): ` + sarama.ErrGroupAuthorizationFailed.Error() + ` (authorization: DESCRIBE on group "app" is needed)`
	if err == nil || err.Error() != want || !errors.Is(err, sarama.ErrGroupAuthorizationFailed) {
		t.Errorf("got  %v\nwant %s", err, want)
	}
	if err := pollOutcome(pollResult{offsets: map[string]groupOffsets{"b": nil}, failed: map[string]error{"app": sarama.ErrGroupAuthorizationFailed}}, nil); err != nil {
		t.Errorf("a poll that read a group: %v", err)
	}
}
