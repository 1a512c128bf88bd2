package messages_test

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/checkpointd/checkpointd/messages"
)

func TestOffsetSyncGolden(t *testing.T) {
	// The bytes of MM2's OffsetSync.recordKey and recordValue: topic and
	// partition, then upstream and downstream offsets, no version header.
	s := messages.OffsetSync{
		TopicPartition:   messages.TopicPartition{Topic: "orders", Partition: 3},
		UpstreamOffset:   1000,
		DownstreamOffset: 998,
	}
	key := unhex(t, "00 06 6f 72 64 65 72 73 00 00 00 03")
	value := unhex(t, "00 00 00 00 00 00 03 e8 00 00 00 00 00 00 03 e6")
	if got := s.Key(); !bytes.Equal(got, key) {
		t.Errorf("Key() = %x, want %x", got, key)
	}
	if got := s.Value(); !bytes.Equal(got, value) {
		t.Errorf("Value() = %x, want %x", got, value)
	}
	got, err := messages.DecodeOffsetSync(key, value)
	if err != nil || got != s {
		t.Errorf("DecodeOffsetSync = %+v, %v; want %+v", got, err, s)
	}
}

func TestOffsetSyncRoundTrip(t *testing.T) {
	for _, s := range []messages.OffsetSync{
		{},
		{TopicPartition: messages.TopicPartition{Topic: "orders", Partition: 0}, UpstreamOffset: 0, DownstreamOffset: 0},
		{TopicPartition: messages.TopicPartition{Topic: multibyte, Partition: math.MaxInt32}, UpstreamOffset: math.MaxInt64, DownstreamOffset: math.MaxInt64},
		{TopicPartition: messages.TopicPartition{Topic: "t", Partition: -1}, UpstreamOffset: -1, DownstreamOffset: math.MinInt64},
		{TopicPartition: messages.TopicPartition{Topic: maxASCII, Partition: 7}, UpstreamOffset: 1, DownstreamOffset: 2},
		{TopicPartition: messages.TopicPartition{Topic: maxUTF8, Partition: 7}, UpstreamOffset: 1, DownstreamOffset: 2},
	} {
		if err := s.Validate(); err != nil {
			t.Fatalf("Validate(%.40q): %v", s.Topic, err)
		}
		got, err := messages.DecodeOffsetSync(s.Key(), s.Value())
		if err != nil || got != s {
			t.Errorf("round trip of %s: got %s, %v", brief(s), brief(got), err)
		}
	}
}

func TestOffsetSyncTruncated(t *testing.T) {
	s := messages.OffsetSync{TopicPartition: messages.TopicPartition{Topic: "orders", Partition: 3}, UpstreamOffset: 1000, DownstreamOffset: 998}
	checkTruncations(t, "offset sync key", s.Key(),
		[]field{str("topic", s.Topic), {"partition", 4}},
		func(key []byte) error { _, err := messages.DecodeOffsetSync(key, s.Value()); return err })
	checkTruncations(t, "offset sync value", s.Value(),
		[]field{{"upstreamOffset", 8}, {"offset", 8}},
		func(value []byte) error { _, err := messages.DecodeOffsetSync(s.Key(), value); return err })
}

func TestOffsetSyncDecodeErrors(t *testing.T) {
	value := make([]byte, 16)
	tests := []struct {
		name        string
		key, value  []byte
		record, fld string
		offset      int
		cause       error
	}{
		{"null topic", unhex(t, "ffff 00000003"), value, "offset sync key", "topic", 0, messages.ErrNegativeLength},
		{"negative topic length", unhex(t, "8000 00000003"), value, "offset sync key", "topic", 0, messages.ErrNegativeLength},
		{"topic longer than key", unhex(t, "0100 6f7264657273 00000003"), value, "offset sync key", "topic", 0, messages.ErrTruncated},
		{"nil key", nil, value, "offset sync key", "topic", 0, messages.ErrTruncated},
		{"tombstone", unhex(t, "0001 74 00000003"), nil, "offset sync value", "", 0, messages.ErrTombstone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := messages.DecodeOffsetSync(tt.key, tt.value)
			wantDecodeError(t, err, tt.record, tt.fld, tt.offset, tt.cause)
		})
	}
}

func TestOffsetSyncIgnoresTrailingBytes(t *testing.T) {
	s := messages.OffsetSync{TopicPartition: messages.TopicPartition{Topic: "t", Partition: 1}, UpstreamOffset: 5, DownstreamOffset: 6}
	got, err := messages.DecodeOffsetSync(append(s.Key(), 0xff), append(s.Value(), 1, 2, 3))
	if err != nil || got != s {
		t.Errorf("got %+v, %v; want %+v", got, err, s)
	}
}

func TestOffsetSyncValidate(t *testing.T) {
	s := messages.OffsetSync{TopicPartition: messages.TopicPartition{Topic: tooLong}}
	if err := s.Validate(); !errors.Is(err, messages.ErrStringTooLong) {
		t.Errorf("Validate() = %v, want ErrStringTooLong", err)
	}
	wantPanic(t, "Key() of an invalid sync", func() { s.Key() })
}

func BenchmarkOffsetSyncEncode(b *testing.B) {
	s := messages.OffsetSync{TopicPartition: messages.TopicPartition{Topic: "orders", Partition: 3}, UpstreamOffset: 1000, DownstreamOffset: 998}
	b.ReportAllocs()
	for b.Loop() {
		_, _ = s.Key(), s.Value()
	}
}

func BenchmarkDecodeOffsetSync(b *testing.B) {
	s := messages.OffsetSync{TopicPartition: messages.TopicPartition{Topic: "orders", Partition: 3}, UpstreamOffset: 1000, DownstreamOffset: 998}
	key, value := s.Key(), s.Value()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := messages.DecodeOffsetSync(key, value); err != nil {
			b.Fatal(err)
		}
	}
}

func TestOffsetSyncString(t *testing.T) {
	s := messages.OffsetSync{TopicPartition: messages.TopicPartition{Topic: "orders", Partition: 3}, UpstreamOffset: 1000, DownstreamOffset: 998}
	want := "OffsetSync{topicPartition=orders-3, upstreamOffset=1000, downstreamOffset=998}"
	if got := s.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
