import java.io.DataInputStream;
import java.io.EOFException;
import java.io.FileInputStream;
import java.io.IOException;
import java.lang.reflect.Constructor;
import java.nio.ByteBuffer;
import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.protocol.Readable;

/**
 * kafka-clients' generated codec (its {@code *Data} classes) as the judge of bodies kipwire wrote.
 *
 * <p>{@code list}: one line per API the jar knows: key, name, oldest and newest version (unstable
 * included). {@code check FILE}: FILE holds bodies, each a Java modified-UTF message name (without
 * {@code Data}), a short version, an int length and the bytes; one line per body: {@code ok}, or
 * {@code differs OFFSET}, or {@code error TEXT}, after the name and version. Run with the
 * single-file source launcher ({@code java -cp JARS KafkaDataCheck.java ...}).
 */
public final class KafkaDataCheck {

  private KafkaDataCheck() {}

  public static void main(String[] args) throws IOException {
    if (args.length == 1 && args[0].equals("list")) {
      for (ApiMessageType t : ApiMessageType.values()) {
        if (t.requestSchemas().length == 0) {
          continue; // an API the jar keeps the name of, with no version left
        }
        System.out.println(t.apiKey() + " " + t.name + " " + t.lowestSupportedVersion() + " "
            + t.highestSupportedVersion(true));
      }
      return;
    }
    if (args.length != 2 || !args[0].equals("check")) {
      System.err.println("usage: KafkaDataCheck list | check FILE");
      System.exit(2);
    }
    try (DataInputStream in = new DataInputStream(new FileInputStream(args[1]))) {
      while (true) {
        String name;
        try {
          name = in.readUTF();
        } catch (EOFException e) {
          break;
        }
        short version = in.readShort();
        byte[] wire = new byte[in.readInt()];
        in.readFully(wire);
        System.out.println(name + " " + version + " " + check(name, version, wire));
      }
    }
  }

  private static String check(String name, short version, byte[] wire) {
    try {
      Class<?> cls = Class.forName("org.apache.kafka.common.message." + name + "Data");
      Constructor<?> reader = cls.getConstructor(Readable.class, short.class);
      ByteBuffer in = ByteBuffer.wrap(wire);
      Message message = (Message) reader.newInstance(new ByteBufferAccessor(in), version);
      if (in.hasRemaining()) {
        return "error " + in.remaining() + " bytes left after the body";
      }
      ObjectSerializationCache cache = new ObjectSerializationCache();
      ByteBuffer out = ByteBuffer.allocate(message.size(cache, version));
      message.write(new ByteBufferAccessor(out), cache, version);
      byte[] again = out.array();
      int n = Math.min(again.length, wire.length);
      for (int i = 0; i < n; i++) {
        if (again[i] != wire[i]) {
          return "differs " + i;
        }
      }
      return again.length == wire.length ? "ok" : "differs " + n;
    } catch (ReflectiveOperationException | RuntimeException e) {
      Throwable cause = e.getCause() != null ? e.getCause() : e;
      return ("error " + cause).replace('\n', ' ');
    }
  }
}
