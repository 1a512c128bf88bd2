package messages_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/checkpointd/checkpointd/messages"
)

var (
	ordersTP = messages.TopicPartition{Topic: "orders", Partition: 3}
	deadbeef = [16]byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
)

// commit is a decoded offset commit of group g1 on orders-3 with value version v.
func commit(v int16, offset int64, epoch int32, metadata string, commitTS, expireTS int64, topicID [16]byte) messages.OffsetsRecord {
	return messages.OffsetsRecord{
		Kind:            messages.OffsetCommitRecord,
		KeyVersion:      1,
		ValueVersion:    v,
		Group:           "g1",
		TopicPartition:  ordersTP,
		Offset:          offset,
		LeaderEpoch:     epoch,
		Metadata:        metadata,
		CommitTimestamp: commitTS,
		ExpireTimestamp: expireTS,
		TopicID:         topicID,
	}
}

func TestOffsetsRecordGolden(t *testing.T) {
	// Kafka's OffsetCommitKey and OffsetCommitValue, versions 0–4, as the
	// group coordinator's OffsetCommitKey.json and OffsetCommitValue.json
	// define them.
	const commitKey = "00010002673100066f726465727300000003"
	const ts = 1700000000000 // 0x18BCFE56800
	tests := []struct {
		name       string
		key, value string
		want       messages.OffsetsRecord
	}{
		{"v3", commitKey, "0003000000000000002a0000000500000000018bcfe56800",
			commit(3, 42, 5, "", ts, -1, [16]byte{})},
		{"v4 with topic id", commitKey, "0004000000000000002a00000005010000018bcfe56800010010deadbeef0102030405060708090a0b0c",
			commit(4, 42, 5, "", ts, -1, deadbeef)},
		{"v4 without tags", commitKey, "0004000000000000002a00000005010000018bcfe5680000",
			commit(4, 42, 5, "", ts, -1, [16]byte{})},
		{"v1 with expire timestamp", commitKey, "0001000000000000002a00000000018bcfe568000000018bd50bc400",
			commit(1, 42, -1, "", ts, ts+86_400_000, [16]byte{})},
		{"v4 from Kafka 4.1 (franz-go#1105)", commitKey, "0004 000000000021d4a8 ffffffff 01 0000019964f2d836 00",
			commit(4, 2217128, -1, "", 1758335260726, -1, [16]byte{})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, value := unhex(t, tt.key), unhex(t, tt.value)
			got, err := messages.DecodeOffsetsRecord(key, value)
			if err != nil || got != tt.want {
				t.Fatalf("DecodeOffsetsRecord =\n%#v, %v\nwant\n%#v", got, err, tt.want)
			}
			if enc := messages.EncodeOffsetCommitKey(got.Group, got.TopicPartition); !bytes.Equal(enc, key) {
				t.Errorf("EncodeOffsetCommitKey = %x, want %x", enc, key)
			}
			enc, err := messages.EncodeOffsetCommitValue(got.ValueVersion, got)
			if err != nil || !bytes.Equal(enc, value) {
				t.Errorf("EncodeOffsetCommitValue = %x, %v; want %x", enc, err, value)
			}
		})
	}
}

func TestGroupMetadataKeyGolden(t *testing.T) {
	want := unhex(t, "000200026731")
	if got := messages.EncodeGroupMetadataKey("g1"); !bytes.Equal(got, want) {
		t.Errorf("EncodeGroupMetadataKey = %x, want %x", got, want)
	}
}

func TestOffsetCommitValueRoundTrip(t *testing.T) {
	commits := []messages.OffsetsRecord{
		commit(0, 0, -1, "", 0, -1, [16]byte{}),
		commit(0, 42, 5, "m", 1700000000000, 1700086400000, deadbeef),
		commit(0, math.MaxInt64, math.MaxInt32, multibyte, math.MaxInt64, math.MaxInt64, deadbeef),
		commit(0, math.MinInt64, math.MinInt32, maxASCII, math.MinInt64, math.MinInt64, [16]byte{0: 1}),
		commit(0, -1, 0, maxUTF8, -1, 0, [16]byte{15: 1}),
	}
	for v := int16(0); v <= 4; v++ {
		for i, c := range commits {
			t.Run(fmt.Sprintf("v%d/%d", v, i), func(t *testing.T) {
				c.ValueVersion = v
				value, err := messages.EncodeOffsetCommitValue(v, c)
				if err != nil {
					t.Fatal(err)
				}
				got, err := messages.DecodeOffsetsRecord(messages.EncodeOffsetCommitKey(c.Group, c.TopicPartition), value)
				if want := withoutFieldsMissingIn(v, c); err != nil || got != want {
					t.Errorf("round trip:\ngot  %s, %v\nwant %s", brief(got), err, brief(want))
				}
			})
		}
	}
}

// withoutFieldsMissingIn is c as it decodes after encoding at version v.
func withoutFieldsMissingIn(v int16, c messages.OffsetsRecord) messages.OffsetsRecord {
	if v < 3 {
		c.LeaderEpoch = -1
	}
	if v != 1 {
		c.ExpireTimestamp = -1
	}
	if v < 4 {
		c.TopicID = [16]byte{}
	}
	return c
}

func TestOffsetsRecordKinds(t *testing.T) {
	commitKey := messages.EncodeOffsetCommitKey("g1", ordersTP)
	legacyKey := append([]byte{0, 0}, commitKey[2:]...)
	groupKey := messages.EncodeGroupMetadataKey("g1")
	v3 := unhex(t, "0003000000000000002a0000000500000000018bcfe56800")
	tests := []struct {
		name       string
		key, value []byte
		want       messages.OffsetsRecord
	}{
		{"legacy commit key (type 0)", legacyKey, v3,
			func() messages.OffsetsRecord {
				r := commit(3, 42, 5, "", 1700000000000, -1, [16]byte{})
				r.KeyVersion = 0
				return r
			}()},
		{"commit tombstone", commitKey, nil, messages.OffsetsRecord{
			Kind: messages.OffsetCommitRecord, KeyVersion: 1, ValueVersion: -1, Group: "g1", TopicPartition: ordersTP,
			Tombstone: true, LeaderEpoch: -1, ExpireTimestamp: -1}},
		{"group metadata", groupKey, unhex(t, "0003 0008636f6e73756d6572"), messages.OffsetsRecord{
			Kind: messages.GroupMetadataRecord, KeyVersion: 2, ValueVersion: 3, Group: "g1", LeaderEpoch: -1, ExpireTimestamp: -1}},
		{"group metadata tombstone", groupKey, nil, messages.OffsetsRecord{
			Kind: messages.GroupMetadataRecord, KeyVersion: 2, ValueVersion: -1, Group: "g1", Tombstone: true, LeaderEpoch: -1, ExpireTimestamp: -1}},
		{"KIP-848 consumer group metadata (type 3)", unhex(t, "0003 00026731"), unhex(t, "0000 00000001"), unknown(3, false)},
		{"streams group record (type 24)", unhex(t, "0018 00026731"), nil, unknown(24, true)},
		{"future type", unhex(t, "7fff"), unhex(t, "ff"), unknown(math.MaxInt16, false)},
		{"negative type", unhex(t, "ffff"), []byte{}, unknown(-1, false)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := messages.DecodeOffsetsRecord(tt.key, tt.value)
			if err != nil || got != tt.want {
				t.Errorf("DecodeOffsetsRecord =\n%#v, %v\nwant\n%#v", got, err, tt.want)
			}
		})
	}
}

func unknown(recordType int16, tombstone bool) messages.OffsetsRecord {
	return messages.OffsetsRecord{Kind: messages.UnknownRecord, KeyVersion: recordType, ValueVersion: -1,
		Tombstone: tombstone, LeaderEpoch: -1, ExpireTimestamp: -1}
}

func TestOffsetsRecordTruncated(t *testing.T) {
	key := messages.EncodeOffsetCommitKey("g1", ordersTP)
	checkTruncations(t, "offsets key", key,
		[]field{{"type", 2}, str("group", "g1"), str("topic", ordersTP.Topic), {"partition", 4}},
		func(key []byte) error { _, err := messages.DecodeOffsetsRecord(key, nil); return err })
	checkTruncations(t, "offsets key", messages.EncodeGroupMetadataKey("g1"),
		[]field{{"type", 2}, str("group", "g1")},
		func(key []byte) error { _, err := messages.DecodeOffsetsRecord(key, nil); return err })

	c := commit(0, 42, 5, "meta", 1700000000000, 1700086400000, deadbeef)
	layouts := map[int16][]field{
		0: {{"version", 2}, {"offset", 8}, str("metadata", c.Metadata), {"commitTimestamp", 8}},
		1: {{"version", 2}, {"offset", 8}, str("metadata", c.Metadata), {"commitTimestamp", 8}, {"expireTimestamp", 8}},
		2: {{"version", 2}, {"offset", 8}, str("metadata", c.Metadata), {"commitTimestamp", 8}},
		3: {{"version", 2}, {"offset", 8}, {"leaderEpoch", 4}, str("metadata", c.Metadata), {"commitTimestamp", 8}},
		4: {{"version", 2}, {"offset", 8}, {"leaderEpoch", 4}, {"metadata", 1 + len(c.Metadata)}, {"commitTimestamp", 8},
			{"taggedFields", 1}, {"taggedFields", 2}, {"topicId", 16}},
	}
	for v, layout := range layouts {
		value, err := messages.EncodeOffsetCommitValue(v, c)
		if err != nil {
			t.Fatal(err)
		}
		checkTruncations(t, "offset commit value", value, layout,
			func(value []byte) error { _, err := messages.DecodeOffsetsRecord(key, value); return err })
	}
	checkTruncations(t, "group metadata value", unhex(t, "0003"), []field{{"version", 2}},
		func(value []byte) error {
			_, err := messages.DecodeOffsetsRecord(messages.EncodeGroupMetadataKey("g1"), value)
			return err
		})
}

func TestOffsetsRecordDecodeErrors(t *testing.T) {
	key := messages.EncodeOffsetCommitKey("g1", ordersTP)
	// v4 value prefix up to the metadata: version, offset 42, leader epoch 5.
	const v4 = "0004 000000000000002a 00000005 "
	const ts = "0000018bcfe56800 "
	tests := []struct {
		name        string
		key         []byte
		value       string
		record, fld string
		offset      int
		cause       error
	}{
		{"null group", unhex(t, "0001 ffff 0001 74 00000000"), "", "offsets key", "group", 2, messages.ErrNegativeLength},
		{"null topic", unhex(t, "0001 0001 67 ffff 00000000"), "", "offsets key", "topic", 5, messages.ErrNegativeLength},
		{"value version 5", key, "0005 000000000000002a", "offset commit value", "version", 0, messages.ErrUnsupportedVersion},
		{"value version -1", key, "ffff", "offset commit value", "version", 0, messages.ErrUnsupportedVersion},
		{"null metadata v3", key, "0003 000000000000002a 00000005 ffff" + ts, "offset commit value", "metadata", 14, messages.ErrNegativeLength},
		{"null compact metadata v4", key, v4 + "00" + ts + "00", "offset commit value", "metadata", 14, messages.ErrNegativeLength},
		{"compact metadata over 32767 bytes", key, v4 + "818002", "offset commit value", "metadata", 14, messages.ErrStringTooLong},
		{"compact length past the end", key, v4 + "8101 6d", "offset commit value", "metadata", 14, messages.ErrTruncated},
		{"six-byte varint", key, v4 + "ffffffffff01", "offset commit value", "metadata", 14, messages.ErrMalformed},
		{"varint over 32 bits", key, v4 + "ffffffff7f", "offset commit value", "metadata", 14, messages.ErrMalformed},
		{"topic id of 15 bytes", key, v4 + "01" + ts + "01 00 0f deadbeef0102030405060708090a0b", "offset commit value", "topicId", 24, messages.ErrMalformed},
		{"unknown tag past the end", key, v4 + "01" + ts + "01 05 04 0102", "offset commit value", "taggedFields", 24, messages.ErrTruncated},
		{"more tags than bytes", key, v4 + "01" + ts + "03 05 00", "offset commit value", "taggedFields", 26, messages.ErrTruncated},
		{"tag count over 32 bits", key, v4 + "01" + ts + "ffffffff7f", "offset commit value", "taggedFields", 23, messages.ErrMalformed},
		{"empty, non-null value", key, "", "offset commit value", "version", 0, messages.ErrTruncated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := messages.DecodeOffsetsRecord(tt.key, unhex(t, tt.value))
			wantDecodeError(t, err, tt.record, tt.fld, tt.offset, tt.cause)
		})
	}
}

func TestOffsetsRecordSkipsUnknownTags(t *testing.T) {
	// Tags 7 (3 bytes) and 0 (the topic id), then trailing bytes.
	value := unhex(t, "0004 000000000000002a 00000005 04 6d6574 0000018bcfe56800 02 07 03 aabbcc 00 10 deadbeef0102030405060708090a0b0c ff")
	got, err := messages.DecodeOffsetsRecord(messages.EncodeOffsetCommitKey("g1", ordersTP), value)
	want := commit(4, 42, 5, "met", 1700000000000, -1, deadbeef)
	if err != nil || got != want {
		t.Errorf("got %#v, %v\nwant %#v", got, err, want)
	}
}

func TestEncodeOffsetCommitValueErrors(t *testing.T) {
	for _, v := range []int16{-1, 5} {
		if _, err := messages.EncodeOffsetCommitValue(v, commit(0, 1, -1, "", 0, -1, [16]byte{})); !errors.Is(err, messages.ErrUnsupportedVersion) {
			t.Errorf("version %d: got %v, want ErrUnsupportedVersion", v, err)
		}
	}
	for v := int16(0); v <= 4; v++ {
		if _, err := messages.EncodeOffsetCommitValue(v, commit(0, 1, -1, tooLong, 0, -1, [16]byte{})); !errors.Is(err, messages.ErrStringTooLong) {
			t.Errorf("version %d with long metadata: got %v, want ErrStringTooLong", v, err)
		}
	}
	wantPanic(t, "EncodeOffsetCommitKey with a long group", func() { messages.EncodeOffsetCommitKey(tooLong, ordersTP) })
	wantPanic(t, "EncodeGroupMetadataKey with a long group", func() { messages.EncodeGroupMetadataKey(tooLong) })
}

func TestOffsetsRecordKindString(t *testing.T) {
	for k, want := range map[messages.OffsetsRecordKind]string{
		messages.UnknownRecord:       "unknown",
		messages.OffsetCommitRecord:  "offset commit",
		messages.GroupMetadataRecord: "group metadata",
		42:                           "OffsetsRecordKind(42)",
	} {
		if got := k.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(k), got, want)
		}
	}
}

func TestOffsetsRecordString(t *testing.T) {
	deleted := commit(-1, 0, -1, "", 0, -1, [16]byte{})
	deleted.Tombstone = true
	for _, tt := range []struct {
		r    messages.OffsetsRecord
		want string
	}{
		{commit(3, 42, 5, "m", 1700000000000, -1, [16]byte{}),
			`offset commit "g1" orders-3: offset=42 leaderEpoch=5 metadata="m" commitTimestamp=1700000000000 (v3)`},
		{commit(1, 42, -1, "", 1, 2, [16]byte{}),
			`offset commit "g1" orders-3: offset=42 leaderEpoch=-1 metadata="" commitTimestamp=1 expireTimestamp=2 (v1)`},
		{commit(4, 42, 5, "", 1, -1, deadbeef),
			`offset commit "g1" orders-3: offset=42 leaderEpoch=5 metadata="" commitTimestamp=1 topicId=deadbeef0102030405060708090a0b0c (v4)`},
		{deleted, `offset commit "g1" orders-3: deleted`},
		{messages.OffsetsRecord{Kind: messages.GroupMetadataRecord, KeyVersion: 2, ValueVersion: 3, Group: "g1"}, `group metadata "g1" (v3)`},
		{messages.OffsetsRecord{Kind: messages.GroupMetadataRecord, KeyVersion: 2, Group: "g1", Tombstone: true}, `group metadata "g1": deleted`},
		{unknown(16, false), "record type 16"},
	} {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("String() = %s\nwant        %s", got, tt.want)
		}
	}
}

func BenchmarkDecodeOffsetsRecord(b *testing.B) {
	key := messages.EncodeOffsetCommitKey("payments-consumer", messages.TopicPartition{Topic: "payments.events", Partition: 17})
	for _, bc := range []struct {
		name     string
		version  int16
		metadata string
	}{
		{"v1", 1, ""},
		{"v3", 3, ""},
		{"v3/metadata", 3, "host-17/consumer-1"},
		{"v4", 4, ""},
		{"v4/metadata", 4, "host-17/consumer-1"},
	} {
		r := commit(bc.version, 1_234_567, 12, bc.metadata, 1700000000000, 1700086400000, deadbeef)
		value, err := messages.EncodeOffsetCommitValue(bc.version, r)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := messages.DecodeOffsetsRecord(key, value); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("tombstone", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := messages.DecodeOffsetsRecord(key, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unknown", func(b *testing.B) {
		key, value := unhex(b, "0005 00026731 0003 6d656d"), []byte{0, 0}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := messages.DecodeOffsetsRecord(key, value); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkEncodeOffsetCommitValue(b *testing.B) {
	r := commit(4, 1_234_567, 12, "", 1700000000000, -1, deadbeef)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := messages.EncodeOffsetCommitValue(4, r); err != nil {
			b.Fatal(err)
		}
	}
}
