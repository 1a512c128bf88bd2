package messages_test

import (
	"bytes"
	"math"
	"testing"

	"github.com/checkpointd/checkpointd/messages"
)

func FuzzDecodeCheckpoint(f *testing.F) {
	key := unhex(f, "00 05 61 70 70 2d 31 00 0e 75 73 2d 77 65 73 74 2e 6f 72 64 65 72 73 00 00 00 03")
	f.Add(key, unhex(f, "00 00 | 00 00 00 00 00 00 03 e8 | 00 00 00 00 00 00 03 e7 | 00 00"), false)
	f.Add(key, unhex(f, "00 00 | 00 00 00 00 00 00 03 e8 | 00 00 00 00 00 00 03 e7 | 00 02 6d 31"), false)
	f.Add(key, unhex(f, "00 01 | 00 00 00 00 00 00 03 e8 | 00 00 00 00 00 00 03 e7 | 00 00"), false)
	f.Add(key, []byte{}, true)
	for _, c := range []messages.Checkpoint{
		checkpoint(multibyte, multibyte, math.MaxInt32, math.MaxInt64, math.MinInt64, multibyte),
		{},
	} {
		f.Add(c.Key(), c.Value(), false)
		f.Add(c.Key()[:5], c.Value()[:19], false)
	}

	f.Fuzz(func(t *testing.T, key, value []byte, null bool) {
		value = nullable(value, null)
		c, err := messages.DecodeCheckpoint(key, value)
		if err != nil {
			wantWellFormedError(t, err, key, value)
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("decoded checkpoint does not validate: %v", err)
		}
		if !bytes.HasPrefix(key, c.Key()) || !bytes.HasPrefix(value, c.Value()) {
			t.Fatalf("%v re-encodes to %x / %x, not a prefix of %x / %x", c, c.Key(), c.Value(), key, value)
		}
	})
}
