package messages

import "fmt"

// OffsetSync is MirrorMaker 2's record on the mm2-offset-syncs.<target>.internal
// topic: record UpstreamOffset of the source partition was replicated to
// DownstreamOffset on the target.
//
// Key: topic STRING, partition INT32. Value: upstreamOffset INT64,
// offset INT64 (downstream), with no version header.
type OffsetSync struct {
	TopicPartition   // the upstream (source) topic name
	UpstreamOffset   int64
	DownstreamOffset int64
}

const (
	offsetSyncKeyRecord   = "offset sync key"
	offsetSyncValueRecord = "offset sync value"
)

// String renders s like MM2's OffsetSync.toString. It is needed because the
// embedded TopicPartition's String would otherwise print only the partition.
func (s OffsetSync) String() string {
	return fmt.Sprintf("OffsetSync{topicPartition=%s, upstreamOffset=%d, downstreamOffset=%d}",
		s.TopicPartition, s.UpstreamOffset, s.DownstreamOffset)
}

// Validate reports whether s can be encoded: its topic must fit a Kafka string.
func (s OffsetSync) Validate() error {
	return checkString("offset sync", "topic", s.Topic)
}

// Key returns the record key, byte for byte as MM2 writes it.
// It panics if s is not valid (see Validate).
func (s OffsetSync) Key() []byte {
	b := make([]byte, 0, stringSize(s.Topic)+4)
	b = appendString(b, "offset sync topic", s.Topic)
	return appendInt32(b, s.Partition)
}

// Value returns the record value, byte for byte as MM2 writes it.
func (s OffsetSync) Value() []byte {
	b := make([]byte, 0, 16)
	b = appendInt64(b, s.UpstreamOffset)
	return appendInt64(b, s.DownstreamOffset)
}

// DecodeOffsetSync decodes an offset-sync record. Like MM2 it ignores bytes
// after the last field; errors are *DecodeError.
func DecodeOffsetSync(key, value []byte) (OffsetSync, error) {
	k := newDecoder(offsetSyncKeyRecord, key)
	var s OffsetSync
	s.Topic = k.string("topic")
	s.Partition = k.int32("partition")
	if k.err != nil {
		return OffsetSync{}, k.err
	}
	if value == nil {
		return OffsetSync{}, nullValue(offsetSyncValueRecord)
	}
	v := newDecoder(offsetSyncValueRecord, value)
	s.UpstreamOffset = v.int64("upstreamOffset")
	s.DownstreamOffset = v.int64("offset")
	if v.err != nil {
		return OffsetSync{}, v.err
	}
	return s, nil
}

// Check reports a sync that decodes but that no MirrorMaker writes: a
// negative partition or offset. Java's reader would apply it; checkpointd
// skips it (errors.Is(err, ErrImplausible)), since a negative downstream
// offset would become a checkpoint and a negative partition can never match
// a commit.
func (s OffsetSync) Check() error {
	switch {
	case s.Partition < 0:
		return fmt.Errorf("offset sync of %s: partition %d: %w", s.Topic, s.Partition, ErrImplausible)
	case s.UpstreamOffset < 0:
		return fmt.Errorf("offset sync of %s: upstreamOffset %d: %w", s.TopicPartition, s.UpstreamOffset, ErrImplausible)
	case s.DownstreamOffset < 0:
		return fmt.Errorf("offset sync of %s: offset %d: %w", s.TopicPartition, s.DownstreamOffset, ErrImplausible)
	}
	return nil
}

// TrailingBytes is how many bytes key and value, which decoded as s, carry
// after their last field: accepted as MM2 does, but worth counting.
func (s OffsetSync) TrailingBytes(key, value []byte) int {
	return max(len(key)-stringSize(s.Topic)-4, 0) + max(len(value)-16, 0)
}
