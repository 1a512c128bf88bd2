package messages

import (
	"encoding/binary"
	"unicode/utf16"
	"unicode/utf8"
)

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

// GroupPartitionOfKey is GroupPartition of the group a checkpoint record's
// key names, read in place: the readers that every instance runs over the
// whole checkpoints topic drop other owners' records with it, without
// decoding them. ok is false for a key too short to name a group.
func GroupPartitionOfKey(key []byte, n int32) (p int32, ok bool) {
	if len(key) < 2 {
		return 0, false
	}
	size := int(int16(binary.BigEndian.Uint16(key)))
	if size < 0 || len(key) < 2+size {
		return 0, false
	}
	group := key[2 : 2+size]
	if n <= 0 {
		return 0, true
	}
	var h int32
	for len(group) > 0 {
		r, w := utf8.DecodeRune(group)
		group = group[w:]
		if r < 0x10000 {
			h = 31*h + int32(r)
			continue
		}
		hi, lo := utf16.EncodeRune(r)
		h = 31*h + int32(hi)
		h = 31*h + int32(lo)
	}
	if h < 0 {
		if h == -h {
			h = 0
		} else {
			h = -h
		}
	}
	return h % n, true
}
