// Runs many invocations of Kafka's command-line tools in one JVM, so a conformance run
// pays the JVM's start once per batch instead of once per command.
//
// Input (stdin), one command per line: the main class, then its arguments, separated by
// tabs. Output (the real stdout), per command: a line "@@toolbatch <exit code> <stdout
// bytes> <stderr bytes>", then the command's stdout and stderr bytes. Kafka's tools leave
// through org.apache.kafka...Exit, whose procedure is replaced here by one that unwinds
// the command; argparse4j calls System.exit itself on a usage error, which a security
// manager turns into the same unwinding where the JVM still allows one (Java 17-23; on
// newer JVMs such a command ends the batch and the caller runs it again alone). An
// exception escaping main is printed as the JVM would print it, with exit code 1. Once a
// command asks to exit, whatever it prints afterwards is dropped and the status it asked
// for is its exit code, as in a JVM that really ended there (a tool's catch-all handler
// may otherwise catch the unwinding and print about it). System.out/err are replaced once, before any tool runs, by streams whose target
// changes per command (Scala's Console keeps the stream it first saw).
import java.io.*;
import java.lang.reflect.*;
import java.nio.charset.StandardCharsets;
import java.util.*;

public final class ToolBatch {
    static final class ExitCalled extends Error {
        final int code;
        ExitCalled(int code) { super(null, null, false, false); this.code = code; }
    }

    static final class Switch extends OutputStream {
        OutputStream target = OutputStream.nullOutputStream();
        @Override public void write(int b) throws IOException { target.write(b); }
        @Override public void write(byte[] b, int off, int len) throws IOException { target.write(b, off, len); }
    }

    public static void main(String[] argv) throws Exception {
        PrintStream real = new PrintStream(new FileOutputStream(FileDescriptor.out), false);
        installExit();
        trapSystemExit();
        Switch out = new Switch(), err = new Switch();
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null && !line.isEmpty()) {
            String[] parts = line.split("\t", -1);
            ByteArrayOutputStream o = new ByteArrayOutputStream(), e = new ByteArrayOutputStream();
            out.target = o; err.target = e;
            current = new Switch[] {out, err};
            exitStatus = null;
            int code = run(parts[0], Arrays.copyOfRange(parts, 1, parts.length));
            System.out.flush(); System.err.flush();
            if (exitStatus != null) code = exitStatus;
            out.target = OutputStream.nullOutputStream(); err.target = OutputStream.nullOutputStream();
            real.print("@@toolbatch " + code + " " + o.size() + " " + e.size() + "\n");
            real.write(o.toByteArray()); real.write(e.toByteArray());
            real.flush();
        }
        // Tools may leave non-daemon threads behind (the metadata shell's loader); they must
        // not keep the batch's JVM alive.
        System.exit(0);
    }

    static int run(String mainClass, String[] args) {
        running = true;
        try {
            Method m = Class.forName(mainClass).getMethod("main", String[].class);
            m.invoke(null, (Object) args);
            return 0;
        } catch (InvocationTargetException ite) {
            Throwable t = ite.getCause();
            if (t instanceof ExitCalled) return ((ExitCalled) t).code;
            System.err.print("Exception in thread \"main\" ");
            t.printStackTrace(System.err);
            return 1;
        } catch (ExitCalled x) {
            return x.code;
        } catch (ReflectiveOperationException x) {
            System.err.println("Error: Could not find or load main class " + mainClass);
            return 1;
        } finally {
            running = false;
        }
    }

    static volatile boolean running;
    static volatile Integer exitStatus;
    static Switch[] current = new Switch[0];

    /** The command asked the JVM to end with this status: keep it, and silence the command from here on. */
    static ExitCalled exitRequested(int status) {
        if (exitStatus == null) {
            System.out.flush(); System.err.flush();
            exitStatus = status;
            for (Switch s : current) s.target = OutputStream.nullOutputStream();
        }
        return new ExitCalled(status);
    }

    @SuppressWarnings("removal")
    static void trapSystemExit() {
        try {
            System.setSecurityManager(new SecurityManager() {
                @Override public void checkPermission(java.security.Permission perm) { }
                @Override public void checkPermission(java.security.Permission perm, Object context) { }
                @Override public void checkExit(int status) {
                    if (running) throw exitRequested(status);
                }
            });
        } catch (UnsupportedOperationException | SecurityException e) {
            // No security manager on this JVM: System.exit ends the batch (see above).
        }
    }

    static void installExit() throws Exception {
        for (String name : new String[] {"org.apache.kafka.common.utils.Exit", "org.apache.kafka.common.utils.internals.Exit"}) {
            Class<?> exit;
            try { exit = Class.forName(name); } catch (ClassNotFoundException e) { continue; }
            Class<?> proc = Class.forName(name + "$Procedure");
            Object p = Proxy.newProxyInstance(proc.getClassLoader(), new Class<?>[] {proc}, (self, method, a) -> {
                if (method.getDeclaringClass() == Object.class) return method.invoke(new Object(), a);
                throw exitRequested((Integer) a[0]);
            });
            exit.getMethod("setExitProcedure", proc).invoke(null, p);
            exit.getMethod("setHaltProcedure", proc).invoke(null, p);
            return;
        }
        throw new IllegalStateException("no org.apache.kafka Exit class on the classpath");
    }
}
