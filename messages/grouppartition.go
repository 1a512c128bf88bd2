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
	var h int32
	for _, r := range group {
		h = javaHash(h, r)
	}
	return absMod(h, n)
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
	var h int32
	for group := key[2 : 2+size]; len(group) > 0; {
		r, w := utf8.DecodeRune(group)
		group = group[w:]
		h = javaHash(h, r)
	}
	return absMod(h, n), true
}

// javaHash adds r to a Java String.hashCode, as its UTF-16 code units.
func javaHash(h int32, r rune) int32 {
	if r < 0x10000 {
		return 31*h + int32(r)
	}
	hi, lo := utf16.EncodeRune(r)
	return 31*(31*h+int32(hi)) + int32(lo)
}

// absMod is Kafka's Utils.abs(h) % n (0 for n <= 0): Utils.abs maps
// Integer.MIN_VALUE to 0.
func absMod(h, n int32) int32 {
	if n <= 0 {
		return 0
	}
	if h < 0 {
		if h == -h { // math.MinInt32
			return 0
		}
		h = -h
	}
	return h % n
}
