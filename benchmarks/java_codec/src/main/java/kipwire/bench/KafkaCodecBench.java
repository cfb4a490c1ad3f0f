package kipwire.bench;

import java.io.IOException;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.common.message.ApiVersionsRequestData;
import org.apache.kafka.common.message.FetchRequestData;
import org.apache.kafka.common.message.MetadataResponseData;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.protocol.Readable;

/**
 * Kafka's own generated codec (the {@code *Data} classes of kafka-clients) on message bodies that
 * kipwire wrote: each body must decode and re-encode byte-identically, then decode and encode are
 * timed in a warm loop. Prints one JSON object on stdout.
 *
 * <p>Usage: {@code KafkaCodecBench [--check] [--budget SECONDS] MESSAGE VERSION FILE ...}; with
 * {@code --check} only the round trip is done. Exit 0 when every body round-trips, 1 when one
 * does not (the JSON says which and where), 2 on bad arguments or unreadable files.
 */
public final class KafkaCodecBench {

  /** A generated class's reading constructor, {@code new XData(readable, version)}. */
  @FunctionalInterface
  interface Decoder {
    Message decode(Readable readable, short version);
  }

  private static final Map<String, Decoder> DECODERS = new TreeMap<>(Map.of(
      "ApiVersionsRequest", ApiVersionsRequestData::new,
      "FetchRequest", FetchRequestData::new,
      "MetadataResponse", MetadataResponseData::new,
      "ProduceRequest", ProduceRequestData::new));

  /** The body of one case, and what the run found. */
  private static final class Case {
    final String message;
    final short version;
    final Decoder decoder;
    final ByteBuffer wire;
    int reencodedBytes;
    int firstDifference = -1;
    String error;
    double encodeOps = Double.NaN;
    double decodeOps = Double.NaN;

    Case(String message, short version, Decoder decoder, ByteBuffer wire) {
      this.message = message;
      this.version = version;
      this.decoder = decoder;
      this.wire = wire;
    }
  }

  // JMH's blackhole trick: a result compared against a volatile nobody else writes cannot be
  // optimised away, and the comparison costs a plain load, unlike a volatile store per call
  private static volatile Object never = new Object();
  private static Object leaked;

  private static void consume(Object result) {
    if (result == never) {
      leaked = result;
    }
  }

  private static final ThreadMXBean THREAD = ManagementFactory.getThreadMXBean();
  private static final List<GarbageCollectorMXBean> COLLECTORS =
      ManagementFactory.getGarbageCollectorMXBeans();

  // CPU time, as the Python side counts it (time descheduled on a busy machine is not the
  // codec's), with the collector's pauses added: the Python side's cyclic collector is paused but
  // its reference counting frees memory inside the timed calls, so Java's collections count too.
  // The process CPU clock would hold both, but the JVM reads it in 10 ms ticks; this thread's
  // clock has nanoseconds, and with the serial collector a pause is the collector's CPU time.
  private static long cpuNanos() {
    long gcMillis = 0;
    for (GarbageCollectorMXBean gc : COLLECTORS) {
      gcMillis += Math.max(0, gc.getCollectionTime());
    }
    return THREAD.getCurrentThreadCpuTime() + gcMillis * 1_000_000L;
  }

  private KafkaCodecBench() {}

  public static void main(String[] args) {
    boolean checkOnly = false;
    double budget = 1.2;
    List<Case> cases = new ArrayList<>();
    try {
      int i = 0;
      while (i < args.length && args[i].startsWith("--")) {
        if (args[i].equals("--check")) {
          checkOnly = true;
          i += 1;
        } else if (args[i].equals("--budget") && i + 1 < args.length) {
          budget = Double.parseDouble(args[i + 1]);
          i += 2;
        } else {
          throw new IllegalArgumentException("unknown option " + args[i]);
        }
      }
      if (budget <= 0 || (args.length - i) % 3 != 0 || i == args.length) {
        throw new IllegalArgumentException(
            "usage: KafkaCodecBench [--check] [--budget SECONDS] MESSAGE VERSION FILE ...");
      }
      for (; i < args.length; i += 3) {
        Decoder decoder = DECODERS.get(args[i]);
        if (decoder == null) {
          throw new IllegalArgumentException(
              "unknown message " + args[i] + "; known: " + DECODERS.keySet());
        }
        short version = Short.parseShort(args[i + 1]);
        ByteBuffer wire = ByteBuffer.wrap(Files.readAllBytes(Path.of(args[i + 2])));
        cases.add(new Case(args[i], version, decoder, wire));
      }
    } catch (IllegalArgumentException | IOException e) {
      System.err.println("KafkaCodecBench: " + e);
      System.exit(2);
    }

    boolean allIdentical = true;
    for (Case c : cases) {
      if (!roundTrip(c)) {
        allIdentical = false;
      } else if (!checkOnly) {
        Message decoded = decode(c);
        c.encodeOps = opsPerSecond(() -> consume(encode(decoded, c.version)), budget);
        c.decodeOps = opsPerSecond(() -> consume(decode(c)), budget);
      }
    }
    System.out.println(json(cases, budget, checkOnly));
    System.exit(allIdentical ? 0 : 1);
  }

  private static Message decode(Case c) {
    return c.decoder.decode(new ByteBufferAccessor(c.wire.duplicate()), c.version);
  }

  /** The generated write path: sizes (caching UTF-8 strings), allocates, writes. */
  private static ByteBuffer encode(Message message, short version) {
    ObjectSerializationCache cache = new ObjectSerializationCache();
    ByteBufferAccessor out =
        new ByteBufferAccessor(ByteBuffer.allocate(message.size(cache, version)));
    message.write(out, cache, version);
    out.flip();
    return out.buffer();
  }

  private static boolean roundTrip(Case c) {
    ByteBuffer again;
    try {
      again = encode(decode(c), c.version);
    } catch (RuntimeException e) {
      // the generated classes throw unchecked exceptions on malformed bodies
      c.error = e.toString();
      c.firstDifference = 0;
      return false;
    }
    c.reencodedBytes = again.remaining();
    ByteBuffer want = c.wire.duplicate();
    int n = Math.min(want.remaining(), again.remaining());
    for (int k = 0; k < n; k++) {
      if (want.get(k) != again.get(k)) {
        c.firstDifference = k;
        return false;
      }
    }
    if (want.remaining() != again.remaining()) {
      c.firstDifference = n;
      return false;
    }
    return true;
  }

  private static long loopNanos(Runnable op, long number) {
    long start = cpuNanos();
    for (long k = 0; k < number; k++) {
      op.run();
    }
    return cpuNanos() - start;
  }

  /** Best-of-loops ops/s after a warm-up of half the budget (the JIT compiles the codec first). */
  private static double opsPerSecond(Runnable op, double budget) {
    long budgetNanos = (long) (budget * 1e9);
    long warmEnd = cpuNanos() + budgetNanos / 2;
    while (cpuNanos() < warmEnd) {
      loopNanos(op, 1000);
    }
    long number = 1;
    while (loopNanos(op, number) < budgetNanos / 20) {
      number *= 2;
    }
    double best = Double.POSITIVE_INFINITY;
    long deadline = cpuNanos() + budgetNanos;
    while (cpuNanos() < deadline) {
      best = Math.min(best, (double) loopNanos(op, number) / number);
    }
    return 1e9 / best;
  }

  private static String json(List<Case> cases, double budget, boolean checkOnly) {
    StringBuilder s = new StringBuilder();
    String jar = MessageUtil.class.getProtectionDomain().getCodeSource().getLocation().getPath();
    s.append("{\"java\": \"").append(System.getProperty("java.version"))
        .append("\", \"codec_jar\": \"").append(Path.of(jar).getFileName())
        .append("\", \"budget\": ").append(budget)
        .append(", \"timed\": ").append(!checkOnly)
        .append(", \"cases\": [");
    for (int k = 0; k < cases.size(); k++) {
      Case c = cases.get(k);
      s.append(k == 0 ? "" : ", ")
          .append("{\"message\": \"").append(c.message)
          .append("\", \"version\": ").append(c.version)
          .append(", \"bytes\": ").append(c.wire.remaining())
          .append(", \"reencoded_bytes\": ").append(c.reencodedBytes)
          .append(", \"identical\": ").append(c.firstDifference < 0)
          .append(", \"first_difference\": ")
          .append(c.firstDifference < 0 ? "null" : String.valueOf(c.firstDifference))
          .append(", \"error\": ").append(c.error == null ? "null" : quoted(c.error))
          .append(", \"encode_ops\": ").append(number(c.encodeOps))
          .append(", \"decode_ops\": ").append(number(c.decodeOps))
          .append('}');
    }
    return s.append("]}").toString();
  }

  private static String quoted(String text) {
    StringBuilder s = new StringBuilder("\"");
    for (char ch : text.toCharArray()) {
      if (ch == '"' || ch == '\\') {
        s.append('\\').append(ch);
      } else if (ch < 0x20) {
        s.append(String.format("\\u%04x", (int) ch));
      } else {
        s.append(ch);
      }
    }
    return s.append('"').toString();
  }

  private static String number(double x) {
    return Double.isNaN(x) ? "null" : String.format(java.util.Locale.ROOT, "%.1f", x);
  }
}
