package messages

import "fmt"

// Checkpoint is MirrorMaker 2's record on the <source>.checkpoints.internal
// topic of the target cluster: consumer group Group committed UpstreamOffset
// on the source, which translates to DownstreamOffset on TopicPartition.
//
// Key: group STRING, topic STRING, partition INT32. Value: version INT16 (0),
// then upstreamOffset INT64, offset INT64 (downstream), metadata STRING.
type Checkpoint struct {
	Group            string
	TopicPartition   // the downstream (target) topic name, as renamed by the replication policy
	UpstreamOffset   int64
	DownstreamOffset int64
	Metadata         string // the source commit's metadata, carried to the target commit
}

// checkpointVersion is the only checkpoint value version MM2 has defined.
const checkpointVersion = 0

const (
	checkpointKeyRecord   = "checkpoint key"
	checkpointValueRecord = "checkpoint value"
)

// String renders c like MM2's Checkpoint.toString. It is needed because the
// embedded TopicPartition's String would otherwise print only the partition.
func (c Checkpoint) String() string {
	return fmt.Sprintf("Checkpoint{consumerGroupId=%s, topicPartition=%s, upstreamOffset=%d, downstreamOffset=%d, metadata=%s}",
		c.Group, c.TopicPartition, c.UpstreamOffset, c.DownstreamOffset, c.Metadata)
}

// Validate reports whether c can be encoded: its strings must fit Kafka strings.
func (c Checkpoint) Validate() error {
	for _, f := range [...]struct{ name, s string }{
		{"group", c.Group}, {"topic", c.Topic}, {"metadata", c.Metadata},
	} {
		if err := checkString("checkpoint", f.name, f.s); err != nil {
			return err
		}
	}
	return nil
}

// Key returns the record key, byte for byte as MM2 writes it.
// It panics if c is not valid (see Validate).
func (c Checkpoint) Key() []byte {
	b := make([]byte, 0, stringSize(c.Group)+stringSize(c.Topic)+4)
	b = appendString(b, "checkpoint group", c.Group)
	b = appendString(b, "checkpoint topic", c.Topic)
	return appendInt32(b, c.Partition)
}

// Value returns the record value (version 0), byte for byte as MM2 writes it.
// It panics if c is not valid (see Validate).
func (c Checkpoint) Value() []byte {
	b := make([]byte, 0, c.ValueSize())
	b = appendInt16(b, checkpointVersion)
	b = appendInt64(b, c.UpstreamOffset)
	b = appendInt64(b, c.DownstreamOffset)
	return appendString(b, "checkpoint metadata", c.Metadata)
}

// ValueSize is the length of Value's result.
func (c Checkpoint) ValueSize() int { return 2 + 8 + 8 + stringSize(c.Metadata) }

// DecodeCheckpoint decodes a checkpoint record. Like MM2 it ignores bytes
// after the last field. Unlike MM2, which decodes any version as version 0
// (its version check is a Java assert, off in production), it rejects
// versions other than 0 with ErrUnsupportedVersion: a future format should
// not be misread. A tombstone fails with ErrTombstone. Errors are *DecodeError.
func DecodeCheckpoint(key, value []byte) (Checkpoint, error) {
	k := newDecoder(checkpointKeyRecord, key)
	var c Checkpoint
	c.Group = k.string("group")
	c.Topic = k.string("topic")
	c.Partition = k.int32("partition")
	if k.err != nil {
		return Checkpoint{}, k.err
	}
	if value == nil {
		return Checkpoint{}, nullValue(checkpointValueRecord)
	}
	v := newDecoder(checkpointValueRecord, value)
	if version := v.int16("version"); v.err == nil && version != checkpointVersion {
		v.fail("version", 0, fmt.Errorf("%w %d", ErrUnsupportedVersion, version))
	}
	c.UpstreamOffset = v.int64("upstreamOffset")
	c.DownstreamOffset = v.int64("offset")
	c.Metadata = v.string("metadata")
	if v.err != nil {
		return Checkpoint{}, v.err
	}
	return c, nil
}
