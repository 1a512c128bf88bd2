package envelope

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
)

// MetaRecords is set on a message that carries several consecutive records of
// one partition (FromRecords): how many. Its MetaOffset is the first
// record's offset and MetaLastOffset the last one's.
const (
	MetaRecords    = "kafka.records"
	MetaLastOffset = "kafka.last_offset"
)

// FromRecords wraps consecutive records of one topic partition, in offset
// order, in one message: a reader that replays a whole log sends them so
// that one handler call and one ack cover many records. The payload holds
// every record's offset, timestamp, key, value (or null) and headers;
// Records reads them back in order. The UUID is the position of the first
// and last record. One record gives the same message as FromRecord.
func FromRecords(recs []Record) *message.Message {
	if len(recs) == 1 {
		return FromRecord(recs[0])
	}
	if len(recs) == 0 {
		panic("envelope.FromRecords: no records")
	}
	first, last := recs[0], recs[len(recs)-1]
	size := 0
	for i := range recs {
		size += 4*binary.MaxVarintLen64 + len(recs[i].Key) + len(recs[i].Value)
		for k, v := range recs[i].Headers {
			size += 2*binary.MaxVarintLen64 + len(k) + len(v)
		}
	}
	payload := make([]byte, 0, size)
	prev := first.Offset
	for i := range recs {
		r := &recs[i]
		payload = binary.AppendUvarint(payload, uint64(r.Offset-prev))
		prev = r.Offset
		payload = binary.AppendVarint(payload, r.Timestamp.UnixMilli())
		payload = appendBytes(payload, r.Key)
		payload = appendBytes(payload, r.Value)
		payload = binary.AppendUvarint(payload, uint64(len(r.Headers)))
		for k, v := range r.Headers {
			payload = appendBytes(payload, []byte(k))
			payload = appendBytes(payload, []byte(v))
		}
	}
	partition := strconv.Itoa(int(first.Partition))
	firstOffset, lastOffset := strconv.FormatInt(first.Offset, 10), strconv.FormatInt(last.Offset, 10)
	msg := message.NewMessage(first.Topic+"/"+partition+"/"+firstOffset+"-"+lastOffset, payload)
	msg.Metadata = message.Metadata{
		MetaTopic:      first.Topic,
		MetaPartition:  partition,
		MetaOffset:     firstOffset,
		MetaLastOffset: lastOffset,
		MetaRecords:    strconv.Itoa(len(recs)),
	}
	return msg
}

// IsBatch reports whether msg carries several records (FromRecords).
func IsBatch(msg *message.Message) bool { return msg.Metadata.Get(MetaRecords) != "" }

// Records returns the records a message carries, in offset order: all of a
// FromRecords message, the one of a FromRecord message. Keys and values
// share the payload's memory.
func Records(msg *message.Message) ([]Record, error) {
	if !IsBatch(msg) {
		r, err := ToRecord(msg)
		if err != nil {
			return nil, err
		}
		return []Record{r}, nil
	}
	n, err := strconv.Atoi(msg.Metadata.Get(MetaRecords))
	// Each record takes at least 5 bytes: a damaged count must not allocate.
	if err != nil || n < 1 || n > len(msg.Payload)/5 {
		return nil, fmt.Errorf("message %s: records metadata %q", msg.UUID, msg.Metadata.Get(MetaRecords))
	}
	topic := msg.Metadata.Get(MetaTopic)
	p, err := strconv.ParseInt(msg.Metadata.Get(MetaPartition), 10, 32)
	if err != nil {
		return nil, fmt.Errorf("message %s: partition metadata %q: %w", msg.UUID, msg.Metadata.Get(MetaPartition), err)
	}
	offset, err := strconv.ParseInt(msg.Metadata.Get(MetaOffset), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("message %s: offset metadata %q: %w", msg.UUID, msg.Metadata.Get(MetaOffset), err)
	}
	recs := make([]Record, n)
	b := []byte(msg.Payload)
	for i := range recs {
		r := &recs[i]
		r.Topic, r.Partition = topic, int32(p)
		var delta uint64
		var ts int64
		var nh uint64
		if delta, b, err = uvarint(b); err == nil {
			if ts, b, err = varint(b); err == nil {
				if r.Key, b, err = readBytes(b); err == nil {
					if r.Value, b, err = readBytes(b); err == nil {
						nh, b, err = uvarint(b)
					}
				}
			}
		}
		if err != nil {
			return nil, fmt.Errorf("message %s: record %d of %d: %w", msg.UUID, i, n, err)
		}
		offset += int64(delta)
		r.Offset = offset
		r.Timestamp = time.UnixMilli(ts)
		if nh > uint64(len(b)) {
			return nil, fmt.Errorf("message %s: record %d of %d: %w", msg.UUID, i, n, errBatchTruncated)
		}
		if nh > 0 {
			r.Headers = make(map[string]string, nh)
			for range nh {
				var k, v []byte
				if k, b, err = readBytes(b); err == nil {
					v, b, err = readBytes(b)
				}
				if err != nil {
					return nil, fmt.Errorf("message %s: record %d of %d: header: %w", msg.UUID, i, n, err)
				}
				r.Headers[string(k)] = string(v)
			}
		}
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("message %s: %d bytes after the last of %d records", msg.UUID, len(b), n)
	}
	if last := msg.Metadata.Get(MetaLastOffset); last != "" && last != strconv.FormatInt(offset, 10) {
		return nil, fmt.Errorf("message %s: last record at offset %d, metadata says %s", msg.UUID, offset, last)
	}
	return recs, nil
}

var errBatchTruncated = errors.New("payload truncated")

// appendBytes writes b as a varint length (-1 for nil) and the bytes.
func appendBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

func readBytes(b []byte) (v, rest []byte, err error) {
	n, b, err := varint(b)
	if err != nil {
		return nil, nil, err
	}
	if n == -1 {
		return nil, b, nil
	}
	if n < -1 || n > int64(len(b)) {
		return nil, nil, errBatchTruncated
	}
	return b[:n:n], b[n:], nil
}

func uvarint(b []byte) (uint64, []byte, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, nil, errBatchTruncated
	}
	return v, b[n:], nil
}

func varint(b []byte) (int64, []byte, error) {
	v, n := binary.Varint(b)
	if n <= 0 {
		return 0, nil, errBatchTruncated
	}
	return v, b[n:], nil
}
