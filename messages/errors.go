package messages

import (
	"errors"
	"fmt"
)

// Sentinel causes of decode and validation failures; test for them with errors.Is.
var (
	// ErrTruncated means the bytes end inside a field.
	ErrTruncated = errors.New("truncated")
	// ErrNegativeLength means a string length is negative: a null string
	// (length -1) where the schema allows none, or garbage.
	ErrNegativeLength = errors.New("negative length")
	// ErrUnsupportedVersion means a value carries a schema version this
	// package does not know.
	ErrUnsupportedVersion = errors.New("unsupported version")
	// ErrStringTooLong means a string exceeds MaxStringLength bytes, which
	// Kafka's int16-length strings cannot carry.
	ErrStringTooLong = errors.New("string too long")
	// ErrMalformed means bytes that no Kafka writer produces: an overlong
	// varint, or a known tagged field of the wrong size.
	ErrMalformed = errors.New("malformed")
	// ErrTombstone means a null value on a record that always has one, such as
	// a checkpoint. MM2's Java readers crash on these; callers should skip them.
	ErrTombstone = errors.New("tombstone (null value)")
	// ErrImplausible means a record that decodes but whose values no Kafka
	// or MirrorMaker writer produces, such as a negative offset.
	ErrImplausible = errors.New("implausible value")
)

// DecodeError reports where decoding a record key or value failed.
type DecodeError struct {
	// Record names the key or value being decoded, e.g. "checkpoint value".
	Record string
	// Field is the schema's name of the field that failed, e.g. "metadata";
	// empty when the whole key or value is at fault.
	Field string
	// Offset is the byte offset in the key or value at which that field starts.
	Offset int
	// Err is the cause; it is or wraps one of the sentinel errors above.
	Err error
}

func (e *DecodeError) Error() string {
	if e.Field == "" { // the whole key or value is at fault, e.g. a tombstone
		return fmt.Sprintf("decode %s: %v", e.Record, e.Err)
	}
	return fmt.Sprintf("decode %s: field %s at byte %d: %v", e.Record, e.Field, e.Offset, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }
