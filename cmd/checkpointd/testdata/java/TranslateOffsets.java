import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;

import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.mirror.RemoteClusterUtils;

/**
 * Prints what MM2's RemoteClusterUtils.translateOffsets reports for a group:
 * one line "offset TOPIC PARTITION OFFSET METADATA" per target partition,
 * sorted. Run in source-launcher mode on Kafka's jars:
 * java -cp 'lib/*' TranslateOffsets.java BOOTSTRAP SOURCE_ALIAS GROUP
 */
public class TranslateOffsets {
    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: TranslateOffsets BOOTSTRAP SOURCE_ALIAS GROUP");
            System.exit(2);
        }
        Map<String, Object> props = Map.of("bootstrap.servers", args[0]);
        Map<TopicPartition, OffsetAndMetadata> offsets =
            RemoteClusterUtils.translateOffsets(props, args[1], args[2], Duration.ofSeconds(60));
        Map<String, OffsetAndMetadata> sorted = new TreeMap<>();
        offsets.forEach((tp, om) -> sorted.put(String.format("%s %010d", tp.topic(), tp.partition()), om));
        sorted.forEach((key, om) -> {
            String[] tp = key.split(" ");
            System.out.printf("offset %s %d %d %s%n", tp[0], Integer.parseInt(tp[1]), om.offset(), om.metadata());
        });
    }
}
