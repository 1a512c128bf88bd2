package compat_test

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/checkpointd/checkpointd/messages"
)

// Values at the edges of MM2's string and number fields, for the vectors
// both sides encode.
var (
	maxASCII  = strings.Repeat("x", messages.MaxStringLength)
	maxUTF8   = strings.Repeat("é", messages.MaxStringLength/2) + "x" // two-byte runes and one ASCII byte
	multibyte = "grüße-日本-🚀"                                          // 2-, 3- and 4-byte UTF-8
	ordersTP  = messages.TopicPartition{Topic: "orders", Partition: 3}
	deadbeef  = [16]byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
)

// unhex decodes hex that may be spaced and split by "|" for readability.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.NewReplacer(" ", "", "|", "").Replace(s))
	if err != nil {
		t.Fatalf("bad hex: %v", err)
	}
	return b
}

func checkpoint(group, topic string, partition int32, upstream, downstream int64, metadata string) messages.Checkpoint {
	return messages.Checkpoint{Group: group, TopicPartition: messages.TopicPartition{Topic: topic, Partition: partition},
		UpstreamOffset: upstream, DownstreamOffset: downstream, Metadata: metadata}
}

// commit is an offset commit of group g1 on orders-3 with value version v.
func commit(v int16, offset int64, epoch int32, metadata string, commitTS, expireTS int64, topicID [16]byte) messages.OffsetsRecord {
	return messages.OffsetsRecord{Kind: messages.OffsetCommitRecord, KeyVersion: 1, ValueVersion: v, Group: "g1",
		TopicPartition: ordersTP, Offset: offset, LeaderEpoch: epoch, Metadata: metadata,
		CommitTimestamp: commitTS, ExpireTimestamp: expireTS, TopicID: topicID}
}
