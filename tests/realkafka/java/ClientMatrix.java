import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Kafka's Java clients against one cluster, for the tool matrix: the producer (idempotent,
 * acks=all), the consumer with each group protocol (classic and consumer), the admin client
 * (describeCluster, listTopics, describeTopics, listGroups, describeConsumerGroups, listOffsets)
 * and the share consumer, on a topic of two partitions it creates.
 *
 * <p>Prints one JSON object whose values do not depend on which cluster answered: no ids,
 * timestamps or addresses; replica lists as sets; the records each consumer read sorted. Every
 * wait is bounded. Usage: {@code java -cp JARS ClientMatrix.java BOOTSTRAP}.
 */
public final class ClientMatrix {

  private static final String TOPIC = "jc-topic";
  private static final int COUNT = 20;
  private static final Duration BOUND = Duration.ofSeconds(60);

  private ClientMatrix() {}

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    Map<String, Object> out = new TreeMap<>();
    try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
      admin.createTopics(List.of(new NewTopic(TOPIC, 2, (short) 3))).all().get();
      out.put("produced", produce(bootstrap));
      out.put("consumer-classic", consume(bootstrap, "classic"));
      out.put("consumer-consumer", consume(bootstrap, "consumer"));
      out.put("share-consumer", shareConsume(admin, bootstrap));
      out.put("admin", describe(admin));
    }
    System.out.println(json(out));
  }

  private static List<String> produce(String bootstrap) throws Exception {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    List<String> written = new ArrayList<>();
    try (KafkaProducer<String, String> producer =
        new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
      for (int i = 0; i < COUNT; i++) {
        ProducerRecord<String, String> r = new ProducerRecord<>(TOPIC, i % 2, "k" + i, "v" + i);
        RecordMetadata m = producer.send(r).get();
        written.add(m.partition() + ":" + m.offset());
      }
    }
    return written;
  }

  private static Map<String, Object> consume(String bootstrap, String protocol) {
    Properties c = new Properties();
    c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    c.put(ConsumerConfig.GROUP_ID_CONFIG, "jc-" + protocol);
    c.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
    c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    TreeSet<String> read = new TreeSet<>();
    Map<String, Object> result = new TreeMap<>();
    try (KafkaConsumer<String, String> consumer =
        new KafkaConsumer<>(c, new StringDeserializer(), new StringDeserializer())) {
      consumer.subscribe(List.of(TOPIC));
      long deadline = System.nanoTime() + BOUND.toNanos();
      while (read.size() < COUNT && System.nanoTime() < deadline) {
        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
          read.add(r.partition() + ":" + r.offset() + ":" + r.key() + "=" + r.value());
        }
      }
      consumer.commitSync();
      result.put("assignment", partitions(consumer.assignment()));
      Map<String, Object> committed = new TreeMap<>();
      for (Map.Entry<TopicPartition, OffsetAndMetadata> e :
          consumer.committed(consumer.assignment()).entrySet()) {
        committed.put(String.valueOf(e.getKey().partition()), e.getValue().offset());
      }
      result.put("committed", committed);
    }
    result.put("records", new ArrayList<>(read));
    return result;
  }

  private static Map<String, Object> shareConsume(Admin admin, String bootstrap) throws Exception {
    ConfigResource group = new ConfigResource(ConfigResource.Type.GROUP, "jc-share");
    AlterConfigOp earliest =
        new AlterConfigOp(
            new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET);
    admin.incrementalAlterConfigs(Map.of(group, List.of(earliest))).all().get();
    Properties c = new Properties();
    c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    c.put(ConsumerConfig.GROUP_ID_CONFIG, "jc-share");
    TreeSet<String> read = new TreeSet<>();
    try (KafkaShareConsumer<String, String> consumer =
        new KafkaShareConsumer<>(c, new StringDeserializer(), new StringDeserializer())) {
      consumer.subscribe(List.of(TOPIC));
      long deadline = System.nanoTime() + BOUND.toNanos();
      while (read.size() < COUNT && System.nanoTime() < deadline) {
        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
          read.add(r.partition() + ":" + r.offset() + ":" + r.key() + "=" + r.value());
        }
      }
      consumer.commitSync();
    }
    return Map.of("records", new ArrayList<>(read));
  }

  private static Map<String, Object> describe(Admin admin) throws Exception {
    Map<String, Object> out = new TreeMap<>();
    DescribeClusterResult cluster = admin.describeCluster();
    Collection<Node> nodes = cluster.nodes().get();
    out.put("cluster-nodes", nodes.stream().map(Node::id).sorted().collect(Collectors.toList()));
    out.put("cluster-controller-is-a-broker", nodes.contains(cluster.controller().get()));
    out.put("cluster-id-set", cluster.clusterId().get() != null);
    out.put("topics", new TreeSet<>(admin.listTopics().names().get()));
    TopicDescription topic = admin.describeTopics(List.of(TOPIC)).allTopicNames().get().get(TOPIC);
    List<Object> parts = new ArrayList<>();
    for (TopicPartitionInfo p : topic.partitions()) {
      Map<String, Object> part = new TreeMap<>();
      part.put("partition", p.partition());
      part.put("replicas", p.replicas().stream().map(Node::id).sorted().collect(Collectors.toList()));
      part.put("isr", p.isr().stream().map(Node::id).sorted().collect(Collectors.toList()));
      part.put("leader-in-isr", p.isr().contains(p.leader()));
      parts.add(part);
    }
    out.put("describe-topic", parts);
    TreeSet<String> groups = new TreeSet<>();
    for (GroupListing g : admin.listGroups().all().get()) {
      groups.add(g.groupId() + " " + g.type().map(Object::toString).orElse("?")
          + " " + g.groupState().map(Object::toString).orElse("?"));
    }
    out.put("list-groups", groups);
    Map<String, Object> described = new TreeMap<>();
    for (Map.Entry<String, ConsumerGroupDescription> e :
        admin.describeConsumerGroups(List.of("jc-classic", "jc-consumer")).all().get().entrySet()) {
      ConsumerGroupDescription d = e.getValue();
      described.put(e.getKey(), d.type() + " " + d.groupState() + " " + d.partitionAssignor()
          + " members=" + d.members().size());
    }
    out.put("describe-consumer-groups", described);
    Map<String, Object> offsets = new TreeMap<>();
    for (Map.Entry<String, OffsetSpec> spec :
        Map.of("earliest", OffsetSpec.earliest(), "latest", OffsetSpec.latest(),
            "max-timestamp", OffsetSpec.maxTimestamp()).entrySet()) {
      Map<TopicPartition, OffsetSpec> ask = new TreeMap<>((a, b) -> a.partition() - b.partition());
      ask.put(new TopicPartition(TOPIC, 0), spec.getValue());
      ask.put(new TopicPartition(TOPIC, 1), spec.getValue());
      Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> got = admin.listOffsets(ask).all().get();
      List<Long> each = new ArrayList<>();
      each.add(got.get(new TopicPartition(TOPIC, 0)).offset());
      each.add(got.get(new TopicPartition(TOPIC, 1)).offset());
      offsets.put(spec.getKey(), each);
    }
    out.put("list-offsets", offsets);
    return out;
  }

  private static List<Integer> partitions(Collection<TopicPartition> assigned) {
    return assigned.stream().map(TopicPartition::partition).sorted().collect(Collectors.toList());
  }

  private static String json(Object value) {
    if (value instanceof Map<?, ?> map) {
      return map.entrySet().stream()
          .map(e -> json(String.valueOf(e.getKey())) + ": " + json(e.getValue()))
          .collect(Collectors.joining(", ", "{", "}"));
    }
    if (value instanceof Collection<?> items) {
      return items.stream().map(ClientMatrix::json).collect(Collectors.joining(", ", "[", "]"));
    }
    if (value instanceof String s) {
      return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }
    return String.valueOf(value);
  }
}
