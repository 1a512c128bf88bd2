package messages_test

import (
	"bytes"
	"math"
	"testing"

	"github.com/checkpointd/checkpointd/messages"
)

func FuzzDecodeHeartbeat(f *testing.F) {
	f.Add(unhex(f, "0007 75732d77657374 0002 6575"), unhex(f, "0000 0000018bcfe56800"), false)
	f.Add(unhex(f, "0007 75732d77657374 0002 6575"), unhex(f, "0001 0000018bcfe56800"), false)
	f.Add(unhex(f, "0001 61 ffff"), []byte{}, true)
	h := messages.Heartbeat{SourceClusterAlias: multibyte, TargetClusterAlias: "", Timestamp: math.MinInt64}
	f.Add(h.Key(), h.Value(), false)
	f.Add(h.Key()[:4], h.Value()[:9], false)

	f.Fuzz(func(t *testing.T, key, value []byte, null bool) {
		value = nullable(value, null)
		h, err := messages.DecodeHeartbeat(key, value)
		if err != nil {
			wantWellFormedError(t, err, key, value)
			return
		}
		if err := h.Validate(); err != nil {
			t.Fatalf("decoded heartbeat does not validate: %v", err)
		}
		if !bytes.HasPrefix(key, h.Key()) || !bytes.HasPrefix(value, h.Value()) {
			t.Fatalf("%+v re-encodes to %x / %x, not a prefix of %x / %x", h, h.Key(), h.Value(), key, value)
		}
	})
}
