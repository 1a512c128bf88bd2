package envelope

import (
	"bytes"
	"testing"
	"time"
)

func TestRecordRoundTrip(t *testing.T) {
	ts := time.UnixMilli(1_700_000_000_123)
	cases := []struct {
		name string
		rec  Record
	}{
		{"value and binary key", Record{Topic: "t", Partition: 3, Offset: 42, Timestamp: ts, Key: []byte{0, 1, 0xff}, Value: []byte("v"), Headers: map[string]string{"traceparent": "00-abc"}}},
		{"tombstone", Record{Topic: "__consumer_offsets", Partition: 0, Offset: 7, Timestamp: ts, Key: []byte("k")}},
		{"empty value is not a tombstone", Record{Topic: "t", Partition: 0, Offset: 0, Timestamp: ts, Key: nil, Value: []byte{}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ToRecord(FromRecord(tc.rec))
			if err != nil {
				t.Fatal(err)
			}
			if got.Topic != tc.rec.Topic || got.Partition != tc.rec.Partition || got.Offset != tc.rec.Offset || !got.Timestamp.Equal(tc.rec.Timestamp) {
				t.Fatalf("position: got %+v want %+v", got, tc.rec)
			}
			if !bytes.Equal(got.Key, tc.rec.Key) || !bytes.Equal(got.Value, tc.rec.Value) || got.Tombstone() != tc.rec.Tombstone() {
				t.Fatalf("content: got key %x value %x tombstone %v; want key %x value %x tombstone %v",
					got.Key, got.Value, got.Tombstone(), tc.rec.Key, tc.rec.Value, tc.rec.Tombstone())
			}
		})
	}
}

func TestControl(t *testing.T) {
	msg := NewControl(Revoked, "__consumer_offsets", 2)
	c, topic, p, ok := ControlOf(msg)
	if !ok || c != Revoked || topic != "__consumer_offsets" || p != 2 {
		t.Fatalf("got %q %q %d %v", c, topic, p, ok)
	}
	if _, _, _, ok := ControlOf(FromRecord(Record{Topic: "t"})); ok {
		t.Fatal("a record message was taken for a control message")
	}
	if _, err := ToRecord(NewControl(CaughtUp, "t", -1)); err == nil {
		t.Fatal("a control message decoded as a record")
	}
}
