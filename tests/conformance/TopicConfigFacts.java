import java.lang.reflect.*;
import java.util.*;
import org.apache.kafka.common.config.ConfigDef;
/** Prints a release's topic config definitions (LogConfig's ConfigDef, in definition order:
 * name, type, validator) and, for each line on stdin (name=value pairs separated by U+0001),
 * what the release's own topic config validation says of those configs, called as its
 * controller calls it with a default configuration: `probe N OK` or `probe N Class message`
 * for the N-th line (from 1). Run as a single-file source program on the release's classpath
 * (tests/conformance/test_topic_configs_vs_jars.py). */
public class TopicConfigFacts {
    static Class<?> logConfig() throws Exception {
        try { return Class.forName("org.apache.kafka.storage.internals.log.LogConfig"); }
        catch (ClassNotFoundException e) { return Class.forName("kafka.log.LogConfig"); }  // (Scala, before 3.6)
    }
    static ConfigDef configDef() throws Exception {
        try { return (ConfigDef) logConfig().getMethod("configDefCopy").invoke(null); }
        catch (NoSuchMethodException e) {  // (the Scala object's own field)
            Class<?> module = Class.forName("kafka.log.LogConfig$");
            Object instance = module.getField("MODULE$").get(null);
            for (java.lang.reflect.Field f : module.getDeclaredFields())
                if (ConfigDef.class.isAssignableFrom(f.getType())) { f.setAccessible(true); return (ConfigDef) f.get(instance); }
            throw e;
        }
    }
    static Method validate() throws Exception {
        Method best = null;
        for (Method m : logConfig().getMethods())
            if (m.getName().equals("validate") && Modifier.isStatic(m.getModifiers()) && (best == null || m.getParameterCount() > best.getParameterCount())) best = m;
        return best;
    }
    public static void main(String[] a) throws Exception {
        Map<String, ConfigDef.ConfigKey> keys = configDef().configKeys();
        for (ConfigDef.ConfigKey k : keys.values())
            System.out.println("key\t" + k.name + "\t" + k.type + "\t" + (k.validator == null ? "" : k.validator.getClass().getName() + "\t" + k.validator));
        Method v = validate();
        System.out.println("validate\t" + v);
        Scanner in = new Scanner(System.in);
        int n = 0;
        while (in.hasNextLine()) {
            String line = in.nextLine();
            n++;
            Properties p = new Properties();
            for (String kv : line.split("\u0001")) { int i = kv.indexOf('='); p.setProperty(kv.substring(0, i), kv.substring(i + 1)); }
            Object[] args = new Object[v.getParameterCount()];
            Class<?>[] types = v.getParameterTypes();
            boolean hasProperties = Arrays.asList(types).contains(Properties.class);
            int maps = 0;
            for (int i = 0; i < args.length; i++) {
                if (types[i] == Properties.class) args[i] = p;
                else if (types[i] == boolean.class) args[i] = false;
                else if (Map.class.isAssignableFrom(types[i])) {
                    maps++;  // (without Properties: existing configs, the new ones, the broker's defaults)
                    if (!hasProperties && maps == 2) { Map<String, String> m = new HashMap<>(); for (String k : p.stringPropertyNames()) m.put(k, p.getProperty(k)); args[i] = m; }
                    else args[i] = new HashMap<String, String>();
                }
            }
            try { v.invoke(null, args); System.out.println("probe\t" + n + "\tOK"); }
            catch (InvocationTargetException e) { Throwable t = e.getCause(); System.out.println("probe\t" + n + "\t" + t.getClass().getSimpleName() + "\t" + t.getMessage()); }
        }
    }
}
