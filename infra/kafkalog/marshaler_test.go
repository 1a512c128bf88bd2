package kafkalog

import (
	"bytes"
	"testing"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/messages/envelope"
)

func TestCheckpointMarshaler(t *testing.T) {
	const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	key := []byte{0, 0, 0, 2, 'g', '1', 0, 0, 0, 1, 't', 0, 0, 0, 3} // binary, with NULs

	tests := []struct {
		name        string
		payload     []byte
		metadata    map[string]string
		wantValue   []byte // nil: tombstone
		wantHeaders []sarama.RecordHeader
	}{
		{
			name:      "key and value only",
			payload:   []byte{0, 0, 0xff, 7},
			metadata:  map[string]string{envelope.MetaKey: string(key)},
			wantValue: []byte{0, 0, 0xff, 7},
		},
		{
			name:    "trace context and commit time kept, everything else dropped",
			payload: []byte("v"),
			metadata: map[string]string{
				envelope.MetaKey:          string(key),
				"traceparent":             traceparent,
				"tracestate":              "vendor=1",
				envelope.HeaderCommitTime: "1700000000123",
				"_watermill_message_uuid": "uuid",
				"correlation_id":          "c",
				envelope.MetaTopic:        "other",
				envelope.MetaPartition:    "7",
			},
			wantValue: []byte("v"),
			wantHeaders: []sarama.RecordHeader{
				{Key: []byte("traceparent"), Value: []byte(traceparent)},
				{Key: []byte("tracestate"), Value: []byte("vendor=1")},
				{Key: []byte(envelope.HeaderCommitTime), Value: []byte("1700000000123")},
			},
		},
		{
			name:      "nil payload is an empty value, not a tombstone",
			metadata:  map[string]string{envelope.MetaKey: string(key)},
			wantValue: []byte{},
		},
		{
			name:     "tombstone",
			payload:  []byte("ignored"),
			metadata: map[string]string{envelope.MetaKey: string(key), envelope.MetaTombstone: "true"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := message.NewMessage("some-uuid", tt.payload)
			for k, v := range tt.metadata {
				msg.Metadata.Set(k, v)
			}
			pm, err := CheckpointMarshaler{}.Marshal("source.checkpoints.internal", msg)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if pm.Topic != "source.checkpoints.internal" || pm.Partition != 0 {
				t.Errorf("topic/partition = %s/%d, want source.checkpoints.internal/0", pm.Topic, pm.Partition)
			}
			if got := encoded(t, pm.Key); !bytes.Equal(got, key) {
				t.Errorf("key = %x, want %x", got, key)
			}
			gotValue := encoded(t, pm.Value)
			if (gotValue == nil) != (tt.wantValue == nil) || !bytes.Equal(gotValue, tt.wantValue) {
				t.Errorf("value = %#v, want %#v", gotValue, tt.wantValue)
			}
			if len(pm.Headers) != len(tt.wantHeaders) {
				t.Fatalf("headers = %s, want %s", headerList(pm.Headers), headerList(tt.wantHeaders))
			}
			for i, h := range tt.wantHeaders {
				if !bytes.Equal(pm.Headers[i].Key, h.Key) || !bytes.Equal(pm.Headers[i].Value, h.Value) {
					t.Errorf("headers = %s, want %s", headerList(pm.Headers), headerList(tt.wantHeaders))
				}
			}
		})
	}
}

func TestCheckpointMarshalerNeedsKey(t *testing.T) {
	msg := message.NewMessage("u", []byte("v"))
	if _, err := (CheckpointMarshaler{}).Marshal("t", msg); err == nil {
		t.Fatal("Marshal of a message without a key: no error")
	}
}

// encoded returns an encoder's bytes; nil for a nil encoder (a null value).
func encoded(t *testing.T, e sarama.Encoder) []byte {
	t.Helper()
	if e == nil {
		return nil
	}
	b, err := e.Encode()
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	if b == nil {
		b = []byte{}
	}
	return b
}

func headerList(hs []sarama.RecordHeader) string {
	var b bytes.Buffer
	for _, h := range hs {
		b.WriteString(string(h.Key) + "=" + string(h.Value) + ";")
	}
	return "[" + b.String() + "]"
}
