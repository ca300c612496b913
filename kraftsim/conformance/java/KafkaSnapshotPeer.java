// Kafka's own snapshot code on a snapshot file, timed: the Java side of `kraftsim snapshot-cost
// --with-kafka` and benchmarks/bench_vs_kafka.py. Compiled at run time against a fetched
// release's jars (kraftsim.conformance.snapshot_peer).
//
// Usage: KafkaSnapshotPeer <__cluster_metadata-0 dir> <end offset> <epoch> <time ms> <runs> <ops>
//                          [<topic id> <partition>]
// <ops> is a comma-separated list of:
//   decode  RecordsSnapshotReader over the file (CRC checked), every record deserialized;
//   load    the same, each record replayed into a MetadataDelta on the empty image, then
//           finishSnapshot() and apply(provenance): what MetadataLoader does on a snapshot;
//   write   the loaded image written as a snapshot the way SnapshotEmitter does (RaftSnapshotWriter
//           of 1024-record appends over RecordsSnapshotWriter, 8 MiB batches, the batches' clock at
//           <time ms>) into a temporary directory, frozen, then deleted;
//   delta   one PartitionChangeRecord (the partition's ISR shrunk to its first replica) replayed on
//           the loaded image and applied (the median of 50 per run).
// Each op runs <runs> times in this JVM, in the order given; the times of every run are printed
// (the caller picks the cold first run or the warm best of the last ones). CPU is the process's
// (every JVM thread: JIT and GC included). Prints one JSON object on its last line.
// -Dkafka.snapshot.peer.keep=FILE keeps a copy of the first snapshot written (to compare bytes).
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.function.Supplier;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.metadata.PartitionChangeRecord;
import org.apache.kafka.common.utils.BufferSupplier;
import org.apache.kafka.common.utils.LogContext;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.image.MetadataDelta;
import org.apache.kafka.image.MetadataImage;
import org.apache.kafka.image.MetadataProvenance;
import org.apache.kafka.image.writer.ImageWriterOptions;
import org.apache.kafka.image.writer.RaftSnapshotWriter;
import org.apache.kafka.metadata.MetadataRecordSerde;
import org.apache.kafka.metadata.PartitionRegistration;
import org.apache.kafka.raft.Batch;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.KRaftVersion;
import org.apache.kafka.server.common.OffsetAndEpoch;
import org.apache.kafka.snapshot.FileRawSnapshotReader;
import org.apache.kafka.snapshot.FileRawSnapshotWriter;
import org.apache.kafka.snapshot.RecordsSnapshotReader;
import org.apache.kafka.snapshot.RecordsSnapshotWriter;
import org.apache.kafka.snapshot.SnapshotWriter;

public final class KafkaSnapshotPeer {
    static final int MAX_BATCH_SIZE = 8 * 1024 * 1024;
    static final int APPEND_RECORDS = 1024;
    static final int DELTA_REPEATS = 50;
    static final com.sun.management.OperatingSystemMXBean OS =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    /** A clock stopped at the snapshot's time, so the written batches are reproducible. */
    static final class FixedTime implements Time {
        final long ms;
        FixedTime(long ms) { this.ms = ms; }
        public long milliseconds() { return ms; }
        public long nanoseconds() { return System.nanoTime(); }
        public void sleep(long ms) { }
        public void waitObject(Object o, Supplier<Boolean> done, long deadline) { }
    }

    static Path dir;
    static OffsetAndEpoch id;
    static long timeMs;
    static long records, partitions;
    static MetadataImage image;

    public static void main(String[] args) throws Exception {
        long startedMs = ManagementFactory.getRuntimeMXBean().getUptime();
        dir = Paths.get(args[0]);
        id = new OffsetAndEpoch(Long.parseLong(args[1]), Integer.parseInt(args[2]));
        timeMs = Long.parseLong(args[3]);
        int runs = Integer.parseInt(args[4]);
        String[] ops = args[5].split(",");
        Uuid topic = args.length > 6 ? Uuid.fromString(args[6]) : null;
        int partition = args.length > 7 ? Integer.parseInt(args[7]) : 0;
        StringBuilder out = new StringBuilder("{\"jvm_uptime_at_main_ms\": " + startedMs);
        String writeSha = null;
        long writeBytes = -1;
        for (String op : ops) {
            List<String> wall = new ArrayList<>(), cpu = new ArrayList<>();
            for (int i = 0; i < runs; i++) {
                if (op.equals("load")) image = null;  // (the last run's image goes before the clock and the GC, as in kraftsim's child)
                if (i > 0) System.gc();
                if (!op.equals("load") && !op.equals("decode") && image == null) image = load();
                long w = System.nanoTime(), c = OS.getProcessCpuTime();
                switch (op) {
                    case "decode": records = read(null); break;
                    case "load": image = load(); break;
                    case "write": {
                        Path tmp = Files.createTempDirectory("kafka-snapshot-peer-");
                        try {
                            Path file = write(tmp);
                            if (writeSha == null) {
                                writeBytes = Files.size(file);
                                writeSha = sha256(file);
                                String keep = System.getProperty("kafka.snapshot.peer.keep");
                                if (keep != null) Files.copy(file, Paths.get(keep));
                            }
                        } finally {
                            try (var walk = Files.walk(tmp)) {
                                walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
                            }
                        }
                        break;
                    }
                    case "delta": {
                        long[] each = new long[DELTA_REPEATS];
                        for (int k = 0; k < DELTA_REPEATS; k++) {
                            long t = System.nanoTime();
                            oneRecordDelta(topic, partition);
                            each[k] = System.nanoTime() - t;
                        }
                        Arrays.sort(each);
                        wall.add(String.format("%.4f", each[DELTA_REPEATS / 2] / 1e6));
                        cpu.add("null");
                        continue;
                    }
                    default: throw new IllegalArgumentException("unknown op " + op);
                }
                wall.add(String.format("%.1f", (System.nanoTime() - w) / 1e6));
                cpu.add(String.format("%.1f", (OS.getProcessCpuTime() - c) / 1e6));
            }
            out.append(", \"").append(op).append("_wall_ms\": [").append(String.join(", ", wall)).append("]");
            out.append(", \"").append(op).append("_cpu_ms\": [").append(String.join(", ", cpu)).append("]");
        }
        if (image != null)
            partitions = image.topics().topicsById().values().stream().mapToLong(t -> t.partitions().size()).sum();
        out.append(", \"records\": ").append(records).append(", \"partitions\": ").append(partitions);
        if (writeSha != null)
            out.append(", \"write_bytes\": ").append(writeBytes).append(", \"write_sha256\": \"").append(writeSha).append('"');
        out.append(", \"runs\": ").append(runs).append('}');
        System.out.println(out);
    }

    static MetadataImage load() throws Exception {
        MetadataDelta delta = new MetadataDelta.Builder().setImage(MetadataImage.EMPTY).build();
        records = read(delta);
        delta.finishSnapshot();
        return delta.apply(new MetadataProvenance(id.offset() - 1, id.epoch(), timeMs, true));
    }

    static long read(MetadataDelta delta) throws Exception {
        long n = 0;
        try (FileRawSnapshotReader raw = FileRawSnapshotReader.open(dir, id);
             RecordsSnapshotReader<ApiMessageAndVersion> reader = RecordsSnapshotReader.of(
                     raw, MetadataRecordSerde.INSTANCE, BufferSupplier.create(), MAX_BATCH_SIZE, true, new LogContext())) {
            while (reader.hasNext()) {
                Batch<ApiMessageAndVersion> batch = reader.next();
                for (ApiMessageAndVersion record : batch.records()) {
                    if (delta != null) delta.replay(record.message());
                    n++;
                }
            }
        }
        return n;
    }

    static Path write(Path into) throws Exception {
        FileRawSnapshotWriter raw = FileRawSnapshotWriter.create(into, id);
        SnapshotWriter<ApiMessageAndVersion> writer = new RecordsSnapshotWriter.Builder()
                .setLastContainedLogTimestamp(timeMs)
                .setTime(new FixedTime(timeMs))
                .setMaxBatchSizeBytes(MAX_BATCH_SIZE)
                .setRawSnapshotWriter(raw)
                .setKraftVersion(KRaftVersion.KRAFT_VERSION_0)
                .build(MetadataRecordSerde.INSTANCE);
        RaftSnapshotWriter images = new RaftSnapshotWriter(writer, APPEND_RECORDS);
        image.write(images, new ImageWriterOptions.Builder(image).build());
        images.close(true);
        try (var files = Files.list(into)) {
            return files.filter(p -> p.toString().endsWith(".checkpoint")).findFirst().orElseThrow();
        }
    }

    static void oneRecordDelta(Uuid topic, int partition) {
        PartitionRegistration p = image.topics().getPartition(topic, partition);
        MetadataDelta delta = new MetadataDelta.Builder().setImage(image).build();
        delta.replay(new PartitionChangeRecord().setTopicId(topic).setPartitionId(partition)
                .setIsr(Collections.singletonList(p.isr[0])));
        delta.apply(new MetadataProvenance(id.offset(), id.epoch(), timeMs, true));
    }

    static String sha256(Path file) throws Exception {
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        try (InputStream in = Files.newInputStream(file)) {
            byte[] buf = new byte[1 << 20];
            for (int n; (n = in.read(buf)) > 0; ) md.update(buf, 0, n);
        }
        StringBuilder s = new StringBuilder();
        for (byte b : md.digest()) s.append(String.format("%02x", b));
        return s.toString();
    }
}
