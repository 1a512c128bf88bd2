// GoldenVectors checks checkpointd's Go codecs against Kafka's own Java classes:
// MirrorMaker 2's Checkpoint, OffsetSync and Heartbeat from connect-mirror-client,
// and the group coordinator's record serde for __consumer_offsets.
//
// It lives in MM2's package because recordKey() and recordValue(), the methods
// MM2 itself uses to write these records, are package-private. On the class
// path (not the module path) that is allowed.
//
// Usage: java -cp <dir>:<kafka lib>/* org.apache.kafka.connect.mirror.GoldenVectors encode|decode
//
//   encode  prints a fixed list of cases, one per line:  kind TAB name TAB keyhex TAB valuehex
//   decode  reads lines of that shape on stdin (valuehex "null" for a tombstone),
//           decodes them with the Java classes and prints: kind TAB name TAB fields
//           where fields is "error <ExceptionClass>" if Java rejects the record.
//
// Fields are space-separated name=value pairs; strings are printed as the hex
// of their UTF-8 bytes so that the comparison with Go is byte for byte. The Go
// side (messages/java_golden_test.go) renders its records the same way.
package org.apache.kafka.connect.mirror;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.group.GroupCoordinatorRecordSerde;
import org.apache.kafka.coordinator.group.generated.GroupMetadataKey;
import org.apache.kafka.coordinator.group.generated.GroupMetadataValue;
import org.apache.kafka.coordinator.group.generated.LegacyOffsetCommitKey;
import org.apache.kafka.coordinator.group.generated.LegacyOffsetCommitValue;
import org.apache.kafka.coordinator.group.generated.OffsetCommitKey;
import org.apache.kafka.coordinator.group.generated.OffsetCommitValue;
import org.apache.kafka.server.common.ApiMessageAndVersion;

public final class GoldenVectors {
    private static final HexFormat HEX = HexFormat.of();

    // The same strings as the Go tests' multibyte, maxASCII and maxUTF8.
    private static final String MULTIBYTE = "gr\u00fc\u00dfe-\u65e5\u672c-\ud83d\ude80";
    private static final String MAX_ASCII = "x".repeat(Short.MAX_VALUE);
    private static final String MAX_UTF8 = "\u00e9".repeat(Short.MAX_VALUE / 2) + "x";
    private static final Uuid TOPIC_ID = new Uuid(0xdeadbeef01020304L, 0x05060708090a0b0cL);

    private static final GroupCoordinatorRecordSerde SERDE = new GroupCoordinatorRecordSerde();

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        if (args.length == 1 && args[0].equals("encode")) {
            encode(out);
        } else if (args.length == 1 && args[0].equals("decode")) {
            decode(new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)), out);
        } else {
            System.err.println("usage: GoldenVectors encode|decode");
            System.exit(2);
        }
        out.flush();
        if (out.checkError()) {
            System.exit(1);
        }
    }

    // ---- encode: the fixed cases ----

    private static void encode(PrintStream out) {
        emit(out, "offsetsync", "ascii", new OffsetSync(new TopicPartition("orders", 3), 1000, 998));
        emit(out, "offsetsync", "utf8", new OffsetSync(new TopicPartition(MULTIBYTE, Integer.MAX_VALUE), Long.MAX_VALUE, Long.MAX_VALUE));
        emit(out, "offsetsync", "negative", new OffsetSync(new TopicPartition("t", -1), -1, Long.MIN_VALUE));
        emit(out, "offsetsync", "empty", new OffsetSync(new TopicPartition("", 0), 0, 0));
        emit(out, "offsetsync", "max-ascii", new OffsetSync(new TopicPartition(MAX_ASCII, 7), 1, 2));
        emit(out, "offsetsync", "max-utf8", new OffsetSync(new TopicPartition(MAX_UTF8, 7), 1, 2));

        emit(out, "checkpoint", "ascii", new Checkpoint("app-1", new TopicPartition("us-west.orders", 3), 1000, 999, ""));
        emit(out, "checkpoint", "metadata", new Checkpoint("app-1", new TopicPartition("us-west.orders", 3), 1000, 999, "m1"));
        emit(out, "checkpoint", "utf8", new Checkpoint(MULTIBYTE, new TopicPartition("src." + MULTIBYTE, Integer.MAX_VALUE), Long.MAX_VALUE, Long.MAX_VALUE, MULTIBYTE));
        emit(out, "checkpoint", "negative", new Checkpoint("g", new TopicPartition("t", -1), -1, Long.MIN_VALUE, ""));
        emit(out, "checkpoint", "empty", new Checkpoint("", new TopicPartition("", 0), 0, 0, ""));
        emit(out, "checkpoint", "max-ascii", new Checkpoint(MAX_ASCII, new TopicPartition(MAX_ASCII, 0), 1, 2, MAX_ASCII));
        emit(out, "checkpoint", "max-utf8", new Checkpoint(MAX_UTF8, new TopicPartition(MAX_UTF8, 0), 1, 2, MAX_UTF8));

        emit(out, "heartbeat", "ascii", new Heartbeat("us-west", "eu", 1700000000000L));
        emit(out, "heartbeat", "utf8", new Heartbeat(MULTIBYTE, MULTIBYTE, Long.MAX_VALUE));
        emit(out, "heartbeat", "negative", new Heartbeat("a", "b", Long.MIN_VALUE));
        emit(out, "heartbeat", "empty", new Heartbeat("", "", 0));
        emit(out, "heartbeat", "max", new Heartbeat(MAX_ASCII, MAX_UTF8, 1));

        for (short v = 0; v <= 4; v++) {
            emitOffsets(out, "commit-v" + v, commitKey("g1", "orders", 3),
                    new ApiMessageAndVersion(commitValue(42, 5, "m1", 1700000000000L, 1700086400000L, TOPIC_ID), v));
        }
        emitOffsets(out, "commit-v4-no-topic-id", commitKey("g1", "orders", 3),
                new ApiMessageAndVersion(commitValue(42, -1, "", 1700000000000L, -1, Uuid.ZERO_UUID), (short) 4));
        emitOffsets(out, "commit-v3-utf8", commitKey(MULTIBYTE, MULTIBYTE, Integer.MAX_VALUE),
                new ApiMessageAndVersion(commitValue(Long.MAX_VALUE, Integer.MAX_VALUE, MULTIBYTE, Long.MIN_VALUE, -1, Uuid.ZERO_UUID), (short) 3));
        emitOffsets(out, "commit-v4-max", commitKey(MAX_ASCII, MAX_UTF8, 0),
                new ApiMessageAndVersion(commitValue(-1, -1, MAX_UTF8, 0, -1, TOPIC_ID), (short) 4));
        emitOffsets(out, "commit-v3-max", commitKey("g1", "orders", 3),
                new ApiMessageAndVersion(commitValue(0, -1, MAX_ASCII, 0, -1, Uuid.ZERO_UUID), (short) 3));
        emitOffsets(out, "commit-legacy-key", new LegacyOffsetCommitKey().setGroup("g1").setTopic("orders").setPartition(3),
                new ApiMessageAndVersion(new LegacyOffsetCommitValue().setOffset(42).setMetadata("m1").setCommitTimestamp(1700000000000L), (short) 0));
        emitOffsets(out, "commit-tombstone", commitKey("g1", "orders", 3), null);
        GroupMetadataValue group = new GroupMetadataValue().setProtocolType("consumer").setGeneration(3)
                .setProtocol("range").setLeader("member-1").setCurrentStateTimestamp(1700000000000L)
                .setMembers(Collections.emptyList());
        emitOffsets(out, "group-v3", new GroupMetadataKey().setGroup("g1"), new ApiMessageAndVersion(group, (short) 3));
        emitOffsets(out, "group-tombstone", new GroupMetadataKey().setGroup("g1"), null);
    }

    private static OffsetCommitKey commitKey(String group, String topic, int partition) {
        return new OffsetCommitKey().setGroup(group).setTopic(topic).setPartition(partition);
    }

    private static OffsetCommitValue commitValue(long offset, int leaderEpoch, String metadata, long commitTimestamp, long expireTimestamp, Uuid topicId) {
        return new OffsetCommitValue().setOffset(offset).setLeaderEpoch(leaderEpoch).setMetadata(metadata)
                .setCommitTimestamp(commitTimestamp).setExpireTimestamp(expireTimestamp).setTopicId(topicId);
    }

    private static void emit(PrintStream out, String kind, String name, OffsetSync s) {
        line(out, kind, name, s.recordKey(), s.recordValue());
    }

    private static void emit(PrintStream out, String kind, String name, Checkpoint c) {
        line(out, kind, name, c.recordKey(), c.recordValue());
    }

    private static void emit(PrintStream out, String kind, String name, Heartbeat h) {
        line(out, kind, name, h.recordKey(), h.recordValue());
    }

    private static void emitOffsets(PrintStream out, String name, ApiMessage key, ApiMessageAndVersion value) {
        CoordinatorRecord record = value == null ? CoordinatorRecord.tombstone(key) : CoordinatorRecord.record(key, value);
        line(out, "offsets", name, SERDE.serializeKey(record), SERDE.serializeValue(record));
    }

    private static void line(PrintStream out, String kind, String name, byte[] key, byte[] value) {
        out.println(kind + "\t" + name + "\t" + HEX.formatHex(key) + "\t" + (value == null ? "null" : HEX.formatHex(value)));
    }

    // ---- decode: whatever Go sends ----

    private static void decode(BufferedReader in, PrintStream out) throws Exception {
        for (String line; (line = in.readLine()) != null; ) {
            if (line.isEmpty()) {
                continue;
            }
            String[] f = line.split("\t", -1);
            if (f.length != 4) {
                throw new IllegalArgumentException("want 4 tab-separated fields, got " + f.length + ": " + line);
            }
            byte[] key = HEX.parseHex(f[2]);
            byte[] value = f[3].equals("null") ? null : HEX.parseHex(f[3]);
            String fields;
            try {
                fields = fields(f[0], key, value);
            } catch (RuntimeException e) {
                fields = "error " + e.getClass().getSimpleName();
            }
            out.println(f[0] + "\t" + f[1] + "\t" + fields);
        }
    }

    private static String fields(String kind, byte[] key, byte[] value) {
        ConsumerRecord<byte[], byte[]> record = new ConsumerRecord<>("golden", 0, 0L, key, value);
        switch (kind) {
            case "offsetsync": {
                OffsetSync s = OffsetSync.deserializeRecord(record);
                return "topic=" + str(s.topicPartition().topic()) + " partition=" + s.topicPartition().partition()
                        + " upstreamOffset=" + s.upstreamOffset() + " downstreamOffset=" + s.downstreamOffset();
            }
            case "checkpoint": {
                Checkpoint c = Checkpoint.deserializeRecord(record);
                return "group=" + str(c.consumerGroupId()) + " topic=" + str(c.topicPartition().topic())
                        + " partition=" + c.topicPartition().partition() + " upstreamOffset=" + c.upstreamOffset()
                        + " downstreamOffset=" + c.downstreamOffset() + " metadata=" + str(c.metadata());
            }
            case "heartbeat": {
                Heartbeat h = Heartbeat.deserializeRecord(record);
                return "sourceClusterAlias=" + str(h.sourceClusterAlias()) + " targetClusterAlias=" + str(h.targetClusterAlias())
                        + " timestamp=" + h.timestamp();
            }
            case "offsets":
                return offsetsFields(SERDE.deserialize(ByteBuffer.wrap(key), value == null ? null : ByteBuffer.wrap(value)));
            default:
                throw new IllegalArgumentException("unknown kind " + kind);
        }
    }

    private static String offsetsFields(CoordinatorRecord record) {
        ApiMessage key = record.key();
        ApiMessageAndVersion value = record.value();
        List<String> f = new ArrayList<>();
        f.add("type=" + key.apiKey());
        if (key instanceof OffsetCommitKey k) {
            f.add("group=" + str(k.group()) + " topic=" + str(k.topic()) + " partition=" + k.partition());
        } else if (key instanceof LegacyOffsetCommitKey k) {
            f.add("group=" + str(k.group()) + " topic=" + str(k.topic()) + " partition=" + k.partition());
        } else if (key instanceof GroupMetadataKey k) {
            f.add("group=" + str(k.group()));
        } else {
            return String.join(" ", f); // other record types: Go skips them
        }
        if (value == null) {
            f.add("tombstone");
            return String.join(" ", f);
        }
        f.add("version=" + value.version());
        if (value.message() instanceof OffsetCommitValue v) {
            f.add(commit(v.offset(), v.leaderEpoch(), v.metadata(), v.commitTimestamp(), v.expireTimestamp(), v.topicId()));
        } else if (value.message() instanceof LegacyOffsetCommitValue v) {
            f.add(commit(v.offset(), -1, v.metadata(), v.commitTimestamp(), -1, Uuid.ZERO_UUID));
        }
        return String.join(" ", f);
    }

    private static String commit(long offset, int leaderEpoch, String metadata, long commitTimestamp, long expireTimestamp, Uuid topicId) {
        ByteBuffer id = ByteBuffer.allocate(16).putLong(topicId.getMostSignificantBits()).putLong(topicId.getLeastSignificantBits());
        return "offset=" + offset + " leaderEpoch=" + leaderEpoch + " metadata=" + str(metadata)
                + " commitTimestamp=" + commitTimestamp + " expireTimestamp=" + expireTimestamp
                + " topicId=" + HEX.formatHex(id.array());
    }

    private static String str(String s) {
        return HEX.formatHex(s.getBytes(StandardCharsets.UTF_8));
    }
}
