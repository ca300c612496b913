import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Constructor;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.timeline.SnapshotRegistry;
import org.apache.kafka.timeline.TimelineHashMap;

/** Each stdin line holds keys separated by tabs: prints them in the order a TimelineHashMap,
 *  created for 0 expected entries as each resource's configs on the controller, iterates them
 *  once they were put in that order. */
public class TimelineOrderFacts {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        SnapshotRegistry registry = registry();
        String line;
        while ((line = in.readLine()) != null) {
            TimelineHashMap<String, String> map = new TimelineHashMap<>(registry, 0);
            for (String key : line.split("\t", -1)) {
                map.put(key, "v");
            }
            System.out.println(String.join("\t", map.keySet()));
        }
    }

    /** A registry built with the release's LogContext (it moved to an internals package in 4.4). */
    private static SnapshotRegistry registry() throws Exception {
        Class<?> logContext;
        try {
            logContext = Class.forName("org.apache.kafka.common.utils.LogContext");
        } catch (ClassNotFoundException e) {
            logContext = Class.forName("org.apache.kafka.common.utils.internals.LogContext");
        }
        Constructor<SnapshotRegistry> made = SnapshotRegistry.class.getConstructor(logContext);
        return made.newInstance(logContext.getConstructor().newInstance());
    }
}
