// A real Kafka cluster of separate controllers and brokers in ONE JVM: Kafka's own in-process
// test cluster (KafkaClusterTestKit), the Java side of kraftsim.conformance.testkit_cluster and
// benchmarks/bench_serve.py --kafka-cluster. Compiled at run time against a fetched release's
// jars plus its test-kit jars.
//
// Usage: KafkaTestKitCluster <controllers> <brokers> <base dir> <broker port>...
// Every listener binds 127.0.0.1 (4.x: through LoopbackSockets, since the 4.x kit would bind
// its pre-opened sockets on the wildcard address). Lines ending "since 4.0", and the block so
// marked, are left out for 3.x, whose kit (package kafka.testkit) picks its own base directory,
// calls the broker listener EXTERNAL itself and binds listeners where their configuration says.
// Broker i listens on 127.0.0.1:<broker port i> (fixed, so the caller can poll it from the
// moment it spawned this JVM); the controllers on ports the kit picks. Each node is configured
// as the kit configures it, except that unstable API and feature versions are off and the
// bootstrap metadata.version is the release's latest production one, as a node formatted by
// kafka-storage without --release-version. The cluster is formatted and started in this JVM.
// Prints, as milliseconds since the JVM started (RuntimeMXBean start time):
//   formatted <ms> / started <ms> (startup() returned) / ready <ms> (every broker registered
//   and unfenced, each broker's metadata cache holding all brokers; 4.x only: the 3.x kit's
//   wait needs JUnit, which its test jar does not bring)
// then serves until its standard input closes (or the process is killed), and shuts down.
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.reflect.Field;
import java.net.InetSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.Map;

import org.apache.kafka.common.network.ListenerName;
import org.apache.kafka.server.common.MetadataVersion;

import org.apache.kafka.common.test.KafkaClusterTestKit;
import org.apache.kafka.common.test.PreboundSocketFactoryManager; // since 4.0
import org.apache.kafka.server.ServerSocketFactory; // since 4.0
import org.apache.kafka.common.test.TestKitNodes;

public class KafkaTestKitCluster {
    private static final String BROKER_LISTENER = "EXTERNAL";

    private static long sinceStart() {
        return System.currentTimeMillis() - ManagementFactory.getRuntimeMXBean().getStartTime();
    }

    private static void mark(String what) {
        System.out.println(what + " " + sinceStart());
        System.out.flush();
    }

    // since 4.0 {
    /** The 4.x kit binds every listener in advance on the wildcard address (port 0). This one binds
     *  them on 127.0.0.1 instead, the brokers' on the ports asked for; the servers then use these
     *  sockets as they would the kit's. Nothing else about the nodes changes. */
    static final class LoopbackSockets extends PreboundSocketFactoryManager {
        private final Map<Integer, Integer> brokerPorts;
        private final Map<String, ServerSocketChannel> bound = new HashMap<>();

        LoopbackSockets(Map<Integer, Integer> brokerPorts) {
            this.brokerPorts = brokerPorts;
        }

        @Override
        public synchronized int getOrCreatePortForListener(int node, String listener) throws IOException {
            ServerSocketChannel channel = bound.get(node + "/" + listener);
            if (channel == null) {
                int port = listener.equals(BROKER_LISTENER) ? brokerPorts.getOrDefault(node, 0) : 0;
                // as the kit opens them (Kafka's own factory, default backlog and buffer), on loopback
                channel = ServerSocketFactory.INSTANCE.openServerSocket(listener,
                    new InetSocketAddress("127.0.0.1", port), -1, -1);
                bound.put(node + "/" + listener, channel);
            }
            return channel.socket().getLocalPort();
        }

        @Override
        public synchronized ServerSocketChannel getSocketForListenerAndMarkAsUsed(int node, String listener) {
            return bound.remove(node + "/" + listener);
        }

        @Override
        public synchronized void close() throws Exception {
            for (ServerSocketChannel channel : bound.values()) {
                channel.close();
            }
            bound.clear();
            super.close();
        }
    }

    private static void bindOnLoopback(KafkaClusterTestKit.Builder builder, Map<Integer, Integer> brokerPorts)
            throws ReflectiveOperationException {
        Field field = KafkaClusterTestKit.Builder.class.getDeclaredField("socketFactoryManager");
        field.setAccessible(true);
        field.set(builder, new LoopbackSockets(brokerPorts));
    }
    // } since 4.0

    private static TestKitNodes.Builder shape(int controllers, int brokers, String baseDirectory) {
        return new TestKitNodes.Builder()
            .setCombined(false)
            .setNumControllerNodes(controllers)
            .setNumBrokerNodes(brokers)
            .setBaseDirectory(Paths.get(baseDirectory)) // since 4.0
            .setBrokerListenerName(ListenerName.normalised(BROKER_LISTENER)) // since 4.0
            .setBootstrapMetadataVersion(MetadataVersion.LATEST_PRODUCTION);
    }

    public static void main(String[] args) throws Exception {
        int controllers = Integer.parseInt(args[0]);
        int brokers = Integer.parseInt(args[1]);
        if (args.length != 3 + brokers) {
            throw new IllegalArgumentException("expected " + brokers + " broker ports, got " + (args.length - 3));
        }
        // The kit numbers the nodes itself: its brokers' ids, from a first (side-effect free) build.
        Integer[] brokerIds = shape(controllers, brokers, args[2]).build().brokerNodes().keySet().toArray(new Integer[0]);
        Map<Integer, Map<String, String>> perServer = new HashMap<>();
        Map<Integer, Integer> brokerPorts = new HashMap<>();
        for (int i = 0; i < brokers; i++) {
            Map<String, String> props = new HashMap<>();
            props.put("listeners", BROKER_LISTENER + "://127.0.0.1:" + args[3 + i]);
            perServer.put(brokerIds[i], props);
            brokerPorts.put(brokerIds[i], Integer.parseInt(args[3 + i]));
        }
        TestKitNodes nodes = shape(controllers, brokers, args[2]).setPerServerProperties(perServer).build();
        KafkaClusterTestKit.Builder builder = new KafkaClusterTestKit.Builder(nodes)
            .setConfigProp("unstable.api.versions.enable", "false")
            .setConfigProp("unstable.feature.versions.enable", "false");
        bindOnLoopback(builder, brokerPorts); // since 4.0
        KafkaClusterTestKit cluster = builder.build();
        try {
            cluster.format();
            mark("formatted");
            cluster.startup();
            mark("started");
            cluster.waitForReadyBrokers(); // since 4.0
            mark("ready"); // since 4.0
            while (System.in.read() != -1) {
                // serve until the caller closes our standard input
            }
        } finally {
            cluster.close();
        }
    }
}
