package kafkatest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/checkpointd/checkpointd/messages"
)

// offsetSync is an MM2 OffsetSync record (OffsetSync.recordKey, recordValue).
// The real codec lives in package messages; this one only checks the bed
// against the wire format.
type offsetSync struct {
	tp                   messages.TopicPartition
	upstream, downstream int64
}

// decodeOffsetSync reads key = int16-length UTF-8 topic + int32 partition and
// value = int64 upstream + int64 downstream, all big-endian.
func decodeOffsetSync(key, value []byte) (offsetSync, error) {
	var s offsetSync
	if len(key) < 2 {
		return s, errors.New("key shorter than its topic length")
	}
	n := int(int16(binary.BigEndian.Uint16(key)))
	if n < 0 || len(key) < 2+n+4 {
		return s, fmt.Errorf("key of %d bytes cannot hold a %d-byte topic and a partition", len(key), n)
	}
	s.tp.Topic = string(key[2 : 2+n])
	s.tp.Partition = int32(binary.BigEndian.Uint32(key[2+n:]))
	if len(value) < 16 {
		return s, fmt.Errorf("value of %d bytes, want 16", len(value))
	}
	s.upstream = int64(binary.BigEndian.Uint64(value))
	s.downstream = int64(binary.BigEndian.Uint64(value[8:]))
	return s, nil
}

func TestDecodeOffsetSyncSpecExample(t *testing.T) {
	key := []byte{0x00, 0x06, 'o', 'r', 'd', 'e', 'r', 's', 0x00, 0x00, 0x00, 0x03}
	value := []byte{0, 0, 0, 0, 0, 0, 0x03, 0xe8, 0, 0, 0, 0, 0, 0, 0x03, 0xe6}
	got, err := decodeOffsetSync(key, value)
	want := offsetSync{messages.TopicPartition{Topic: "orders", Partition: 3}, 1000, 998}
	if err != nil || got != want {
		t.Fatalf("decode = %+v, %v; want %+v", got, err, want)
	}
	if _, err := decodeOffsetSync(key[:5], value); err == nil {
		t.Error("a truncated key decoded")
	}
}

func TestMirrorMakerReplicatesAndWritesOffsetSyncs(t *testing.T) {
	for _, tc := range []struct {
		name string
		bed  func(testing.TB) *Bed
	}{
		{"one-node-target", Shared},
		{"three-node-target", SharedThreeBrokerTarget}, // MM2 gets a bootstrap list
	} {
		t.Run(tc.name, func(t *testing.T) { testMirrorMaker(t, tc.bed(t)) })
	}
}

func testMirrorMaker(t *testing.T, b *Bed) {
	topic := UniqueName(t, "orders")
	b.Source.CreateTopic(t, topic, 2, nil)
	_, last0 := b.Source.Produce(t, topic, 0, 5)
	_, last1 := b.Source.Produce(t, topic, 1, 3)
	// A group that consumed all of partition 0 and two records of partition 1.
	group := UniqueName(t, "group")
	b.Source.CommitOffsets(t, group, map[messages.TopicPartition]int64{
		{Topic: topic, Partition: 0}: last0 + 1,
		{Topic: topic, Partition: 1}: 2,
	})

	start := time.Now()
	m := b.StartMM2(t, MM2Options{Topics: topic, Groups: group, EmitCheckpoints: true, SyncGroupOffsets: true})
	t.Logf("mm2: canary replicated %s after JVM start", m.ReadyIn.Round(time.Millisecond))
	got := m.WaitReplicated(t, topic)
	t.Logf("mm2: %s replicated %s after StartMM2", topic, time.Since(start).Round(time.Millisecond))

	want := b.Source.ReadAll(t, topic)
	if len(got) != len(want) {
		t.Fatalf("target %s holds %d records, source %s holds %d", b.RemoteTopic(topic), len(got), topic, len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Topic != b.RemoteTopic(topic) || g.Partition != w.Partition || g.Offset != w.Offset ||
			!bytes.Equal(g.Key, w.Key) || !bytes.Equal(g.Value, w.Value) {
			t.Errorf("record %d: target %s/%d@%d %q=%q, source %s/%d@%d %q=%q", i,
				g.Topic, g.Partition, g.Offset, g.Key, g.Value, w.Topic, w.Partition, w.Offset, w.Key, w.Value)
		}
	}

	// The first record of a partition is synced at once; the rest wait for the
	// task's commit (offset.flush.interval.ms, 1 s here). Wait for the last.
	lastOf := map[int32]int64{0: last0, 1: last1}
	deadline := time.Now().Add(30 * time.Second)
	for {
		latest := map[int32]offsetSync{}
		for _, rec := range b.Source.ReadAll(t, b.OffsetSyncsTopic()) {
			s, err := decodeOffsetSync(rec.Key, rec.Value)
			if err != nil {
				t.Fatalf("offset sync at %d: %v (key %x, value %x)", rec.Offset, err, rec.Key, rec.Value)
			}
			if s.tp.Topic != topic {
				continue // other tests share the topic
			}
			// A fresh topic copied from its start has the same offsets on both sides.
			if s.upstream < 0 || s.upstream > lastOf[s.tp.Partition] || s.downstream != s.upstream {
				t.Fatalf("insane offset sync %+v (last upstream offset %d)", s, lastOf[s.tp.Partition])
			}
			latest[s.tp.Partition] = s
		}
		if latest[0].upstream == last0 && latest[1].upstream == last1 {
			t.Logf("offset syncs: %+v", latest)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no offset syncs up to upstream %d/%d for %s within 30s; latest %+v\n%s", last0, last1, topic, latest, m.LogTail(40))
		}
		time.Sleep(500 * time.Millisecond)
	}

	// With checkpoints and group offset sync on, MM2 commits the translated
	// offsets into the idle group on the target. Both are exact here: 5 is one
	// past the sync 4->4, and 2 hits the sync 2->2.
	remote := b.RemoteTopic(topic)
	wantTarget := map[messages.TopicPartition]int64{{Topic: remote, Partition: 0}: last0 + 1, {Topic: remote, Partition: 1}: 2}
	deadline = time.Now().Add(60 * time.Second)
	for {
		got := b.Target.CommittedOffsets(t, group)
		if maps.Equal(got, wantTarget) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("target offsets of %s = %v, want %v\n%s", group, got, wantTarget, m.LogTail(40))
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("mm2: group %s synced to the target %s after StartMM2", group, time.Since(start).Round(time.Millisecond))

	stopStart := time.Now()
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("mm2: stopped in %s", time.Since(stopStart).Round(time.Millisecond))
}
