// A Java service's test against the kipwire dev broker: the control API through
// java.net.http.HttpClient, the data through Kafka's own client (kafka-clients). Run by
// tests/mockbroker/control/test_other_languages.py as `java -cp <kafka-clients jars>
// ControlStory.java BOOTSTRAP CONTROL_URL`; prints STORY OK and exits 0 when every step held.

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class ControlStory {
    static final String TOPIC = "java-story";
    static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    static String base;

    /** One control API call: its JSON body, after checking the status. */
    static String call(String method, String path, String body, int wantStatus) throws Exception {
        HttpRequest request = HttpRequest.newBuilder(URI.create(base + path))
                .timeout(Duration.ofSeconds(60))
                .header("Content-Type", "application/json")
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofString(body))
                .build();
        HttpResponse<String> response = HTTP.send(request, HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() != wantStatus) {
            throw new AssertionError(method + " " + path + ": status " + response.statusCode()
                    + ", want " + wantStatus + ": " + response.body());
        }
        return response.body();
    }

    static long number(String json, String field) {
        Matcher m = Pattern.compile("\"" + field + "\": (-?\\d+)").matcher(json);
        if (!m.find()) {
            throw new AssertionError("no " + field + " in " + json);
        }
        return Long.parseLong(m.group(1));
    }

    static void check(boolean condition, String what) {
        if (!condition) {
            throw new AssertionError(what);
        }
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        base = args[1];
        String cluster = call("GET", "/cluster", null, 200);
        check(cluster.split("\"state\": \"running\"", -1).length - 1 == 3, "3 running: " + cluster);
        call("POST", "/topics", "{\"name\": \"" + TOPIC + "\", \"partitions\": 1, \"replication_factor\": 3}", 201);

        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("acks", "all");
        p.put("enable.idempotence", "false");
        p.put("retries", "5");
        p.put("delivery.timeout.ms", "30000");
        p.put("request.timeout.ms", "10000");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.send(new ProducerRecord<>(TOPIC, "a")).get();

            // stop the leader: the controller elects another, and produce goes on there
            String partition = "/topics/" + TOPIC + "/partitions/0";
            long leader = number(call("GET", partition, null, 200), "leader");
            String stopped = call("POST", "/brokers/" + leader + "/stop", "{\"clean\": true}", 200);
            check(stopped.contains("\"state\": \"stopped\""), "after stop: " + stopped);
            call("POST", "/brokers/" + leader + "/stop", null, 409);
            long next = number(call("GET", partition, null, 200), "leader");
            check(next != leader && next != -1, "leader " + leader + " then " + next);
            producer.send(new ProducerRecord<>(TOPIC, "b")).get();

            // one injected error fails one produce, and the handle says it fired
            String id = String.valueOf(number(call("POST", "/faults/errors",
                    "{\"api_key\": \"PRODUCE\", \"error_code\": \"TOPIC_AUTHORIZATION_FAILED\", \"count\": 1}",
                    200), "id"));
            try {
                producer.send(new ProducerRecord<>(TOPIC, "c")).get();
                throw new AssertionError("a produce under the injected error succeeded");
            } catch (ExecutionException e) {
                check(e.getCause() instanceof TopicAuthorizationException, "failed with " + e.getCause());
            }
            String handle = call("GET", "/faults/errors/" + id, null, 200);
            check(number(handle, "fired") == 1 && number(handle, "remaining") == 0, "handle " + handle);
            producer.send(new ProducerRecord<>(TOPIC, "d")).get();

            // start it again: it registers, and every broker runs
            String started = call("POST", "/brokers/" + leader + "/start", null, 200);
            check(started.contains("\"state\": \"running\""), "after start: " + started);
            cluster = call("GET", "/cluster", null, 200);
            check(cluster.split("\"state\": \"running\"", -1).length - 1 == 3, "after start: " + cluster);
        }

        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("key.deserializer", StringDeserializer.class.getName());
        c.put("value.deserializer", StringDeserializer.class.getName());
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            TopicPartition tp = new TopicPartition(TOPIC, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            long deadline = System.currentTimeMillis() + 60_000;
            while (values.size() < 3 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofSeconds(1))) {
                    values.add(r.value());
                }
            }
        }
        check(values.equals(List.of("a", "b", "d")), "consumed " + values + ", want [a, b, d]");
        check(number(call("GET", "/topics/" + TOPIC + "/partitions/0", null, 200), "high_watermark") == 3,
                "high watermark");
        System.out.println("STORY OK");
    }
}
