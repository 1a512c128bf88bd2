package messages

import "fmt"

// Heartbeat is MirrorMaker 2's record on the heartbeats topic: at Timestamp
// the source cluster's heartbeat reached the target cluster.
//
// Key: sourceClusterAlias STRING, targetClusterAlias STRING.
// Value: version INT16 (0), then timestamp INT64 (ms since the epoch).
type Heartbeat struct {
	SourceClusterAlias string
	TargetClusterAlias string
	Timestamp          int64
}

// heartbeatVersion is the only heartbeat value version MM2 has defined.
const heartbeatVersion = 0

const (
	heartbeatKeyRecord   = "heartbeat key"
	heartbeatValueRecord = "heartbeat value"
)

// Validate reports whether h can be encoded: its aliases must fit Kafka strings.
func (h Heartbeat) Validate() error {
	if err := checkString("heartbeat", "sourceClusterAlias", h.SourceClusterAlias); err != nil {
		return err
	}
	return checkString("heartbeat", "targetClusterAlias", h.TargetClusterAlias)
}

// Key returns the record key, byte for byte as MM2 writes it.
// It panics if h is not valid (see Validate).
func (h Heartbeat) Key() []byte {
	b := make([]byte, 0, stringSize(h.SourceClusterAlias)+stringSize(h.TargetClusterAlias))
	b = appendString(b, "heartbeat sourceClusterAlias", h.SourceClusterAlias)
	return appendString(b, "heartbeat targetClusterAlias", h.TargetClusterAlias)
}

// Value returns the record value (version 0), byte for byte as MM2 writes it.
func (h Heartbeat) Value() []byte {
	b := make([]byte, 0, 2+8)
	b = appendInt16(b, heartbeatVersion)
	return appendInt64(b, h.Timestamp)
}

// DecodeHeartbeat decodes a heartbeat record. Like DecodeCheckpoint, it
// ignores trailing bytes, rejects versions other than 0 (MM2 reads any
// version as 0) and tombstones. Errors are *DecodeError.
func DecodeHeartbeat(key, value []byte) (Heartbeat, error) {
	k := newDecoder(heartbeatKeyRecord, key)
	var h Heartbeat
	h.SourceClusterAlias = k.string("sourceClusterAlias")
	h.TargetClusterAlias = k.string("targetClusterAlias")
	if k.err != nil {
		return Heartbeat{}, k.err
	}
	if value == nil {
		return Heartbeat{}, nullValue(heartbeatValueRecord)
	}
	v := newDecoder(heartbeatValueRecord, value)
	if version := v.int16("version"); v.err == nil && version != heartbeatVersion {
		v.fail("version", 0, fmt.Errorf("%w %d", ErrUnsupportedVersion, version))
	}
	h.Timestamp = v.int64("timestamp")
	if v.err != nil {
		return Heartbeat{}, v.err
	}
	return h, nil
}
