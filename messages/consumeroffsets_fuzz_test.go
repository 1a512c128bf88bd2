package messages_test

import (
	"bytes"
	"math"
	"testing"

	"github.com/checkpointd/checkpointd/messages"
)

func FuzzDecodeOffsetsRecord(f *testing.F) {
	// The worked examples of TestOffsetsRecordGolden, then every
	// version of an awkward commit, group metadata and record types to skip.
	commitKey := unhex(f, "00010002673100066f726465727300000003")
	for _, value := range []string{
		"0003000000000000002a0000000500000000018bcfe56800",
		"0004000000000000002a00000005010000018bcfe56800010010deadbeef0102030405060708090a0b0c",
		"0004000000000000002a00000005010000018bcfe5680000",
		"0001000000000000002a00000000018bcfe568000000018bd50bc400",
		"0004000000000000002a00000005040000018bcfe5680002070300000000100102030405060708090a0b0c0d0e0f10",
		"0005000000000000002a",
		"0004000000000000002a00000005ffffffff7f",
	} {
		f.Add(commitKey, unhex(f, value), false)
	}
	f.Add(commitKey, []byte{}, true)
	c := commit(0, math.MinInt64, math.MaxInt32, multibyte, math.MaxInt64, -2, deadbeef)
	c.Group, c.TopicPartition = multibyte, messages.TopicPartition{Topic: multibyte, Partition: -1}
	for v := int16(0); v <= 4; v++ {
		value, err := messages.EncodeOffsetCommitValue(v, c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(messages.EncodeOffsetCommitKey(c.Group, c.TopicPartition), value, false)
	}
	f.Add(unhex(f, "000200026731"), unhex(f, "0003"), false)
	f.Add(unhex(f, "000200026731"), []byte{}, true)
	f.Add(unhex(f, "0000 0001 67 0001 74 00000000"), unhex(f, "0000 0000000000000001 0000 0000000000000002"), false)
	f.Add(unhex(f, "0010 00026731 0001 72"), unhex(f, "0000"), false)

	f.Fuzz(func(t *testing.T, key, value []byte, null bool) {
		value = nullable(value, null)
		r, err := messages.DecodeOffsetsRecord(key, value)
		if err != nil {
			wantWellFormedError(t, err, key, value)
			return
		}
		if r.Tombstone != (value == nil) {
			t.Fatalf("Tombstone = %v for value %x", r.Tombstone, value)
		}
		switch r.Kind {
		case messages.OffsetCommitRecord:
			if enc := messages.EncodeOffsetCommitKey(r.Group, r.TopicPartition); !bytes.HasPrefix(key[2:], enc[2:]) {
				t.Fatalf("%v: key re-encodes to %x, not a prefix of %x", r, enc, key)
			}
			if r.Tombstone {
				return
			}
			enc, err := messages.EncodeOffsetCommitValue(r.ValueVersion, r)
			if err != nil {
				t.Fatalf("%v does not re-encode: %v", r, err)
			}
			// Before v4 the encoding is canonical; v4 drops unknown tags.
			if r.ValueVersion < 4 && !bytes.HasPrefix(value, enc) {
				t.Fatalf("%v re-encodes to %x, not a prefix of %x", r, enc, value)
			}
			again, err := messages.DecodeOffsetsRecord(key, enc)
			if err != nil || again != r {
				t.Fatalf("re-encoded %v decodes to %v, %v", r, again, err)
			}
		case messages.GroupMetadataRecord:
			if enc := messages.EncodeGroupMetadataKey(r.Group); !bytes.HasPrefix(key, enc) {
				t.Fatalf("%v: key re-encodes to %x, not a prefix of %x", r, enc, key)
			}
		}
	})
}
