package envelope

import (
	"bytes"
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
)

func TestRecordsRoundTrip(t *testing.T) {
	ts := time.UnixMilli(1_700_000_000_123)
	recs := []Record{
		{Topic: "t", Partition: 3, Offset: 40, Timestamp: ts, Key: []byte{0, 1, 0xff}, Value: []byte("v")},
		{Topic: "t", Partition: 3, Offset: 41, Timestamp: ts.Add(time.Second), Key: []byte("k"), Value: nil}, // tombstone
		{Topic: "t", Partition: 3, Offset: 45, Timestamp: ts, Key: nil, Value: []byte{}},                     // a gap, an empty value
		{Topic: "t", Partition: 3, Offset: 46, Timestamp: ts, Key: []byte("h"), Value: []byte("x"), Headers: map[string]string{"traceparent": "00-abc", "e": ""}},
	}
	msg := FromRecords(recs)
	if !IsBatch(msg) {
		t.Fatal("IsBatch = false for a message of 4 records")
	}
	if _, err := ToRecord(msg); err == nil {
		t.Fatal("ToRecord read a message of several records as one")
	}
	if _, _, _, ok := ControlOf(msg); ok {
		t.Fatal("a batch was taken for a control message")
	}
	// A nacked message is sent again as a copy: it must read the same.
	for _, m := range []*message.Message{msg, msg.Copy()} {
		got, err := Records(m)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(recs) {
			t.Fatalf("%d records, want %d", len(got), len(recs))
		}
		for i, want := range recs {
			g := got[i]
			if g.Topic != want.Topic || g.Partition != want.Partition || g.Offset != want.Offset || !g.Timestamp.Equal(want.Timestamp) {
				t.Errorf("record %d position: got %+v want %+v", i, g, want)
			}
			if !bytes.Equal(g.Key, want.Key) || !bytes.Equal(g.Value, want.Value) || g.Tombstone() != want.Tombstone() {
				t.Errorf("record %d content: got key %x value %x tombstone %v; want key %x value %x tombstone %v",
					i, g.Key, g.Value, g.Tombstone(), want.Key, want.Value, want.Tombstone())
			}
			if len(want.Headers) > 0 && !maps.Equal(g.Headers, want.Headers) {
				t.Errorf("record %d headers: got %v want %v", i, g.Headers, want.Headers)
			}
		}
	}
}

func TestRecordsOfOneRecord(t *testing.T) {
	rec := Record{Topic: "t", Partition: 1, Offset: 9, Timestamp: time.UnixMilli(5), Key: []byte("k"), Value: []byte("v")}
	for _, msg := range []*message.Message{FromRecord(rec), FromRecords([]Record{rec})} {
		if IsBatch(msg) {
			t.Fatal("a message of one record is a batch")
		}
		got, err := Records(msg)
		if err != nil || len(got) != 1 || got[0].Offset != 9 || string(got[0].Value) != "v" {
			t.Fatalf("Records = %+v, %v", got, err)
		}
	}
}

func TestRecordsRejectsDamage(t *testing.T) {
	recs := []Record{
		{Topic: "t", Offset: 1, Key: []byte("a"), Value: []byte("1")},
		{Topic: "t", Offset: 2, Key: []byte("b"), Value: []byte("2")},
	}
	good := FromRecords(recs)
	cases := map[string]func(m *message.Message){
		"truncated":      func(m *message.Message) { m.Payload = m.Payload[:len(m.Payload)-1] },
		"trailing bytes": func(m *message.Message) { m.Payload = append(m.Payload, 0) },
		"count":          func(m *message.Message) { m.Metadata.Set(MetaRecords, "3") },
		"bad count":      func(m *message.Message) { m.Metadata.Set(MetaRecords, "x") },
		"last offset":    func(m *message.Message) { m.Metadata.Set(MetaLastOffset, "7") },
		"offset":         func(m *message.Message) { m.Metadata.Set(MetaOffset, "") },
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			m := good.Copy()
			damage(m)
			if got, err := Records(m); err == nil {
				t.Fatalf("Records accepted a damaged batch: %+v", got)
			}
		})
	}
}

func FuzzRecords(f *testing.F) {
	f.Add([]byte(FromRecords([]Record{{Topic: "t", Offset: 1, Key: []byte("a")}, {Topic: "t", Offset: 2, Value: []byte("b")}}).Payload), 2)
	f.Fuzz(func(t *testing.T, payload []byte, n int) {
		m := message.NewMessage("x", payload)
		m.Metadata = message.Metadata{MetaTopic: "t", MetaPartition: "0", MetaOffset: "0", MetaRecords: itoa(n)}
		_, _ = Records(m) // must not panic
	})
}

func itoa(n int) string { return strconv.Itoa(n % 1000) }
