package messages

import "unicode/utf16"

// GroupPartition is the partition of __consumer_offsets that holds group's
// commits when the topic has n partitions: Kafka's group coordinator takes
// Utils.abs(groupId.hashCode()) % n, with Java's String.hashCode over the
// UTF-16 code units of the name and Utils.abs mapping Integer.MIN_VALUE to 0.
// checkpointd shards every stage by it, so that a group's checkpoint state
// and target commits live with the instance that reads its source commits.
func GroupPartition(group string, n int32) int32 {
	if n <= 0 {
		return 0
	}
	var h int32
	for _, r := range group {
		if r < 0x10000 {
			h = 31*h + int32(r)
			continue
		}
		hi, lo := utf16.EncodeRune(r)
		h = 31*h + int32(hi)
		h = 31*h + int32(lo)
	}
	if h < 0 {
		if h == -h { // math.MinInt32: Utils.abs gives 0
			h = 0
		} else {
			h = -h
		}
	}
	return h % n
}
