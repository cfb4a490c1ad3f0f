import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * A KafkaConsumer with group.protocol=consumer (KIP-848): joins GROUP, reads TOPIC until it has
 * read COUNT records or SECONDS pass, commits, leaves. Prints "read N", "partitions [..]" and
 * "generation G" (its member epoch). Usage: java -cp kafka-clients Kip848Consume.java BOOTSTRAP
 * GROUP TOPIC COUNT SECONDS
 */
public class Kip848Consume {
    public static void main(String[] args) {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("group.id", args[1]);
        props.put("group.protocol", "consumer");
        props.put("auto.offset.reset", "earliest");
        props.put("enable.auto.commit", "false");
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        int wanted = Integer.parseInt(args[3]);
        long deadline = System.currentTimeMillis() + 1000L * Integer.parseInt(args[4]);
        int read = 0;
        TreeSet<Integer> partitions = new TreeSet<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(args[2]));
            while (read < wanted && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(100))) {
                    read++;
                }
                for (TopicPartition tp : consumer.assignment()) {
                    partitions.add(tp.partition());
                }
            }
            consumer.commitSync();
            System.out.println("read " + read);
            System.out.println("partitions " + partitions);
            System.out.println("generation " + consumer.groupMetadata().generationId());
        }
    }
}
