import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.Stores;

/**
 * A Kafka Streams word count, for captures of a Streams application's traffic: creates the
 * topics APP-lines and APP-counts, writes LINES to the first, counts words (a repartition by word
 * and an in-memory store with its changelog) with {@code group.protocol=streams} (KIP-1071) or
 * {@code classic}, and reads the counts topic until every word has its final count.
 *
 * <p>Prints {@code word count} lines, sorted; exits 1 when the counts were not all seen within the
 * time bound. Run with the single-file source launcher ({@code java -cp JARS WordCount.java
 * BOOTSTRAP APP PROTOCOL STATE_DIR}).
 */
public final class WordCount {

  private static final Duration COUNT_BOUND = Duration.ofSeconds(90);
  private static final List<String> LINES =
      List.of("the quick brown fox", "jumps over the lazy dog", "the dog sleeps", "a fox runs");

  private WordCount() {}

  public static void main(String[] args) throws InterruptedException, ExecutionException {
    if (args.length != 4) {
      System.err.println("usage: WordCount BOOTSTRAP APP PROTOCOL STATE_DIR");
      System.exit(2);
    }
    String bootstrap = args[0];
    String app = args[1];
    String lines = app + "-lines";
    String counts = app + "-counts";

    try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
      admin
          .createTopics(List.of(new NewTopic(lines, 2, (short) 1), new NewTopic(counts, 2, (short) 1)))
          .all()
          .get();
    }

    Map<String, Long> expected = new TreeMap<>();
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    try (KafkaProducer<String, String> producer =
        new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
      for (String line : LINES) {
        producer.send(new ProducerRecord<>(lines, line)).get();
        for (String word : line.split(" ")) {
          expected.merge(word, 1L, Long::sum);
        }
      }
    }

    StreamsBuilder builder = new StreamsBuilder();
    builder.stream(lines, Consumed.with(Serdes.String(), Serdes.String()))
        .flatMapValues(line -> Arrays.asList(line.split(" ")))
        .groupBy((key, word) -> word, Grouped.with(Serdes.String(), Serdes.String()))
        .count(Materialized.<String, Long>as(Stores.inMemoryKeyValueStore("word-counts"))
            .withKeySerde(Serdes.String())
            .withValueSerde(Serdes.Long()))
        .toStream()
        .to(counts, Produced.with(Serdes.String(), Serdes.Long()));

    Properties s = new Properties();
    s.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
    s.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    s.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, args[2]);
    s.put(StreamsConfig.STATE_DIR_CONFIG, args[3]);
    s.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "100");
    s.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
    s.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");

    Properties c = new Properties();
    c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    Map<String, Long> seen = new HashMap<>();
    try (KafkaStreams streams = new KafkaStreams(builder.build(), s);
        KafkaConsumer<String, Long> reader =
            new KafkaConsumer<>(c, new StringDeserializer(), new LongDeserializer())) {
      streams.start();
      reader.assign(
          reader.partitionsFor(counts).stream()
              .map(info -> new TopicPartition(counts, info.partition()))
              .toList());
      long deadline = System.nanoTime() + COUNT_BOUND.toNanos();
      while (!seen.equals(expected) && System.nanoTime() < deadline) {
        for (ConsumerRecord<String, Long> r : reader.poll(Duration.ofMillis(200))) {
          seen.put(r.key(), r.value());
        }
      }
      streams.close(Duration.ofSeconds(30));
    }
    for (Map.Entry<String, Long> e : new TreeMap<>(seen).entrySet()) {
      System.out.println(e.getKey() + " " + e.getValue());
    }
    System.exit(seen.equals(expected) ? 0 : 1);
  }
}
