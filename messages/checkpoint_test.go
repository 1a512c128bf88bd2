package messages_test

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/checkpointd/checkpointd/messages"
)

func TestCheckpointGolden(t *testing.T) {
	// The bytes of MM2's Checkpoint.recordKey and recordValue: group, renamed
	// topic and partition; an INT16 version 0, then the offsets and metadata.
	key := unhex(t, "00 05 61 70 70 2d 31 00 0e 75 73 2d 77 65 73 74 2e 6f 72 64 65 72 73 00 00 00 03")
	tests := []struct {
		name  string
		c     messages.Checkpoint
		value []byte
	}{
		{"empty metadata", checkpoint("app-1", "us-west.orders", 3, 1000, 999, ""),
			unhex(t, "00 00 | 00 00 00 00 00 00 03 e8 | 00 00 00 00 00 00 03 e7 | 00 00")},
		{"metadata m1", checkpoint("app-1", "us-west.orders", 3, 1000, 999, "m1"),
			unhex(t, "00 00 | 00 00 00 00 00 00 03 e8 | 00 00 00 00 00 00 03 e7 | 00 02 6d 31")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.c.Key(); !bytes.Equal(got, key) {
				t.Errorf("Key() = %x, want %x", got, key)
			}
			if n := tt.c.ValueSize(); n != len(tt.value) {
				t.Errorf("ValueSize() = %d, want %d", n, len(tt.value))
			}
			if got := tt.c.Value(); !bytes.Equal(got, tt.value) {
				t.Errorf("Value() = %x, want %x", got, tt.value)
			}
			got, err := messages.DecodeCheckpoint(key, tt.value)
			if err != nil || got != tt.c {
				t.Errorf("DecodeCheckpoint = %+v, %v; want %+v", got, err, tt.c)
			}
		})
	}
}

func checkpoint(group, topic string, partition int32, upstream, downstream int64, metadata string) messages.Checkpoint {
	return messages.Checkpoint{
		Group:            group,
		TopicPartition:   messages.TopicPartition{Topic: topic, Partition: partition},
		UpstreamOffset:   upstream,
		DownstreamOffset: downstream,
		Metadata:         metadata,
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	for _, c := range []messages.Checkpoint{
		{},
		checkpoint("app-1", "us-west.orders", 3, 1000, 999, ""),
		checkpoint(multibyte, "src."+multibyte, math.MaxInt32, math.MaxInt64, math.MaxInt64, multibyte),
		checkpoint("g", "t", -1, -1, math.MinInt64, "\x00\n\t"),
		checkpoint(maxASCII, maxASCII, 0, 1, 2, maxASCII),
		checkpoint(maxUTF8, maxUTF8, 0, 1, 2, maxUTF8),
	} {
		if err := c.Validate(); err != nil {
			t.Fatalf("Validate: %v", err)
		}
		got, err := messages.DecodeCheckpoint(c.Key(), c.Value())
		if err != nil || got != c {
			t.Errorf("round trip of %s: got %s, %v", brief(c), brief(got), err)
		}
	}
}

func TestCheckpointTruncated(t *testing.T) {
	c := checkpoint("app-1", "us-west.orders", 3, 1000, 999, "m1")
	checkTruncations(t, "checkpoint key", c.Key(),
		[]field{str("group", c.Group), str("topic", c.Topic), {"partition", 4}},
		func(key []byte) error { _, err := messages.DecodeCheckpoint(key, c.Value()); return err })
	checkTruncations(t, "checkpoint value", c.Value(),
		[]field{{"version", 2}, {"upstreamOffset", 8}, {"offset", 8}, str("metadata", c.Metadata)},
		func(value []byte) error { _, err := messages.DecodeCheckpoint(c.Key(), value); return err })
}

func TestCheckpointDecodeErrors(t *testing.T) {
	c := checkpoint("g", "t", 0, 1, 2, "m")
	key, value := c.Key(), c.Value()
	tests := []struct {
		name        string
		key, value  []byte
		record, fld string
		offset      int
		cause       error
	}{
		{"null group", unhex(t, "ffff 0001 74 00000000"), value, "checkpoint key", "group", 0, messages.ErrNegativeLength},
		{"null topic", unhex(t, "0001 67 ffff 00000000"), value, "checkpoint key", "topic", 3, messages.ErrNegativeLength},
		{"null metadata", key, unhex(t, "0000 0000000000000001 0000000000000002 ffff"), "checkpoint value", "metadata", 18, messages.ErrNegativeLength},
		{"version 1", key, unhex(t, "0001 0000000000000001 0000000000000002 0000"), "checkpoint value", "version", 0, messages.ErrUnsupportedVersion},
		{"version -1", key, unhex(t, "ffff 0000000000000001 0000000000000002 0000"), "checkpoint value", "version", 0, messages.ErrUnsupportedVersion},
		{"tombstone", key, nil, "checkpoint value", "", 0, messages.ErrTombstone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := messages.DecodeCheckpoint(tt.key, tt.value)
			wantDecodeError(t, err, tt.record, tt.fld, tt.offset, tt.cause)
		})
	}
}

func TestCheckpointIgnoresTrailingBytes(t *testing.T) {
	c := checkpoint("g", "t", 0, 1, 2, "m")
	got, err := messages.DecodeCheckpoint(append(c.Key(), 9), append(c.Value(), 0, 0, 0))
	if err != nil || got != c {
		t.Errorf("got %+v, %v; want %+v", got, err, c)
	}
}

func TestCheckpointValidate(t *testing.T) {
	for name, c := range map[string]messages.Checkpoint{
		"group":    checkpoint(tooLong, "t", 0, 0, 0, ""),
		"topic":    checkpoint("g", tooLong, 0, 0, 0, ""),
		"metadata": checkpoint("g", "t", 0, 0, 0, tooLong),
	} {
		if err := c.Validate(); !errors.Is(err, messages.ErrStringTooLong) {
			t.Errorf("Validate() with a long %s = %v, want ErrStringTooLong", name, err)
		}
		wantPanic(t, "encoding a checkpoint with a long "+name, func() { c.Key(); c.Value() })
	}
}

func BenchmarkCheckpointEncode(b *testing.B) {
	c := checkpoint("app-1", "us-west.orders", 3, 1000, 999, "")
	b.ReportAllocs()
	for b.Loop() {
		_, _ = c.Key(), c.Value()
	}
}

func BenchmarkDecodeCheckpoint(b *testing.B) {
	c := checkpoint("app-1", "us-west.orders", 3, 1000, 999, "")
	key, value := c.Key(), c.Value()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := messages.DecodeCheckpoint(key, value); err != nil {
			b.Fatal(err)
		}
	}
}

func TestCheckpointString(t *testing.T) {
	got := checkpoint("app-1", "us-west.orders", 3, 1000, 999, "m1").String()
	want := "Checkpoint{consumerGroupId=app-1, topicPartition=us-west.orders-3, upstreamOffset=1000, downstreamOffset=999, metadata=m1}"
	if got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
