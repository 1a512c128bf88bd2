package messages

import (
	"encoding/binary"
	"fmt"
	"math"
)

// MaxStringLength is the longest string, in UTF-8 bytes, that a Kafka protocol
// string can carry: its length prefix is an int16.
const MaxStringLength = math.MaxInt16

// decoder reads Kafka protocol primitives (big-endian) from one key or value.
// The first failure sticks: later reads return zero values and err describes
// the failing field, so a record decoder reads all its fields and checks once.
// Bytes after the last field are ignored, as Kafka's Java readers do.
type decoder struct {
	buf    []byte
	off    int
	record string // for errors: "checkpoint value" etc.
	err    error
}

func newDecoder(record string, buf []byte) decoder {
	return decoder{buf: buf, record: record}
}

// fail records the first error, for the field that starts at byte start.
func (d *decoder) fail(field string, start int, err error) {
	if d.err == nil {
		d.err = &DecodeError{Record: d.record, Field: field, Offset: start, Err: err}
	}
}

// next consumes n bytes of the field that starts at byte start. The result
// aliases the input. n comes from the wire, so it is checked before use.
func (d *decoder) next(field string, start, n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.buf)-d.off {
		d.fail(field, start, ErrTruncated)
		return nil
	}
	b := d.buf[d.off : d.off+n : d.off+n]
	d.off += n
	return b
}

func (d *decoder) int16(field string) int16 {
	b := d.next(field, d.off, 2)
	if d.err != nil {
		return 0
	}
	return int16(binary.BigEndian.Uint16(b))
}

func (d *decoder) int32(field string) int32 {
	b := d.next(field, d.off, 4)
	if d.err != nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

func (d *decoder) int64(field string) int64 {
	b := d.next(field, d.off, 8)
	if d.err != nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

// string reads a non-nullable STRING: an int16 length, then UTF-8 bytes.
// The bytes are copied as they are; invalid UTF-8 is not an error.
func (d *decoder) string(field string) string {
	start := d.off
	n := d.int16(field)
	if d.err != nil {
		return ""
	}
	if n < 0 {
		d.fail(field, start, ErrNegativeLength)
		return ""
	}
	return string(d.next(field, start, int(n)))
}

// compactString reads a non-nullable COMPACT_STRING of a flexible schema:
// an unsigned varint of length+1 (0 means null), then UTF-8 bytes.
func (d *decoder) compactString(field string) string {
	start := d.off
	n := d.uvarint(field, start)
	switch {
	case d.err != nil:
		return ""
	case n == 0:
		d.fail(field, start, ErrNegativeLength)
		return ""
	case n-1 > MaxStringLength:
		d.fail(field, start, ErrStringTooLong)
		return ""
	}
	return string(d.next(field, start, int(n-1)))
}

// uvarint reads an unsigned varint that Kafka limits to 32 bits (5 bytes),
// part of the field that starts at byte start.
func (d *decoder) uvarint(field string, start int) uint32 {
	if d.err != nil {
		return 0
	}
	var v uint64
	for i := range 5 {
		if d.off >= len(d.buf) {
			d.fail(field, start, ErrTruncated)
			return 0
		}
		c := d.buf[d.off]
		d.off++
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			if v > math.MaxUint32 {
				break
			}
			return uint32(v)
		}
	}
	d.fail(field, start, ErrMalformed)
	return 0
}

func appendInt16(b []byte, v int16) []byte { return binary.BigEndian.AppendUint16(b, uint16(v)) }
func appendInt32(b []byte, v int32) []byte { return binary.BigEndian.AppendUint32(b, uint32(v)) }
func appendInt64(b []byte, v int64) []byte { return binary.BigEndian.AppendUint64(b, uint64(v)) }

// appendString appends a STRING. An over-long string is a programming error
// (Validate catches it), so it panics rather than truncate or corrupt the record.
func appendString(b []byte, field, s string) []byte {
	mustFit(field, s)
	b = appendInt16(b, int16(len(s)))
	return append(b, s...)
}

// appendCompactString appends a COMPACT_STRING; it panics like appendString.
func appendCompactString(b []byte, field, s string) []byte {
	mustFit(field, s)
	b = binary.AppendUvarint(b, uint64(len(s))+1)
	return append(b, s...)
}

func mustFit(field, s string) {
	if len(s) > MaxStringLength {
		panic(fmt.Sprintf("messages: %s is %d bytes, over the %d-byte limit of Kafka strings; call Validate first",
			field, len(s), MaxStringLength))
	}
}

// checkString is the Validate counterpart of mustFit.
func checkString(record, field, s string) error {
	if len(s) > MaxStringLength {
		return fmt.Errorf("%s %s is %d bytes, over the %d-byte limit: %w",
			record, field, len(s), MaxStringLength, ErrStringTooLong)
	}
	return nil
}

// stringSize is the encoded size of a STRING.
func stringSize(s string) int { return 2 + len(s) }

// nullValue is the error for a tombstone where the record needs a value.
func nullValue(record string) error {
	return &DecodeError{Record: record, Err: ErrTombstone}
}
