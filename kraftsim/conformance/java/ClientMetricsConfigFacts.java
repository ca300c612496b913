import java.lang.reflect.*;
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;
import org.apache.kafka.common.config.ConfigDef;
/** Prints a release's client-metrics subscription definitions (ClientMetricsConfigs) and runs the
 * check its controller makes of a subscription's resulting configs (ClientMetricsConfigs.validate,
 * as ControllerConfigurationValidator calls it) on probes. Output lines, tab separated:
 *   def NAME TYPE DEFAULT VALIDATOR DOC   every definition, in definition order (DEFAULT as
 *                                         ConfigDef.convertToString writes it; escapes: \t \n \\)
 *   describes all|held                    whether the broker describes a subscription's every
 *                                         config (ConfigHelper.createClientMetricsConfigEntry,
 *                                         4.1 on) or only the ones it holds
 *   probe N OK | probe N Class message    for stdin line N: the subscription's name, then
 *                                         name=value pairs, separated by U+0001
 * Run as a single-file source program on the release's classpath
 * (kraftsim.conformance.client_metrics_config_facts, which writes
 * kraftsim/controller/data/client_metrics_configs.toml;
 * tests/conformance/test_client_metrics_configs_vs_jars.py). */
public class ClientMetricsConfigFacts {
    static String esc(Object o) {
        return o == null ? "null" : o.toString().replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n");
    }
    public static void main(String[] args) throws Exception {
        Class<?> cls = Class.forName("org.apache.kafka.server.metrics.ClientMetricsConfigs");
        ConfigDef def = (ConfigDef) cls.getMethod("configDef").invoke(null);
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        for (ConfigDef.ConfigKey key : def.configKeys().values()) {
            String dflt = key.hasDefault() ? ConfigDef.convertToString(key.defaultValue, key.type) : "nodefault";
            out.println("def\t" + key.name + "\t" + key.type + "\t" + esc(dflt) + "\t" + esc(key.validator)
                        + "\t" + esc(key.documentation));
        }
        boolean all = false;
        for (Method m : Class.forName("kafka.server.ConfigHelper").getDeclaredMethods()) {
            all |= m.getName().equals("createClientMetricsConfigEntry");
        }
        out.println("describes\t" + (all ? "all" : "held"));
        Method validate = null;
        for (Method m : cls.getMethods()) {
            if (m.getName().equals("validate") && m.getParameterCount() == 2) validate = m;
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        int n = 0;
        while ((line = in.readLine()) != null) {
            n++;
            String[] parts = line.split("\u0001", -1);
            Properties props = new Properties();
            for (int i = 1; i < parts.length; i++) {
                int eq = parts[i].indexOf('=');
                props.setProperty(parts[i].substring(0, eq), parts[i].substring(eq + 1));
            }
            try {
                validate.invoke(null, parts[0], props);
                out.println("probe\t" + n + "\tOK");
            } catch (InvocationTargetException e) {
                Throwable t = e.getCause();
                out.println("probe\t" + n + "\t" + t.getClass().getSimpleName() + "\t" + esc(t.getMessage()));
            }
        }
    }
}
