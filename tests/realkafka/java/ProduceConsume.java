import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
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
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Kafka's own Java producer and consumer, for captures of their traffic: creates TOPIC (two
 * partitions) with the Admin client, produces COUNT records with an idempotent producer
 * (compression zstd, acks=all), then consumes them back in group GROUP with {@code
 * group.protocol=PROTOCOL} ({@code classic} or {@code consumer}), commits and leaves.
 *
 * <p>Prints {@code produced N} and {@code consumed N}; exits 1 when not every record came back
 * within the time bound. Run with the single-file source launcher ({@code java -cp JARS
 * ProduceConsume.java BOOTSTRAP TOPIC GROUP PROTOCOL COUNT}).
 */
public final class ProduceConsume {

  private static final Duration CONSUME_BOUND = Duration.ofSeconds(60);

  private ProduceConsume() {}

  public static void main(String[] args) throws InterruptedException, ExecutionException {
    if (args.length != 5) {
      System.err.println("usage: ProduceConsume BOOTSTRAP TOPIC GROUP PROTOCOL COUNT");
      System.exit(2);
    }
    String bootstrap = args[0];
    String topic = args[1];
    String group = args[2];
    String protocol = args[3];
    int count = Integer.parseInt(args[4]);

    try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
      admin.createTopics(List.of(new NewTopic(topic, 2, (short) 1))).all().get();
    }

    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "zstd");
    p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
    try (KafkaProducer<String, String> producer =
        new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
      for (int i = 0; i < count; i++) {
        producer.send(new ProducerRecord<>(topic, "key-" + i, "value-" + i)).get();
      }
    }
    System.out.println("produced " + count);

    Properties c = new Properties();
    c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    c.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    c.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
    c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    List<String> values = new ArrayList<>();
    try (KafkaConsumer<String, String> consumer =
        new KafkaConsumer<>(c, new StringDeserializer(), new StringDeserializer())) {
      consumer.subscribe(List.of(topic));
      long deadline = System.nanoTime() + CONSUME_BOUND.toNanos();
      while (values.size() < count && System.nanoTime() < deadline) {
        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
          values.add(r.value());
        }
      }
      consumer.commitSync();
    }
    System.out.println("consumed " + values.size());
    System.exit(values.size() == count ? 0 : 1);
  }
}
