import java.nio.file.Files;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * The Kafka Streams word count with `group.protocol=streams` (KIP-1071), two instances of one
 * application. Lines of the first half are counted by both instances; then the second instance
 * stops and the first counts the second half alone. Prints the final count of every word as
 * `COUNT <word> <n>` and `DONE`. Arguments: bootstrap servers, input topic, output topic,
 * application id, then the lines (`|` separates the halves).
 */
public final class StreamsWordCount {
    private static final long WAIT_MS = 60_000;

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], input = args[1], output = args[2], app = args[3];
        List<String> lines = Arrays.asList(args).subList(4, args.length);
        int split = lines.indexOf("|");
        KafkaStreams one = start(bootstrap, input, output, app);
        KafkaStreams two = start(bootstrap, input, output, app);
        Map<String, Long> counts = new TreeMap<>();
        try (KafkaConsumer<String, Long> reader = reader(bootstrap, output)) {
            produce(bootstrap, input, lines.subList(0, split));
            await(reader, counts, expected(lines.subList(0, split)));
            two.close(Duration.ofSeconds(30));
            produce(bootstrap, input, lines.subList(split + 1, lines.size()));
            List<String> all = new java.util.ArrayList<>(lines);
            all.remove("|");
            await(reader, counts, expected(all));
        } finally {
            one.close(Duration.ofSeconds(30));
            two.close(Duration.ofSeconds(30));
        }
        counts.forEach((word, n) -> System.out.println("COUNT " + word + " " + n));
        System.out.println("DONE");
    }

    private static Map<String, Long> expected(List<String> lines) {
        Map<String, Long> out = new TreeMap<>();
        for (String line : lines) {
            for (String word : line.toLowerCase().split("\\W+")) {
                if (!word.isEmpty()) {
                    out.merge(word, 1L, Long::sum);
                }
            }
        }
        return out;
    }

    private static KafkaStreams start(String bootstrap, String input, String output, String app)
            throws Exception {
        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>stream(input)
            .flatMapValues(line -> Arrays.asList(line.toLowerCase().split("\\W+")))
            .filter((key, word) -> !word.isEmpty())
            .groupBy((key, word) -> word)
            .count(Materialized.as("counts"))
            .toStream()
            .to(output, Produced.with(Serdes.String(), Serdes.Long()));
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.STATE_DIR_CONFIG, Files.createTempDirectory("wordcount").toString());
        props.put("consumer.auto.offset.reset", "earliest");
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG,
            System.getenv().getOrDefault("PROCESSING_GUARANTEE", StreamsConfig.AT_LEAST_ONCE));
        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.start();
        return streams;
    }

    private static void produce(String bootstrap, String topic, List<String> lines) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("key.serializer", StringSerializer.class.getName());
        props.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            int i = 0;
            for (String line : lines) {
                producer.send(new ProducerRecord<>(topic, "line" + i++, line)).get();
            }
        }
    }

    private static KafkaConsumer<String, Long> reader(String bootstrap, String topic) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", "wordcount-reader");
        props.put("isolation.level", "read_committed");
        props.put("auto.offset.reset", "earliest");
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", LongDeserializer.class.getName());
        KafkaConsumer<String, Long> consumer = new KafkaConsumer<>(props);
        consumer.subscribe(List.of(topic));
        return consumer;
    }

    private static void await(KafkaConsumer<String, Long> reader, Map<String, Long> counts,
            Map<String, Long> want) {
        long deadline = System.currentTimeMillis() + WAIT_MS;
        while (!counts.equals(want) && System.currentTimeMillis() < deadline) {
            for (ConsumerRecord<String, Long> r : reader.poll(Duration.ofMillis(200))) {
                counts.put(r.key(), r.value());
            }
        }
        if (!counts.equals(want)) {
            System.out.println("TIMEOUT " + counts + " wanted " + want);
        }
    }
}
