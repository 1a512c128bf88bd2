package compat_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages"
)

// TestJavaGoldenVectors checks the codecs against Kafka's own classes, run
// by testdata/java/GoldenVectors.java: MM2's Checkpoint, OffsetSync and
// Heartbeat, and the group coordinator's __consumer_offsets serde. Java
// encodes a fixed list of cases that Go must match byte for byte; then Java
// decodes what Go encoded, plus edge cases, and must read what Go reads.
func TestJavaGoldenVectors(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Java and Kafka's jars")
	}
	golden := compileGoldenVectors(t)
	javaVectors := golden(t, "encode", nil)

	t.Run("Go encodes what Java encodes", func(t *testing.T) {
		fromJava := parseVectors(t, javaVectors)
		for _, v := range goVectors() {
			j, ok := fromJava[v.id()]
			if !ok {
				t.Errorf("%s: Java has no such case", v.id())
				continue
			}
			delete(fromJava, v.id())
			if !bytes.Equal(v.key, j.key) {
				t.Errorf("%s key:\nGo   %s\nJava %s", v.id(), briefHex(v.key), briefHex(j.key))
			}
			if !bytes.Equal(v.value, j.value) || (v.value == nil) != (j.value == nil) {
				t.Errorf("%s value:\nGo   %s\nJava %s", v.id(), briefHex(v.value), briefHex(j.value))
			}
		}
		delete(fromJava, "offsets/group-v3") // Go does not encode group metadata values
		for id := range fromJava {
			t.Errorf("%s: Java case missing in Go", id)
		}
	})

	t.Run("Java decodes what Go decodes", func(t *testing.T) {
		vectors := append(goVectors(), parseVectors(t, javaVectors)["offsets/group-v3"])
		vectors = append(vectors, edgeVectors(t)...)
		var in bytes.Buffer
		for _, v := range vectors {
			in.WriteString(v.line())
		}
		javaReads := parseDecoded(t, golden(t, "decode", in.Bytes()))
		for _, v := range vectors {
			javaRead, ok := javaReads[v.id()]
			if !ok {
				t.Errorf("%s: Java printed nothing", v.id())
				continue
			}
			goRead := goDecode(v)
			// Java names the exception; Go's own error tests cover the causes.
			javaRejects, goRejects := strings.HasPrefix(javaRead, "error"), goRead == "error"
			switch {
			case v.javaOnlyAccepts:
				if javaRejects || !goRejects {
					t.Errorf("%s: want Java to accept (%s) and Go to reject, got Java %q, Go %q", v.id(), v.why, javaRead, goRead)
				}
			case v.goOnlyAccepts:
				if !javaRejects || goRejects {
					t.Errorf("%s: want Go to accept (%s) and Java to reject, got Java %q, Go %q", v.id(), v.why, javaRead, goRead)
				}
			case javaRejects != goRejects || (!goRejects && javaRead != goRead):
				t.Errorf("%s:\nGo   %s\nJava %s", v.id(), goRead, javaRead)
			}
		}
	})
}

// compileGoldenVectors compiles the Java program against Kafka's jars and
// returns a function that runs it in a mode with the given stdin.
func compileGoldenVectors(t *testing.T) func(t *testing.T, mode string, stdin []byte) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	lib, err := kafkatest.Jars(ctx) // fetched once with Maven, then cached
	if err != nil {
		t.Fatalf("Kafka jars for the Java golden vectors: %v", err)
	}
	for _, tool := range []string{"javac", "java"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("Java golden vectors need a JDK: %v", err)
		}
	}
	classes := t.TempDir()
	classpath := filepath.Join(lib, "*")
	javac := exec.CommandContext(ctx, "javac", "-encoding", "UTF-8", "-cp", classpath, "-d", classes,
		filepath.Join("testdata", "java", "GoldenVectors.java"))
	if out, err := javac.CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	return func(t *testing.T, mode string, stdin []byte) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		// No -ea: MM2 runs with assertions off, and so does this check.
		cmd := exec.CommandContext(ctx, "java", "-cp", classes+string(os.PathListSeparator)+classpath,
			"org.apache.kafka.connect.mirror.GoldenVectors", mode)
		cmd.Stdin = bytes.NewReader(stdin)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("GoldenVectors %s: %v\n%s", mode, err, stderr.Bytes())
		}
		return out
	}
}

// vector is one record for the Java program: kind (offsetsync, checkpoint,
// heartbeat, offsets), a case name, key and value (nil for a tombstone).
type vector struct {
	kind, name string
	key, value []byte

	// Known, intended differences, with the reason.
	javaOnlyAccepts, goOnlyAccepts bool
	why                            string
}

func (v vector) id() string { return v.kind + "/" + v.name }

func (v vector) line() string {
	value := "null"
	if v.value != nil {
		value = hex.EncodeToString(v.value)
	}
	return v.kind + "\t" + v.name + "\t" + hex.EncodeToString(v.key) + "\t" + value + "\n"
}

// parseVectors reads the Java program's encode output.
func parseVectors(t *testing.T, out []byte) map[string]vector {
	t.Helper()
	vectors := make(map[string]vector)
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		if len(f) != 4 {
			t.Fatalf("bad encode line from Java: %.200q", line)
		}
		v := vector{kind: f[0], name: f[1], key: unhex(t, f[2])}
		if f[3] != "null" {
			v.value = unhex(t, f[3])
			if v.value == nil {
				v.value = []byte{}
			}
		}
		vectors[v.id()] = v
	}
	return vectors
}

// parseDecoded reads the Java program's decode output: fields by case id.
func parseDecoded(t *testing.T, out []byte) map[string]string {
	t.Helper()
	decoded := make(map[string]string)
	for line := range strings.Lines(string(out)) {
		f := strings.SplitN(strings.TrimSuffix(line, "\n"), "\t", 3)
		if len(f) != 3 {
			t.Fatalf("bad decode line from Java: %.200q", line)
		}
		decoded[f[0]+"/"+f[1]] = f[2]
	}
	return decoded
}

// mm2Record is what OffsetSync, Checkpoint and Heartbeat have in common.
type mm2Record interface {
	Key() []byte
	Value() []byte
}

// goVectors are the Java program's encode cases, encoded by Go.
func goVectors() []vector {
	var vs []vector
	add := func(kind, name string, r mm2Record) {
		vs = append(vs, vector{kind: kind, name: name, key: r.Key(), value: r.Value()})
	}
	sync := func(topic string, partition int32, upstream, downstream int64) messages.OffsetSync {
		return messages.OffsetSync{TopicPartition: messages.TopicPartition{Topic: topic, Partition: partition},
			UpstreamOffset: upstream, DownstreamOffset: downstream}
	}
	add("offsetsync", "ascii", sync("orders", 3, 1000, 998))
	add("offsetsync", "utf8", sync(multibyte, math.MaxInt32, math.MaxInt64, math.MaxInt64))
	add("offsetsync", "negative", sync("t", -1, -1, math.MinInt64))
	add("offsetsync", "empty", sync("", 0, 0, 0))
	add("offsetsync", "max-ascii", sync(maxASCII, 7, 1, 2))
	add("offsetsync", "max-utf8", sync(maxUTF8, 7, 1, 2))

	add("checkpoint", "ascii", checkpoint("app-1", "us-west.orders", 3, 1000, 999, ""))
	add("checkpoint", "metadata", checkpoint("app-1", "us-west.orders", 3, 1000, 999, "m1"))
	add("checkpoint", "utf8", checkpoint(multibyte, "src."+multibyte, math.MaxInt32, math.MaxInt64, math.MaxInt64, multibyte))
	add("checkpoint", "negative", checkpoint("g", "t", -1, -1, math.MinInt64, ""))
	add("checkpoint", "empty", checkpoint("", "", 0, 0, 0, ""))
	add("checkpoint", "max-ascii", checkpoint(maxASCII, maxASCII, 0, 1, 2, maxASCII))
	add("checkpoint", "max-utf8", checkpoint(maxUTF8, maxUTF8, 0, 1, 2, maxUTF8))

	add("heartbeat", "ascii", messages.Heartbeat{SourceClusterAlias: "us-west", TargetClusterAlias: "eu", Timestamp: 1700000000000})
	add("heartbeat", "utf8", messages.Heartbeat{SourceClusterAlias: multibyte, TargetClusterAlias: multibyte, Timestamp: math.MaxInt64})
	add("heartbeat", "negative", messages.Heartbeat{SourceClusterAlias: "a", TargetClusterAlias: "b", Timestamp: math.MinInt64})
	add("heartbeat", "empty", messages.Heartbeat{})
	add("heartbeat", "max", messages.Heartbeat{SourceClusterAlias: maxASCII, TargetClusterAlias: maxUTF8, Timestamp: 1})

	offsets := func(name string, key []byte, version int16, r messages.OffsetsRecord) {
		value, err := messages.EncodeOffsetCommitValue(version, r)
		if err != nil {
			panic(err) // the cases are valid by construction
		}
		vs = append(vs, vector{kind: "offsets", name: name, key: key, value: value})
	}
	g1 := messages.EncodeOffsetCommitKey("g1", ordersTP)
	for v := range int16(5) {
		offsets(fmt.Sprintf("commit-v%d", v), g1, v, commit(v, 42, 5, "m1", 1700000000000, 1700086400000, deadbeef))
	}
	offsets("commit-v4-no-topic-id", g1, 4, commit(4, 42, -1, "", 1700000000000, -1, [16]byte{}))
	offsets("commit-v3-utf8", messages.EncodeOffsetCommitKey(multibyte, messages.TopicPartition{Topic: multibyte, Partition: math.MaxInt32}),
		3, commit(3, math.MaxInt64, math.MaxInt32, multibyte, math.MinInt64, -1, [16]byte{}))
	offsets("commit-v4-max", messages.EncodeOffsetCommitKey(maxASCII, messages.TopicPartition{Topic: maxUTF8}),
		4, commit(4, -1, -1, maxUTF8, 0, -1, deadbeef))
	offsets("commit-v3-max", g1, 3, commit(3, 0, -1, maxASCII, 0, -1, [16]byte{}))
	legacy := append([]byte{0, 0}, g1[2:]...) // record type 0: Go decodes it but only writes type 1
	offsets("commit-legacy-key", legacy, 0, commit(0, 42, -1, "m1", 1700000000000, -1, [16]byte{}))
	vs = append(vs,
		vector{kind: "offsets", name: "commit-tombstone", key: g1},
		vector{kind: "offsets", name: "group-tombstone", key: messages.EncodeGroupMetadataKey("g1")})
	return vs
}

// edgeVectors are records on the edges of the formats, where Java's and Go's
// readers must agree, or differ only as intended.
func edgeVectors(t *testing.T) []vector {
	c := checkpoint("app-1", "us-west.orders", 3, 1000, 999, "m1")
	s := messages.OffsetSync{TopicPartition: ordersTP, UpstreamOffset: 1000, DownstreamOffset: 998}
	h := messages.Heartbeat{SourceClusterAlias: "us-west", TargetClusterAlias: "eu", Timestamp: 1}
	g1 := messages.EncodeOffsetCommitKey("g1", ordersTP)
	const v4 = "0004 000000000000002a 00000005 "
	const ts = "0000018bcfe56800"
	return []vector{
		{kind: "offsetsync", name: "trailing-bytes", key: append(s.Key(), 0xff), value: append(s.Value(), 1, 2)},
		{kind: "offsetsync", name: "truncated-key", key: s.Key()[:5], value: s.Value()},
		{kind: "offsetsync", name: "truncated-value", key: s.Key(), value: s.Value()[:15]},
		{kind: "offsetsync", name: "null-topic", key: unhex(t, "ffff 00000003"), value: s.Value()},
		{kind: "offsetsync", name: "tombstone", key: s.Key()},

		{kind: "checkpoint", name: "trailing-bytes", key: append(c.Key(), 0xff), value: append(c.Value(), 1, 2)},
		{kind: "checkpoint", name: "truncated-value", key: c.Key(), value: c.Value()[:len(c.Value())-1]},
		{kind: "checkpoint", name: "negative-metadata-length", key: c.Key(), value: append(c.Value()[:18:18], 0x80, 0x00)},
		{kind: "checkpoint", name: "tombstone", key: c.Key()},
		{kind: "checkpoint", name: "version-1", key: c.Key(), value: append([]byte{0, 1}, c.Value()[2:]...),
			javaOnlyAccepts: true, why: "MM2 reads any version as version 0; Go refuses to guess"},

		{kind: "heartbeat", name: "truncated-key", key: h.Key()[:10], value: h.Value()},
		{kind: "heartbeat", name: "tombstone", key: h.Key()},
		{kind: "heartbeat", name: "version-1", key: h.Key(), value: append([]byte{0, 1}, h.Value()[2:]...),
			javaOnlyAccepts: true, why: "MM2 reads any version as version 0; Go refuses to guess"},

		{kind: "offsets", name: "v3-trailing-bytes", key: g1, value: unhex(t, "0003 000000000000002a 00000005 0000"+ts+"ff")},
		{kind: "offsets", name: "v4-unknown-tag", key: g1, value: unhex(t, v4+"01"+ts+"02 07 03 aabbcc 00 10 deadbeef0102030405060708090a0b0c")},
		{kind: "offsets", name: "v4-null-metadata", key: g1, value: unhex(t, v4+"00"+ts+"00")},
		{kind: "offsets", name: "v4-truncated-topic-id", key: g1, value: unhex(t, v4+"01"+ts+"01 00 10 deadbeef")},
		{kind: "offsets", name: "v5", key: g1, value: unhex(t, "0005 000000000000002a 00000005 01"+ts+"00")},
		{kind: "offsets", name: "truncated-key", key: g1[:9], value: unhex(t, "0003 000000000000002a 00000005 0000"+ts)},
		{kind: "offsets", name: "consumer-group-type-3", key: unhex(t, "0003 00026731"), value: nil},
		{kind: "offsets", name: "future-type-100", key: unhex(t, "0064 00026731"), value: unhex(t, "0000"),
			goOnlyAccepts: true, why: "Kafka fails on record types it does not know; a tailer must skip them"},
	}
}

// goDecode renders what Go reads from v the way the Java program prints it.
func goDecode(v vector) string {
	switch v.kind {
	case "offsetsync":
		s, err := messages.DecodeOffsetSync(v.key, v.value)
		if err != nil {
			return "error"
		}
		return fmt.Sprintf("topic=%x partition=%d upstreamOffset=%d downstreamOffset=%d",
			s.Topic, s.Partition, s.UpstreamOffset, s.DownstreamOffset)
	case "checkpoint":
		c, err := messages.DecodeCheckpoint(v.key, v.value)
		if err != nil {
			return "error"
		}
		return fmt.Sprintf("group=%x topic=%x partition=%d upstreamOffset=%d downstreamOffset=%d metadata=%x",
			c.Group, c.Topic, c.Partition, c.UpstreamOffset, c.DownstreamOffset, c.Metadata)
	case "heartbeat":
		h, err := messages.DecodeHeartbeat(v.key, v.value)
		if err != nil {
			return "error"
		}
		return fmt.Sprintf("sourceClusterAlias=%x targetClusterAlias=%x timestamp=%d",
			h.SourceClusterAlias, h.TargetClusterAlias, h.Timestamp)
	case "offsets":
		r, err := messages.DecodeOffsetsRecord(v.key, v.value)
		if err != nil {
			return "error"
		}
		var b strings.Builder
		fmt.Fprintf(&b, "type=%d", r.KeyVersion)
		switch r.Kind {
		case messages.OffsetCommitRecord:
			fmt.Fprintf(&b, " group=%x topic=%x partition=%d", r.Group, r.Topic, r.Partition)
		case messages.GroupMetadataRecord:
			fmt.Fprintf(&b, " group=%x", r.Group)
		default:
			return b.String()
		}
		if r.Tombstone {
			return b.String() + " tombstone"
		}
		fmt.Fprintf(&b, " version=%d", r.ValueVersion)
		if r.Kind == messages.OffsetCommitRecord {
			fmt.Fprintf(&b, " offset=%d leaderEpoch=%d metadata=%x commitTimestamp=%d expireTimestamp=%d topicId=%x",
				r.Offset, r.LeaderEpoch, r.Metadata, r.CommitTimestamp, r.ExpireTimestamp, r.TopicID)
		}
		return b.String()
	}
	panic("unknown kind " + v.kind)
}

func briefHex(b []byte) string {
	if b == nil {
		return "null"
	}
	s := hex.EncodeToString(b)
	if len(s) > 120 {
		return fmt.Sprintf("%s… (%d bytes)", s[:120], len(b))
	}
	return s
}
