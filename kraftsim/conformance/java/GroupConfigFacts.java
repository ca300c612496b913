import java.lang.reflect.*;
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;
import org.apache.kafka.common.config.ConfigDef;
/** Prints a release's group config definitions (GroupConfig, KIP-848) with the node configs a
 * broker takes their defaults and bounds from, and runs the check its controller makes of a
 * group's resulting configs (GroupConfig.validate, through ControllerConfigurationValidator) on
 * probes, against a node started with the release's defaults. Output lines, tab separated:
 *   def NAME TYPE DEFAULT VALIDATOR DOC   every definition, in definition order (DEFAULT as
 *                                         ConfigDef.convertToString writes it; escapes: \t \n \\)
 *   synonyms own|broker                   whether a broker describes a group config with its own
 *                                         synonym only, or with broker synonyms too (4.4's
 *                                         GroupConfig.brokerSynonym)
 *   node NAME VALUE                       every server config named group.* or share.*, as a
 *                                         node with the release's defaults holds it
 *   probe N OK | probe N Class message    for stdin line N: name=value pairs separated by U+0001
 * Prints "absent" alone when the release has no GroupConfig. Run as a single-file source program
 * on the release's classpath (kraftsim.conformance.group_config_facts, which writes
 * kraftsim/controller/data/group_configs.toml; tests/conformance/test_group_configs_vs_jars.py). */
public class GroupConfigFacts {
    static String esc(Object o) {
        return o == null ? "null" : o.toString().replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n");
    }
    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        Class<?> cls;
        try { cls = Class.forName("org.apache.kafka.coordinator.group.GroupConfig"); }
        catch (ClassNotFoundException e) { out.println("absent"); return; }
        ConfigDef def;
        try { def = (ConfigDef) cls.getMethod("configDef").invoke(null); }
        catch (NoSuchMethodException e) { def = (ConfigDef) cls.getField("CONFIG_DEF").get(null); }
        for (ConfigDef.ConfigKey key : def.configKeys().values()) {
            String dflt = key.hasDefault() ? ConfigDef.convertToString(key.defaultValue, key.type) : "nodefault";
            out.println("def\t" + key.name + "\t" + key.type + "\t" + esc(dflt) + "\t" + esc(key.validator)
                        + "\t" + esc(key.documentation));
        }
        boolean broker = false;
        for (Method m : cls.getMethods()) broker |= m.getName().equals("brokerSynonym");
        out.println("synonyms\t" + (broker ? "broker" : "own"));
        Map<String, Object> props = new HashMap<>();
        props.put("process.roles", "broker"); props.put("node.id", "2");
        props.put("controller.quorum.voters", "1@127.0.0.1:9093"); props.put("controller.listener.names", "CONTROLLER");
        props.put("listeners", "PLAINTEXT://127.0.0.1:9092");
        props.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
        props.put("log.dirs", "/tmp/kraftsim-group-config-facts");
        Class<?> kc = Class.forName("kafka.server.KafkaConfig");
        Object config = kc.getConstructor(Map.class).newInstance(props);
        Map<?, ?> values = (Map<?, ?>) kc.getMethod("values").invoke(config);
        for (Object name : new TreeSet<Object>(values.keySet())) {
            String n = name.toString();
            if (n.startsWith("group.") || n.startsWith("share.")) out.println("node\t" + n + "\t" + esc(values.get(name)));
        }
        Method validate = null;
        for (Method m : cls.getMethods()) {
            if (m.getName().equals("validate") && m.getParameterCount() >= 1 && m.getParameterTypes()[0].isAssignableFrom(Properties.class)) validate = m;
        }
        Object[] rest = new Object[validate.getParameterCount()];
        for (int i = 1; i < rest.length; i++) {
            for (Method g : kc.getMethods()) {
                if (g.getParameterCount() == 0 && g.getReturnType() == validate.getParameterTypes()[i]) { rest[i] = g.invoke(config); break; }
            }
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        int n = 0;
        while ((line = in.readLine()) != null) {
            n++;
            Properties p = new Properties();
            for (String part : line.isEmpty() ? new String[0] : line.split("\u0001", -1)) {
                int eq = part.indexOf('=');
                p.setProperty(part.substring(0, eq), part.substring(eq + 1));
            }
            rest[0] = p;
            try {
                validate.invoke(null, rest);
                out.println("probe\t" + n + "\tOK");
            } catch (InvocationTargetException e) {
                Throwable t = e.getCause();
                out.println("probe\t" + n + "\t" + t.getClass().getSimpleName() + "\t" + esc(t.getMessage()));
            }
        }
    }
}
