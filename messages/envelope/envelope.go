// Package envelope maps Kafka records onto Watermill messages and back, so
// handlers can read a record's key, position and tombstone flag without knowing
// which reader delivered it. It also defines the control messages readers send
// to tell handlers that a replay has caught up or a partition was taken away.
package envelope

import (
	"fmt"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
)

// Metadata keys set on every record message. Headers of the Kafka record are
// copied as metadata under their own names (traceparent, for one), so these
// use a prefix no header of ours uses.
const (
	MetaTopic     = "kafka.topic"
	MetaPartition = "kafka.partition"
	MetaOffset    = "kafka.offset"
	MetaTimestamp = "kafka.timestamp_ms"
	MetaKey       = "kafka.key" // raw key bytes held in a Go string
	MetaTombstone = "kafka.tombstone"
	MetaControl   = "checkpointd.control"
)

// HeaderCommitTime is the record header of a checkpoint written by
// checkpointd that holds when the source commit behind it was written, in
// milliseconds since the epoch, so the instance that commits the checkpoint
// into the target group can measure the end-to-end delay. MM2 and
// RemoteClusterUtils read only key and value and ignore it.
const HeaderCommitTime = "checkpointd-commit-time-ms"

// Record is one Kafka record as a reader saw it.
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	Timestamp time.Time
	Key       []byte
	Value     []byte // nil for a tombstone
	Headers   map[string]string
}

// Tombstone reports whether the record has a null value.
func (r Record) Tombstone() bool { return r.Value == nil }

// FromRecord wraps a record in a message. The UUID is the record's position,
// which is unique per topic and cheaper than a random UUID.
func FromRecord(r Record) *message.Message {
	msg := message.NewMessage(r.Topic+"/"+strconv.Itoa(int(r.Partition))+"/"+strconv.FormatInt(r.Offset, 10), r.Value)
	for k, v := range r.Headers {
		msg.Metadata.Set(k, v)
	}
	msg.Metadata.Set(MetaTopic, r.Topic)
	msg.Metadata.Set(MetaPartition, strconv.Itoa(int(r.Partition)))
	msg.Metadata.Set(MetaOffset, strconv.FormatInt(r.Offset, 10))
	msg.Metadata.Set(MetaTimestamp, strconv.FormatInt(r.Timestamp.UnixMilli(), 10))
	msg.Metadata.Set(MetaKey, string(r.Key))
	if r.Value == nil {
		msg.Metadata.Set(MetaTombstone, "true")
	}
	return msg
}

// ToRecord reads a record back out of a message made by FromRecord.
// A message that carries several records (FromRecords) is an error: use
// Records.
func ToRecord(msg *message.Message) (Record, error) {
	if IsBatch(msg) {
		return Record{}, fmt.Errorf("message %s carries %s records: read them with envelope.Records", msg.UUID, msg.Metadata.Get(MetaRecords))
	}
	r := Record{Topic: msg.Metadata.Get(MetaTopic), Key: []byte(msg.Metadata.Get(MetaKey))}
	p, err := strconv.ParseInt(msg.Metadata.Get(MetaPartition), 10, 32)
	if err != nil {
		return Record{}, fmt.Errorf("message %s: partition metadata %q: %w", msg.UUID, msg.Metadata.Get(MetaPartition), err)
	}
	r.Partition = int32(p)
	if r.Offset, err = strconv.ParseInt(msg.Metadata.Get(MetaOffset), 10, 64); err != nil {
		return Record{}, fmt.Errorf("message %s: offset metadata %q: %w", msg.UUID, msg.Metadata.Get(MetaOffset), err)
	}
	if ts := msg.Metadata.Get(MetaTimestamp); ts != "" {
		ms, err := strconv.ParseInt(ts, 10, 64)
		if err != nil {
			return Record{}, fmt.Errorf("message %s: timestamp metadata %q: %w", msg.UUID, ts, err)
		}
		r.Timestamp = time.UnixMilli(ms)
	}
	if msg.Metadata.Get(MetaTombstone) != "true" {
		r.Value = msg.Payload
		if r.Value == nil {
			r.Value = []byte{}
		}
	}
	return r, nil
}

// Control is a signal from a reader to the handlers, not a record.
type Control string

const (
	// CaughtUp: the reader has delivered every record that existed when it
	// started reading the partition (or, with partition -1, the whole topic).
	CaughtUp Control = "caught-up"
	// Assigned: this instance now owns the partition and starts replaying it.
	Assigned Control = "assigned"
	// Revoked: this instance no longer owns the partition.
	Revoked Control = "revoked"
)

// NewControl makes a control message for a partition of a topic; partition -1
// means the whole topic.
func NewControl(c Control, topic string, partition int32) *message.Message {
	msg := message.NewMessage(string(c)+"/"+topic+"/"+strconv.Itoa(int(partition)), nil)
	msg.Metadata.Set(MetaControl, string(c))
	msg.Metadata.Set(MetaTopic, topic)
	msg.Metadata.Set(MetaPartition, strconv.Itoa(int(partition)))
	return msg
}

// ControlOf reports whether msg is a control message, and which.
func ControlOf(msg *message.Message) (c Control, topic string, partition int32, ok bool) {
	v := msg.Metadata.Get(MetaControl)
	if v == "" {
		return "", "", 0, false
	}
	p, err := strconv.ParseInt(msg.Metadata.Get(MetaPartition), 10, 32)
	if err != nil {
		p = -1
	}
	return Control(v), msg.Metadata.Get(MetaTopic), int32(p), true
}
