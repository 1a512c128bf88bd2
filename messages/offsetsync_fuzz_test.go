package messages_test

import (
	"bytes"
	"math"
	"testing"

	"github.com/checkpointd/checkpointd/messages"
)

func FuzzDecodeOffsetSync(f *testing.F) {
	f.Add(unhex(f, "00 06 6f 72 64 65 72 73 00 00 00 03"), unhex(f, "00 00 00 00 00 00 03 e8 00 00 00 00 00 00 03 e6"), false)
	for _, s := range []messages.OffsetSync{
		{TopicPartition: messages.TopicPartition{Topic: multibyte, Partition: -1}, UpstreamOffset: math.MaxInt64, DownstreamOffset: math.MinInt64},
		{},
	} {
		f.Add(s.Key(), s.Value(), false)
		f.Add(s.Key(), s.Value(), true)
		f.Add(s.Key()[:3], s.Value()[:7], false)
	}
	f.Add(unhex(f, "ffff 00000000"), []byte{}, false)

	f.Fuzz(func(t *testing.T, key, value []byte, null bool) {
		value = nullable(value, null)
		s, err := messages.DecodeOffsetSync(key, value)
		if err != nil {
			wantWellFormedError(t, err, key, value)
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("decoded sync does not validate: %v", err)
		}
		// Re-encoding reproduces the input, less any trailing bytes.
		if !bytes.HasPrefix(key, s.Key()) || !bytes.HasPrefix(value, s.Value()) {
			t.Fatalf("%v re-encodes to %x / %x, not a prefix of %x / %x", s, s.Key(), s.Value(), key, value)
		}
		// The trailing bytes are exactly what re-encoding leaves out.
		if n, want := s.TrailingBytes(key, value), len(key)-len(s.Key())+len(value)-len(s.Value()); n != want {
			t.Fatalf("TrailingBytes = %d, want %d", n, want)
		}
		// Check refuses exactly the negative fields.
		if bad := s.Partition < 0 || s.UpstreamOffset < 0 || s.DownstreamOffset < 0; (s.Check() != nil) != bad {
			t.Fatalf("Check(%v) = %v", s, s.Check())
		}
	})
}
