// The Java side of benchmarks/bench_vs_kafka.py: Kafka's own code on the snapshot file
// kraftsim reads. Compiled at benchmark time against a fetched Kafka release's jars.
//
// Usage: KafkaSnapshotPeer <__cluster_metadata-0 dir> <end offset> <epoch> <repeats>
// Times, each the best of <repeats> runs in this JVM (the first ones warm the JIT):
//   decode: RecordsSnapshotReader over the file (CRC checked), every record deserialized;
//   load:   the same, each record replayed into a MetadataDelta on the empty image, then
//           finishSnapshot() and apply(provenance): what Kafka's loader does on a snapshot.
// Prints one JSON object: wall and process-CPU milliseconds (all the JVM's threads: JIT and
// GC included, as kraftsim's process CPU includes its collector), records and partitions.
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.nio.file.Paths;

import org.apache.kafka.common.utils.BufferSupplier;
import org.apache.kafka.common.utils.LogContext;
import org.apache.kafka.image.MetadataDelta;
import org.apache.kafka.image.MetadataImage;
import org.apache.kafka.image.MetadataProvenance;
import org.apache.kafka.metadata.MetadataRecordSerde;
import org.apache.kafka.raft.Batch;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.OffsetAndEpoch;
import org.apache.kafka.snapshot.FileRawSnapshotReader;
import org.apache.kafka.snapshot.RecordsSnapshotReader;

public final class KafkaSnapshotPeer {
    static final int MAX_BATCH_SIZE = 8 * 1024 * 1024;
    static final com.sun.management.OperatingSystemMXBean OS =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        OffsetAndEpoch id = new OffsetAndEpoch(Long.parseLong(args[1]), Integer.parseInt(args[2]));
        int repeats = Integer.parseInt(args[3]);
        long[] decode = {Long.MAX_VALUE, Long.MAX_VALUE}, load = {Long.MAX_VALUE, Long.MAX_VALUE};
        long records = 0, partitions = 0;
        for (int i = 0; i < repeats; i++) {
            System.gc();
            long w = System.nanoTime(), c = OS.getProcessCpuTime();
            records = run(dir, id, null);
            keepBest(decode, System.nanoTime() - w, OS.getProcessCpuTime() - c);
        }
        for (int i = 0; i < repeats; i++) {
            System.gc();
            long w = System.nanoTime(), c = OS.getProcessCpuTime();
            MetadataDelta delta = new MetadataDelta.Builder().setImage(MetadataImage.EMPTY).build();
            run(dir, id, delta);
            delta.finishSnapshot();
            MetadataImage image = delta.apply(new MetadataProvenance(id.offset() - 1, id.epoch(), 0L, true));
            keepBest(load, System.nanoTime() - w, OS.getProcessCpuTime() - c);
            partitions = image.topics().topicsById().values().stream().mapToLong(t -> t.partitions().size()).sum();
        }
        System.out.printf("{\"decode_wall_ms\": %.1f, \"decode_cpu_ms\": %.1f, \"load_wall_ms\": %.1f, "
                + "\"load_cpu_ms\": %.1f, \"records\": %d, \"partitions\": %d, \"repeats\": %d}%n",
                decode[0] / 1e6, decode[1] / 1e6, load[0] / 1e6, load[1] / 1e6, records, partitions, repeats);
    }

    static void keepBest(long[] best, long wall, long cpu) {
        if (wall < best[0]) { best[0] = wall; best[1] = cpu; }
    }

    static long run(Path dir, OffsetAndEpoch id, MetadataDelta delta) throws Exception {
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
}
