package messages

import (
	"encoding/binary"
	"fmt"
)

// OffsetsRecordKind says what a __consumer_offsets record is about.
type OffsetsRecordKind int

const (
	// UnknownRecord is a record type this package does not decode: KIP-848
	// consumer groups, share and streams groups, and types added later.
	// Readers skip these; they are not errors.
	UnknownRecord OffsetsRecordKind = iota
	// OffsetCommitRecord is a group's committed offset on one partition
	// (record types 0 and 1).
	OffsetCommitRecord
	// GroupMetadataRecord is a classic group's metadata (record type 2). Only
	// its key and the value's version are decoded.
	GroupMetadataRecord
)

func (k OffsetsRecordKind) String() string {
	switch k {
	case OffsetCommitRecord:
		return "offset commit"
	case GroupMetadataRecord:
		return "group metadata"
	case UnknownRecord:
		return "unknown"
	}
	return fmt.Sprintf("OffsetsRecordKind(%d)", int(k))
}

// Record types: the int16 that starts every __consumer_offsets key.
const (
	legacyOffsetCommitType = 0 // written by very old brokers; same layout as 1
	offsetCommitType       = 1
	groupMetadataType      = 2
)

// OffsetCommitValue versions: 0–3 are classic, 4 (Kafka 4.1+) is flexible.
const (
	firstFlexibleCommitVersion = 4
	maxCommitVersion           = 4
)

// The tagged field of a flexible OffsetCommitValue that holds the
// topic's UUID (KAFKA-19141).
const (
	topicIDTag  = 0
	topicIDSize = 16 // a UUID
)

const (
	offsetsKeyRecord         = "offsets key"
	offsetCommitValueRecord  = "offset commit value"
	groupMetadataValueRecord = "group metadata value"
)

// OffsetsRecord is one decoded record of the __consumer_offsets topic.
type OffsetsRecord struct {
	Kind OffsetsRecordKind
	// KeyVersion is the int16 that starts the key: the record type (0 or 1
	// for commits, 2 for group metadata). Kafka before 4.0 called it the key
	// version.
	KeyVersion int16
	// ValueVersion is the value's schema version; -1 for a tombstone and for
	// UnknownRecord, whose value is not read.
	ValueVersion int16

	Group          string // for commits and group metadata
	TopicPartition        // for commits

	// Tombstone reports a null value: the commit (or group) was deleted.
	Tombstone bool

	// The commit itself, for an OffsetCommitRecord that is not a tombstone.
	Offset          int64    // the next offset the group will read
	LeaderEpoch     int32    // the source cluster's epoch; -1 when unknown or before v3
	Metadata        string   // never null in Kafka: a null commit metadata is stored as ""
	CommitTimestamp int64    // broker time of the commit, ms since the epoch
	ExpireTimestamp int64    // only v1 has one; -1 otherwise
	TopicID         [16]byte // the topic's UUID, v4 (Kafka 4.1+) only; zero when absent
}

// DecodeOffsetsRecord decodes a record of the __consumer_offsets topic, given
// its key and its value (nil for a tombstone). Record types other than offset
// commits and group metadata come back as UnknownRecord without error. It
// accepts OffsetCommitValue versions 0 to 4, skips tagged fields it does not
// know, and ignores trailing bytes, as Kafka does. Errors are *DecodeError.
func DecodeOffsetsRecord(key, value []byte) (OffsetsRecord, error) {
	k := newDecoder(offsetsKeyRecord, key)
	recordType := k.int16("type")
	if k.err != nil {
		return OffsetsRecord{}, k.err
	}
	r := OffsetsRecord{
		KeyVersion:      recordType,
		ValueVersion:    -1,
		Tombstone:       value == nil,
		LeaderEpoch:     -1,
		ExpireTimestamp: -1,
	}
	switch recordType {
	case legacyOffsetCommitType, offsetCommitType:
		r.Kind = OffsetCommitRecord
		r.Group = k.string("group")
		r.Topic = k.string("topic")
		r.Partition = k.int32("partition")
		if k.err == nil && !r.Tombstone {
			if err := r.decodeCommitValue(value); err != nil {
				return OffsetsRecord{}, err
			}
		}
	case groupMetadataType:
		r.Kind = GroupMetadataRecord
		r.Group = k.string("group")
		if k.err == nil && !r.Tombstone {
			v := newDecoder(groupMetadataValueRecord, value)
			if r.ValueVersion = v.int16("version"); v.err != nil {
				return OffsetsRecord{}, v.err
			}
		}
	default:
		r.Kind = UnknownRecord
	}
	if k.err != nil {
		return OffsetsRecord{}, k.err
	}
	return r, nil
}

// String renders r for logs and humans, showing what its kind holds. It is
// needed because the embedded TopicPartition's String would otherwise print
// only the partition.
func (r OffsetsRecord) String() string {
	switch r.Kind {
	case OffsetCommitRecord:
		if r.Tombstone {
			return fmt.Sprintf("offset commit %q %s: deleted", r.Group, r.TopicPartition)
		}
		s := fmt.Sprintf("offset commit %q %s: offset=%d leaderEpoch=%d metadata=%q commitTimestamp=%d",
			r.Group, r.TopicPartition, r.Offset, r.LeaderEpoch, r.Metadata, r.CommitTimestamp)
		if r.ExpireTimestamp != -1 {
			s += fmt.Sprintf(" expireTimestamp=%d", r.ExpireTimestamp)
		}
		if r.TopicID != ([16]byte{}) {
			s += fmt.Sprintf(" topicId=%x", r.TopicID)
		}
		return s + fmt.Sprintf(" (v%d)", r.ValueVersion)
	case GroupMetadataRecord:
		if r.Tombstone {
			return fmt.Sprintf("group metadata %q: deleted", r.Group)
		}
		return fmt.Sprintf("group metadata %q (v%d)", r.Group, r.ValueVersion)
	}
	return fmt.Sprintf("record type %d", r.KeyVersion)
}

func (r *OffsetsRecord) decodeCommitValue(value []byte) error {
	d := newDecoder(offsetCommitValueRecord, value)
	version := d.int16("version")
	if d.err == nil && (version < 0 || version > maxCommitVersion) {
		d.fail("version", 0, fmt.Errorf("%w %d", ErrUnsupportedVersion, version))
	}
	r.ValueVersion = version
	r.Offset = d.int64("offset")
	if version >= 3 {
		r.LeaderEpoch = d.int32("leaderEpoch")
	}
	if version >= firstFlexibleCommitVersion {
		r.Metadata = d.compactString("metadata")
	} else {
		r.Metadata = d.string("metadata")
	}
	r.CommitTimestamp = d.int64("commitTimestamp")
	if version == 1 {
		r.ExpireTimestamp = d.int64("expireTimestamp")
	}
	if version >= firstFlexibleCommitVersion {
		r.decodeTaggedFields(&d)
	}
	return d.err
}

// decodeTaggedFields reads the tagged-field section that ends a flexible
// value: a count, then per field a tag, a size and the bytes. It keeps the
// topic id and skips tags it does not know, as Kafka's readers do.
func (r *OffsetsRecord) decodeTaggedFields(d *decoder) {
	n := d.uvarint("taggedFields", d.off)
	for range n {
		start := d.off
		tag := d.uvarint("taggedFields", start)
		size := d.uvarint("taggedFields", start)
		if d.err != nil {
			return
		}
		switch {
		case tag != topicIDTag:
			d.next("taggedFields", start, int(size))
		case size != topicIDSize:
			d.fail("topicId", start, fmt.Errorf("%w: size %d, want %d", ErrMalformed, size, topicIDSize))
		default:
			copy(r.TopicID[:], d.next("topicId", d.off, topicIDSize))
		}
		if d.err != nil {
			return
		}
	}
}

// EncodeOffsetCommitKey returns the __consumer_offsets key (record type 1)
// of group's commit on tp, as brokers write it. It panics if a string is over
// MaxStringLength bytes.
func EncodeOffsetCommitKey(group string, tp TopicPartition) []byte {
	b := make([]byte, 0, 2+stringSize(group)+stringSize(tp.Topic)+4)
	b = appendInt16(b, offsetCommitType)
	b = appendString(b, "offset commit group", group)
	b = appendString(b, "offset commit topic", tp.Topic)
	return appendInt32(b, tp.Partition)
}

// EncodeGroupMetadataKey returns the __consumer_offsets key (record type 2)
// of group's metadata. It panics if group is over MaxStringLength bytes.
func EncodeGroupMetadataKey(group string) []byte {
	b := make([]byte, 0, 2+stringSize(group))
	b = appendInt16(b, groupMetadataType)
	return appendString(b, "group metadata group", group)
}

// EncodeOffsetCommitValue returns the OffsetCommitValue of r's commit at the
// given version (0 to 4), as brokers write it. Fields the version lacks are
// left out silently, like Kafka does (they are "ignorable"): the leader epoch
// before v3, the expire timestamp outside v1, the topic id before v4. A zero
// TopicID is not written. The error wraps ErrUnsupportedVersion or
// ErrStringTooLong.
func EncodeOffsetCommitValue(version int16, r OffsetsRecord) ([]byte, error) {
	if version < 0 || version > maxCommitVersion {
		return nil, fmt.Errorf("encode offset commit value: %w %d", ErrUnsupportedVersion, version)
	}
	if err := checkString("offset commit", "metadata", r.Metadata); err != nil {
		return nil, err
	}
	b := make([]byte, 0, 2+8+4+binary.MaxVarintLen32+len(r.Metadata)+8+8+3+topicIDSize)
	b = appendInt16(b, version)
	b = appendInt64(b, r.Offset)
	if version >= 3 {
		b = appendInt32(b, r.LeaderEpoch)
	}
	if version >= firstFlexibleCommitVersion {
		b = appendCompactString(b, "offset commit metadata", r.Metadata)
	} else {
		b = appendString(b, "offset commit metadata", r.Metadata)
	}
	b = appendInt64(b, r.CommitTimestamp)
	if version == 1 {
		b = appendInt64(b, r.ExpireTimestamp)
	}
	if version >= firstFlexibleCommitVersion {
		if r.TopicID == ([16]byte{}) {
			b = append(b, 0) // no tagged fields
		} else {
			b = append(b, 1, topicIDTag, topicIDSize) // count, tag, size: one-byte varints
			b = append(b, r.TopicID[:]...)
		}
	}
	return b, nil
}
