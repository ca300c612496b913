import java.lang.reflect.*;
import java.util.*;
import org.apache.kafka.common.config.ConfigDef;
/** Prints a release's broker config facts and runs its broker's own check of dynamic configs
 * (DynamicBrokerConfig.validateConfigs, as ConfigAdminManager calls it before forwarding a
 * change) on probes. Output lines, tab separated:
 *   kafka NAME TYPE default=V|nulldefault|nodefault internal=true|false
 *                                   every KafkaConfig config, in definition order, its default
 *                                   as the broker writes its static defaults (a password's own
 *                                   text, a list joined by commas, a class by its name)
 *   doc NAME TEXT                   its documentation (when it has one), with backslash, tab,
 *                                   newline, carriage return and non-ASCII characters written as
 *                                   \\ \t \n \r \\uXXXX
 *   dynamic NAME TYPE default=V|nulldefault|nodefault VALIDATOR-CLASS VALIDATOR [FLAG=V...]
 *                                   DynamicConfig.Broker's definitions, in definition order
 *   all NAME / perbroker NAME / nondynamic NAME / security NAME   the sets, sorted
 *   reconf SOURCE NAME              the configs each part of a broker that is reconfigured
 *                                   reconfigures (SOURCE: DynamicLogConfig, LogCleaner, ...)
 *   probe N OK | probe N Class message   for stdin line N: "default" or "broker", then name=value
 *                                       pairs separated by U+0001: validateConfigs on them; or
 *                                       "applied" and pairs: a broker's KafkaConfig made with them
 *                                       and DynamicLogConfig's check of it
 * Run as a single-file source program on the release's classpath
 * (kraftsim.conformance.broker_config_facts, which writes kraftsim/controller/data/broker_configs.toml;
 * tests/conformance/test_broker_configs_vs_jars.py). */
@SuppressWarnings("unchecked")
public class BrokerConfigFacts {
    static Object module(String name) throws Exception { return Class.forName(name).getField("MODULE$").get(null); }
    static Object member(Object owner, String... names) throws Exception {
        for (String n : names) {
            for (Class<?> c = owner.getClass(); c != null; c = c.getSuperclass()) {
                try { Method m = c.getDeclaredMethod(n); m.setAccessible(true); return m.invoke(owner); } catch (NoSuchMethodException e) { }
                try { Field f = c.getDeclaredField(n); f.setAccessible(true); return f.get(owner); } catch (NoSuchFieldException e) { }
            }
        }
        throw new NoSuchFieldException(String.join("|", names));
    }
    @SuppressWarnings("unchecked")
    static SortedSet<String> names(Object scalaSet) throws Exception {
        Iterator<?> it = (Iterator<?>) Class.forName("scala.jdk.javaapi.CollectionConverters").getMethod("asJava", Class.forName("scala.collection.Iterator")).invoke(null, scalaSet.getClass().getMethod("iterator").invoke(scalaSet));
        SortedSet<String> out = new TreeSet<>();
        while (it.hasNext()) out.add((String) it.next());
        return out;
    }
    /** The validator's class, text and (ValidList from 4.2) whether it takes an empty list. */
    static String validator(ConfigDef.Validator v) throws Exception {
        if (v == null) return "\t";
        String out = v.getClass().getName() + "\t" + v;
        for (String flag : new String[] {"isEmptyAllowed", "isNullAllowed"}) {
            try { Field f = v.getClass().getDeclaredField(flag); f.setAccessible(true); out += "\t" + flag + "=" + f.get(v); } catch (NoSuchFieldException e) { }
        }
        return out;
    }
    /** The reconfigurable parts' config sets: a Scala object's ReconfigurableConfigs or a Java class's
     * RECONFIGURABLE_CONFIGS, for each that the release has. */
    static void printReconfigurables() throws Exception {
        String[][] sources = {
            {"DynamicLogConfig", "kafka.server.DynamicLogConfig$", "org.apache.kafka.server.config.DynamicBrokerConfig$DynamicLogConfig"},
            {"LogCleaner", "kafka.log.LogCleaner$", "org.apache.kafka.storage.internals.log.LogCleaner"},
            {"DynamicThreadPool", "kafka.server.DynamicThreadPool$", "org.apache.kafka.server.config.DynamicBrokerConfig$DynamicThreadPool"},
            {"DynamicListenerConfig", "kafka.server.DynamicListenerConfig$", "org.apache.kafka.server.config.DynamicBrokerConfig$DynamicListenerConfig"},
            {"SocketServer", "kafka.network.SocketServer$", "org.apache.kafka.network.SocketServerConfigs"},
            {"DynamicRemoteLogConfig", "kafka.server.DynamicRemoteLogConfig$", "org.apache.kafka.server.config.DynamicBrokerConfig$DynamicRemoteLogConfig"},
            {"DynamicReplicationConfig", "kafka.server.DynamicReplicationConfig$", "org.apache.kafka.server.config.DynamicBrokerConfig$DynamicReplicationConfig"},
            {"DynamicQuotaConfig", "kafka.server.DynamicQuotaConfig$", "org.apache.kafka.server.config.DynamicBrokerConfig$DynamicQuotaConfig"},
        };
        for (String[] source : sources) {
            Collection<String> names = null;
            try { names = names(member(module(source[1]), "ReconfigurableConfigs")); } catch (Exception e) { }
            if (names == null) {
                try { names = (Collection<String>) staticField(Class.forName(source[2]), "RECONFIGURABLE_CONFIGS"); } catch (Exception e) { }
            }
            if (names != null) for (String name : new TreeSet<>(names)) System.out.println("reconf\t" + source[0] + "\t" + name);
        }
        Object producer = null;
        try { producer = names(member(module("kafka.server.DynamicBrokerConfig$"), "DynamicProducerStateManagerConfig")); } catch (Exception e) { }
        if (producer == null) {
            try { producer = staticField(Class.forName("org.apache.kafka.server.config.DynamicBrokerConfig"), "DYNAMIC_PRODUCER_STATE_MANAGER_CONFIGS"); } catch (Exception e) { }
        }
        if (producer == null) {  // (3.5 to 3.8: the storage module's)
            try { producer = staticField(Class.forName("org.apache.kafka.storage.internals.log.ProducerStateManagerConfig"), "RECONFIGURABLE_CONFIGS"); } catch (Exception e) { }
        }
        if (producer != null) for (Object name : new TreeSet<>((Collection<String>) producer)) System.out.println("reconf\tProducerStateManager\t" + name);
    }
    /** A broker's KafkaConfig made of a broker's own configs and `dynamic` (as the broker makes the
     * new configuration it checks), then DynamicLogConfig's check of it (its parts need no broker). */
    static void applied(Properties dynamic) throws Throwable {
        Map<String, Object> props = new HashMap<>();
        props.put("process.roles", "broker"); props.put("node.id", "2");
        props.put("controller.quorum.voters", "1@127.0.0.1:9093"); props.put("controller.listener.names", "CONTROLLER");
        props.put("listeners", "PLAINTEXT://127.0.0.1:9092");
        props.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
        props.put("log.dirs", "/tmp/kraftsim-broker-config-facts");
        for (String k : dynamic.stringPropertyNames()) props.put(k, dynamic.getProperty(k));
        Class<?> kc = Class.forName("kafka.server.KafkaConfig");
        Object config;
        try { config = kc.getConstructor(Map.class).newInstance(props); }
        catch (InvocationTargetException e) { throw e.getCause(); }
        Class<?> dlc = Class.forName("kafka.server.DynamicLogConfig");
        Constructor<?> make = dlc.getConstructors()[0];
        Object check = make.newInstance(new Object[make.getParameterCount()]);
        try { dlc.getMethod("validateReconfiguration", kc).invoke(check, config); }
        catch (InvocationTargetException e) { throw e.getCause(); }
    }
    /** A default as DynamicBrokerConfig's static defaults hold it (ConfigDef.convertToStringMapWithPasswordValues). */
    static String staticDefault(ConfigDef.ConfigKey k) {
        if (!k.hasDefault()) return "nodefault";
        if (k.defaultValue == null) return "nulldefault";
        Map<String, String> one = ConfigDef.convertToStringMapWithPasswordValues(Collections.singletonMap(k.name, k.defaultValue));
        return one.containsKey(k.name) ? "default=" + one.get(k.name) : "nulldefault";
    }
    /** `text` in ASCII on one line, whatever the console's encoding. */
    static String escaped(String text) {
        StringBuilder out = new StringBuilder();
        for (char c : text.toCharArray()) {
            if (c == '\\') out.append("\\\\");
            else if (c == '\t') out.append("\\t");
            else if (c == '\n') out.append("\\n");
            else if (c == '\r') out.append("\\r");
            else if (c > 126) out.append(String.format("\\u%04x", (int) c));
            else out.append(c);
        }
        return out.toString();
    }
    static boolean hasMethod(Class<?> c, String name) { for (Method m : c.getMethods()) if (m.getName().equals(name)) return true; return false; }
    static Object staticField(Class<?> c, String name) throws Exception { Field f = c.getDeclaredField(name); f.setAccessible(true); return f.get(null); }
    static ConfigDef kafkaConfigDef() throws Exception {
        Class<?> kc = Class.forName("kafka.server.KafkaConfig");
        try { return (ConfigDef) kc.getMethod("configDef").invoke(null); }
        catch (NoSuchMethodException e) { return (ConfigDef) member(module("kafka.server.KafkaConfig$"), "configDef"); }
    }
    public static void main(String[] a) throws Exception {
        for (ConfigDef.ConfigKey k : kafkaConfigDef().configKeys().values())
            System.out.println("kafka\t" + k.name + "\t" + k.type + "\t" + staticDefault(k) + "\tinternal=" + k.internalConfig);
        for (ConfigDef.ConfigKey k : kafkaConfigDef().configKeys().values())
            if (k.documentation != null) System.out.println("doc\t" + k.name + "\t" + escaped(k.documentation));
        Map<String, ConfigDef.ConfigKey> dyn;
        Set<String> all, perBroker, security, nonDynamic;
        Object validator;  // (the Java class of 4.1 on, or the Scala object before)
        Method validate;
        printReconfigurables();
        Class<?> javaDbc = null;
        try { javaDbc = Class.forName("org.apache.kafka.server.config.DynamicBrokerConfig"); } catch (ClassNotFoundException e) { }
        if (javaDbc != null && hasMethod(javaDbc, "validateConfigs")) {
            Class<?> broker;
            try { broker = Class.forName("org.apache.kafka.server.config.DynamicConfig$Broker"); }
            catch (ClassNotFoundException e) { broker = null; }
            if (broker != null) {
                dyn = (Map<String, ConfigDef.ConfigKey>) broker.getMethod("configKeys").invoke(null);
                nonDynamic = new TreeSet<>((Set<String>) broker.getMethod("nonDynamicProps").invoke(null));
            } else {
                Object scala = module("kafka.server.DynamicConfig$Broker$");
                dyn = (Map<String, ConfigDef.ConfigKey>) scala.getClass().getMethod("configKeys").invoke(scala);
                nonDynamic = names(member(scala, "nonDynamicProps"));
            }
            all = new TreeSet<>((Set<String>) staticField(javaDbc, "ALL_DYNAMIC_CONFIGS"));
            perBroker = new TreeSet<>((Set<String>) staticField(javaDbc, "PER_BROKER_CONFIGS"));
            security = new TreeSet<>((Set<String>) staticField(javaDbc, "DYNAMIC_SECURITY_CONFIGS"));
            validator = null;
            validate = null;
            for (Method m : javaDbc.getMethods()) if (m.getName().equals("validateConfigs")) validate = m;
        } else {
            Object broker = module("kafka.server.DynamicConfig$Broker$");
            try { dyn = (Map<String, ConfigDef.ConfigKey>) broker.getClass().getMethod("configKeys").invoke(broker); }
            catch (NoSuchMethodException e) { dyn = ((ConfigDef) member(broker, "brokerConfigDef", "brokerConfigs")).configKeys(); }
            Object dbc = module("kafka.server.DynamicBrokerConfig$");
            all = names(member(dbc, "AllDynamicConfigs"));
            perBroker = names(member(dbc, "kafka$server$DynamicBrokerConfig$$PerBrokerConfigs", "PerBrokerConfigs"));
            security = names(member(dbc, "DynamicSecurityConfigs"));
            nonDynamic = names(member(broker, "nonDynamicProps"));
            validator = dbc;
            validate = null;
            for (Method m : dbc.getClass().getMethods()) if (m.getName().equals("validateConfigs")) validate = m;
        }
        for (ConfigDef.ConfigKey k : dyn.values())
            System.out.println("dynamic\t" + k.name + "\t" + k.type + "\t" + (!k.hasDefault() ? "nodefault" : k.defaultValue == null ? "nulldefault" : "default=" + ConfigDef.convertToString(k.defaultValue, k.type)) + "\t" + validator(k.validator));
        for (String n : all) System.out.println("all\t" + n);
        for (String n : perBroker) System.out.println("perbroker\t" + n);
        for (String n : security) System.out.println("security\t" + n);
        for (String n : nonDynamic) System.out.println("nondynamic\t" + n);
        Scanner in = new Scanner(System.in);
        int n = 0;
        while (in.hasNextLine()) {
            String[] parts = in.nextLine().split("\u0001");
            n++;
            Properties p = new Properties();
            for (int i = 1; i < parts.length; i++) { int j = parts[i].indexOf('='); p.setProperty(parts[i].substring(0, j), parts[i].substring(j + 1)); }
            try {
                if (parts[0].equals("applied")) { applied(p); System.out.println("probe\t" + n + "\tOK"); continue; }
                boolean perBrokerConfig = parts[0].equals("broker");
                // (from 4.2.2 it also takes the values before config providers resolved them: the same here)
                if (validate.getParameterCount() == 3) validate.invoke(validator, p, p, perBrokerConfig);
                else validate.invoke(validator, p, perBrokerConfig); System.out.println("probe\t" + n + "\tOK");
            }
            catch (InvocationTargetException e) { Throwable t = e.getCause(); System.out.println("probe\t" + n + "\t" + t.getClass().getSimpleName() + "\t" + t.getMessage()); }
            catch (Throwable t) { System.out.println("probe\t" + n + "\t" + t.getClass().getSimpleName() + "\t" + t.getMessage()); }
        }
    }
}
