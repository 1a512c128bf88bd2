package messages_test

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/checkpointd/checkpointd/messages"
)

func TestHeartbeatGolden(t *testing.T) {
	// Laid out by hand as MM2's Heartbeat.recordKey and recordValue write it;
	// the Java golden test checks the same against MM2's class.
	h := messages.Heartbeat{SourceClusterAlias: "us-west", TargetClusterAlias: "eu", Timestamp: 1700000000000}
	key := unhex(t, "0007 75732d77657374 | 0002 6575")
	value := unhex(t, "0000 | 0000018bcfe56800")
	if got := h.Key(); !bytes.Equal(got, key) {
		t.Errorf("Key() = %x, want %x", got, key)
	}
	if got := h.Value(); !bytes.Equal(got, value) {
		t.Errorf("Value() = %x, want %x", got, value)
	}
	got, err := messages.DecodeHeartbeat(key, value)
	if err != nil || got != h {
		t.Errorf("DecodeHeartbeat = %+v, %v; want %+v", got, err, h)
	}
}

func TestHeartbeatRoundTrip(t *testing.T) {
	for _, h := range []messages.Heartbeat{
		{},
		{SourceClusterAlias: "a", TargetClusterAlias: "b", Timestamp: 1},
		{SourceClusterAlias: multibyte, TargetClusterAlias: multibyte, Timestamp: math.MaxInt64},
		{SourceClusterAlias: maxASCII, TargetClusterAlias: maxUTF8, Timestamp: math.MinInt64},
	} {
		if err := h.Validate(); err != nil {
			t.Fatalf("Validate: %v", err)
		}
		got, err := messages.DecodeHeartbeat(h.Key(), h.Value())
		if err != nil || got != h {
			t.Errorf("round trip of %s: got %s, %v", brief(h), brief(got), err)
		}
	}
}

func TestHeartbeatTruncated(t *testing.T) {
	h := messages.Heartbeat{SourceClusterAlias: "us-west", TargetClusterAlias: "eu", Timestamp: 1}
	checkTruncations(t, "heartbeat key", h.Key(),
		[]field{str("sourceClusterAlias", h.SourceClusterAlias), str("targetClusterAlias", h.TargetClusterAlias)},
		func(key []byte) error { _, err := messages.DecodeHeartbeat(key, h.Value()); return err })
	checkTruncations(t, "heartbeat value", h.Value(),
		[]field{{"version", 2}, {"timestamp", 8}},
		func(value []byte) error { _, err := messages.DecodeHeartbeat(h.Key(), value); return err })
}

func TestHeartbeatDecodeErrors(t *testing.T) {
	h := messages.Heartbeat{SourceClusterAlias: "a", TargetClusterAlias: "b", Timestamp: 1}
	key, value := h.Key(), h.Value()
	tests := []struct {
		name        string
		key, value  []byte
		record, fld string
		offset      int
		cause       error
	}{
		{"null source", unhex(t, "ffff 0001 62"), value, "heartbeat key", "sourceClusterAlias", 0, messages.ErrNegativeLength},
		{"null target", unhex(t, "0001 61 ffff"), value, "heartbeat key", "targetClusterAlias", 3, messages.ErrNegativeLength},
		{"version 1", key, unhex(t, "0001 0000000000000001"), "heartbeat value", "version", 0, messages.ErrUnsupportedVersion},
		{"tombstone", key, nil, "heartbeat value", "", 0, messages.ErrTombstone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := messages.DecodeHeartbeat(tt.key, tt.value)
			wantDecodeError(t, err, tt.record, tt.fld, tt.offset, tt.cause)
		})
	}
}

func TestHeartbeatValidate(t *testing.T) {
	for name, h := range map[string]messages.Heartbeat{
		"source": {SourceClusterAlias: tooLong},
		"target": {TargetClusterAlias: tooLong},
	} {
		if err := h.Validate(); !errors.Is(err, messages.ErrStringTooLong) {
			t.Errorf("Validate() with a long %s alias = %v, want ErrStringTooLong", name, err)
		}
		wantPanic(t, "Key() with a long "+name+" alias", func() { h.Key() })
	}
}

func BenchmarkHeartbeatEncode(b *testing.B) {
	h := messages.Heartbeat{SourceClusterAlias: "us-west", TargetClusterAlias: "eu", Timestamp: 1700000000000}
	b.ReportAllocs()
	for b.Loop() {
		_, _ = h.Key(), h.Value()
	}
}

func BenchmarkDecodeHeartbeat(b *testing.B) {
	h := messages.Heartbeat{SourceClusterAlias: "us-west", TargetClusterAlias: "eu", Timestamp: 1700000000000}
	key, value := h.Key(), h.Value()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := messages.DecodeHeartbeat(key, value); err != nil {
			b.Fatal(err)
		}
	}
}
