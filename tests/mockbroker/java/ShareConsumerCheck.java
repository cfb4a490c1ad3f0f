import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Kafka 4.4's KafkaShareConsumer against a broker: `acks` (one consumer, explicit
 * acknowledgements: ACCEPT, RELEASE then redelivery, REJECT) or `two` (two consumers of one group
 * sharing one partition). Prints one line per delivery: `DELIVERED <consumer> <key> <count>`.
 * Arguments: bootstrap servers, topic, group, scenario, record count.
 */
public final class ShareConsumerCheck {
    private static final int MAX_POLLS = 60;

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2], scenario = args[3];
        int count = Integer.parseInt(args[4]);
        earliest(bootstrap, group);
        produce(bootstrap, topic, count);
        if (scenario.equals("acks")) {
            acks(bootstrap, topic, group, count);
        } else {
            two(bootstrap, topic, group, count);
        }
        System.out.println("DONE");
    }

    private static void earliest(String bootstrap, String group) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(props)) {
            ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
            AlterConfigOp op = new AlterConfigOp(
                new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET);
            Map<ConfigResource, Collection<AlterConfigOp>> change = Map.of(resource, List.of(op));
            admin.incrementalAlterConfigs(change).all().get();
        }
    }

    private static void produce(String bootstrap, String topic, int count) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("acks", "all");
        props.put("key.serializer", StringSerializer.class.getName());
        props.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            for (int i = 0; i < count; i++) {
                // one batch per record, so that consumers acquiring whole batches can share them
                producer.send(new ProducerRecord<>(topic, 0, "k" + i, "v" + i)).get();
            }
        }
    }

    private static KafkaShareConsumer<String, String> consumer(
            String bootstrap, String group, String mode, int maxRecords) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", group);
        props.put("share.acknowledgement.mode", mode);
        props.put("max.poll.records", Integer.toString(maxRecords));
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        return new KafkaShareConsumer<>(props);
    }

    private static void report(String who, ConsumerRecord<String, String> r) {
        System.out.println("DELIVERED " + who + " " + r.key() + " " + r.deliveryCount().orElse((short) -1));
    }

    private static void acks(String bootstrap, String topic, String group, int count) {
        try (KafkaShareConsumer<String, String> c = consumer(bootstrap, group, "explicit", 500)) {
            c.subscribe(List.of(topic));
            Set<String> first = new TreeSet<>();
            boolean redelivered = false;
            for (int poll = 0; poll < MAX_POLLS && !redelivered; poll++) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    report("c1", r);
                    if (r.key().equals("k1") && r.deliveryCount().orElse((short) 0) == 1) {
                        c.acknowledge(r, AcknowledgeType.RELEASE);
                    } else if (r.key().equals("k2")) {
                        c.acknowledge(r, AcknowledgeType.REJECT);
                    } else {
                        c.acknowledge(r, AcknowledgeType.ACCEPT);
                    }
                    if (r.key().equals("k1") && r.deliveryCount().orElse((short) 0) > 1) {
                        redelivered = true;
                    }
                    first.add(r.key());
                }
                c.commitSync();
            }
            // nothing else comes: k2 was rejected, everything else accepted
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(1500))) {
                report("c1", r);
                c.acknowledge(r, AcknowledgeType.ACCEPT);
            }
            c.commitSync();
        }
    }

    private static void two(String bootstrap, String topic, String group, int count) {
        try (KafkaShareConsumer<String, String> c1 = consumer(bootstrap, group, "implicit", 3);
             KafkaShareConsumer<String, String> c2 = consumer(bootstrap, group, "implicit", 3)) {
            c1.subscribe(List.of(topic));
            c2.subscribe(List.of(topic));
            Set<String> seen = new TreeSet<>();
            List<KafkaShareConsumer<String, String>> both = new ArrayList<>(List.of(c1, c2));
            for (int poll = 0; poll < MAX_POLLS && seen.size() < count; poll++) {
                KafkaShareConsumer<String, String> c = both.get(poll % 2);
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(300))) {
                    report(c == c1 ? "c1" : "c2", r);
                    seen.add(r.key());
                }
            }
            c1.commitSync();
            c2.commitSync();
        }
    }
}
