import java.util.*;
/** Prints what a Kafka release's jars say about the facts kraftsim's catalog records for it:
 * LATEST_PRODUCTION, latestTesting, each feature's production and testing levels, and the
 * config names its replay keeps per resource type (DefaultSupportedConfigChecker, when present).
 * Run as a single-file source program on the release's classpath (tests/conformance/test_catalog_vs_jars.py). */
public class ReleaseFacts {
    static void names(String label, String cls, String how) {
        try {
            Class<?> c = Class.forName(cls);
            Object names;
            if (how.equals("configNames")) names = c.getMethod("configNames").invoke(null);
            else if (how.equals("configDef")) names = ((org.apache.kafka.common.config.ConfigDef) c.getMethod("configDef").invoke(null)).names();
            else {
                Object def;
                try { def = c.getField("CONFIG_DEF").get(null); } catch (NoSuchFieldException e) { def = c.getMethod("configDef").invoke(null); }
                names = ((org.apache.kafka.common.config.ConfigDef) def).names();
            }
            System.out.println(label + " " + new TreeSet<Object>((Collection<?>) names));
        } catch (Throwable t) { System.out.println(label + " ERR " + t); }
    }
    public static void main(String[] a) throws Exception {
        Class<?> mv = Class.forName("org.apache.kafka.server.common.MetadataVersion");
        System.out.println("LATEST_PRODUCTION " + mv.getField("LATEST_PRODUCTION").get(null));
        System.out.println("latestTesting " + mv.getMethod("latestTesting").invoke(null));
                try {
            Class<?> f; try { f = Class.forName("org.apache.kafka.server.common.Feature"); } catch (ClassNotFoundException e) { f = Class.forName("org.apache.kafka.server.common.Features"); }
            for (Object x : (Object[]) f.getMethod("values").invoke(null)) {
                System.out.println("feature " + f.getMethod("featureName").invoke(x) + " prod=" + f.getMethod("latestProduction").invoke(x) + " test=" + f.getMethod("latestTesting").invoke(x) + " min=" + f.getMethod("minimumProduction").invoke(x));
            }
        } catch (Throwable t) { System.out.println("features ERR " + t); }
        try { Class.forName("org.apache.kafka.server.config.DefaultSupportedConfigChecker"); System.out.println("checker yes"); } catch (Throwable t) { System.out.println("checker no"); }
        names("TOPIC", "org.apache.kafka.storage.internals.log.LogConfig", "configNames");
        names("CLIENT_METRICS", "org.apache.kafka.server.metrics.ClientMetricsConfigs", "configDef");
        names("GROUP", "org.apache.kafka.coordinator.group.GroupConfig", "CONFIG_DEF");
    }
}
