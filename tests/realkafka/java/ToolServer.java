import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.common.utils.internals.Exit;

/**
 * Kafka's command-line tools, run one after another in this one JVM: a JVM start costs seconds
 * on a loaded machine, and the tool matrix runs some sixty tools per cluster.
 *
 * <p>Reads one JSON request a line from stdin, {@code {"main": CLASS, "args": [...], "stdin":
 * TEXT, "timeout_s": N}}, runs {@code CLASS.main(args)} with System.in, System.out and
 * System.err swapped for the request's, and answers one JSON line on the real stdout: {@code
 * {"stdout": ..., "stderr": ..., "rc": N}}. Kafka's tools end through {@code Exit.exit}, which
 * here throws instead of ending the JVM: the first call's code is the exit code, and what the
 * tool prints after it (a JVM would have ended there; a tool that catches the throw prints it)
 * is cut; the shutdown hooks it added through {@code Exit.addShutdownHook} run then, and what
 * they print follows. A tool still running after its timeout answers rc -1 and is left behind.
 * The JVM ends when stdin closes. Usage:
 * {@code java -cp KAFKA_JARS ToolServer.java}.
 */
public final class ToolServer {

  /** A tool's Exit.exit or Exit.halt, carried back to the request instead of ending the JVM. */
  static final class ToolExit extends RuntimeException {
    final int code;

    ToolExit(int code) {
      super("exit " + code, null, false, false);
      this.code = code;
    }
  }

  /** The first Exit.exit of the running tool, and how much it had printed by then. */
  private static volatile Integer firstExit;

  private static volatile int outAtExit;
  private static volatile int errAtExit;
  private static ByteArrayOutputStream out;
  private static ByteArrayOutputStream err;

  /** The shutdown hooks the running tool added: run when it ends, as a JVM runs them. */
  private static final List<Runnable> HOOKS = new ArrayList<>();

  private ToolServer() {}

  private static void exit(int code) {
    if (firstExit == null) {
      System.out.flush();
      System.err.flush();
      outAtExit = out.size();
      errAtExit = err.size();
      firstExit = code;
    }
    throw new ToolExit(code);
  }

  public static void main(String[] args) throws Exception {
    PrintStream answers = System.out;
    InputStream requests = System.in;
    Exit.setExitProcedure((code, message) -> exit(code));
    Exit.setHaltProcedure((code, message) -> exit(code));
    Exit.setShutdownHookAdder((name, hook) -> HOOKS.add(hook));
    ObjectMapper json = new ObjectMapper();
    ExecutorService pool = Executors.newCachedThreadPool(r -> {
      Thread t = new Thread(r, "tool");
      t.setDaemon(true);
      return t;
    });
    BufferedReader in = new BufferedReader(new InputStreamReader(requests, StandardCharsets.UTF_8));
    answers.println("{\"ready\": true}");
    answers.flush();
    for (String line = in.readLine(); line != null; line = in.readLine()) {
      JsonNode request = json.readTree(line);
      List<String> toolArgs = new ArrayList<>();
      request.get("args").forEach(a -> toolArgs.add(a.asText()));
      String stdin = request.has("stdin") && !request.get("stdin").isNull()
          ? request.get("stdin").asText() : "";
      out = new ByteArrayOutputStream();
      err = new ByteArrayOutputStream();
      firstExit = null;
      System.setIn(new ByteArrayInputStream(stdin.getBytes(StandardCharsets.UTF_8)));
      System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
      System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
      int rc;
      Future<Integer> run = pool.submit(() -> runTool(request.get("main").asText(), toolArgs));
      try {
        rc = run.get(request.get("timeout_s").asLong(), TimeUnit.SECONDS);
      } catch (TimeoutException e) {
        run.cancel(true);
        rc = -1;
      }
      System.out.flush();
      System.err.flush();
      byte[] printed = out.toByteArray();
      byte[] complained = err.toByteArray();
      int outLength = printed.length;
      int errLength = complained.length;
      if (firstExit != null && rc != -1) {
        rc = firstExit;
        outLength = outAtExit;
        errLength = errAtExit;
      }
      String stdout = new String(printed, 0, outLength, StandardCharsets.UTF_8);
      String stderr = new String(complained, 0, errLength, StandardCharsets.UTF_8);
      // the JVM would end here: its shutdown hooks run, and what they print follows
      out = new ByteArrayOutputStream();
      err = new ByteArrayOutputStream();
      System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
      System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
      // a tool past its timeout may still hold what its hooks wait for: they are dropped
      for (Runnable hook : rc == -1 ? List.<Runnable>of() : HOOKS) {
        try {
          hook.run();
        } catch (RuntimeException e) {
          e.printStackTrace();
        }
      }
      HOOKS.clear();
      System.out.flush();
      System.err.flush();
      stdout += out.toString(StandardCharsets.UTF_8);
      stderr += err.toString(StandardCharsets.UTF_8);
      ObjectNode answer = json.createObjectNode();
      answer.put("stdout", stdout);
      answer.put("stderr", stderr);
      answer.put("rc", rc);
      answers.println(json.writeValueAsString(answer));
      answers.flush();
    }
    // stdin closed: the test is done (or gone); tools may have left non-daemon threads behind
    Runtime.getRuntime().halt(0);
  }

  private static int runTool(String main, List<String> args) throws Exception {
    Method entry = Class.forName(main).getMethod("main", String[].class);
    try {
      entry.invoke(null, (Object) args.toArray(new String[0]));
    } catch (InvocationTargetException e) {
      Throwable cause = e.getCause();
      if (cause instanceof ToolExit exit) {
        return exit.code;
      }
      cause.printStackTrace();
      return 1;
    } catch (ToolExit exit) {
      return exit.code;
    }
    return 0;
  }
}
