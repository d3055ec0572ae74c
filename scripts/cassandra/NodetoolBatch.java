// Several nodetool commands in one JVM (a JVM start costs seconds on a small
// machine, and a restore runs one `import` per table). Each argument is one
// command, its words separated by tabs, e.g. "-h\t127.0.0.1\t-p\t7199\tsnapshot\t-t\tx\tparley".
// Run with the Cassandra jars on the class path (single-file source launch):
//   java -cp '<cassandra lib>/*' scripts/cassandra/NodetoolBatch.java <command>...
// Stops at the first command that fails and exits with its status.
import java.lang.reflect.Constructor;

public class NodetoolBatch {
  public static void main(String[] commands) throws Exception {
    // NodeProbeFactory is package-private and this class is loaded by the source launcher's own loader: reflection.
    Class<?> factoryClass = Class.forName("org.apache.cassandra.tools.NodeProbeFactory");
    Constructor<?> factory = factoryClass.getDeclaredConstructor();
    factory.setAccessible(true);
    Class<?> nodeTool = Class.forName("org.apache.cassandra.tools.NodeTool");
    Class<?> output = Class.forName("org.apache.cassandra.tools.Output");
    Object console = output.getField("CONSOLE").get(null);
    Constructor<?> make = nodeTool.getConstructor(Class.forName("org.apache.cassandra.tools.INodeProbeFactory"), output);
    for (String command : commands) {
      Object tool = make.newInstance(factory.newInstance(), console);
      int rc = (Integer) nodeTool.getMethod("execute", String[].class).invoke(tool, (Object) command.split("\t"));
      if (rc != 0) System.exit(rc);
    }
    System.exit(0);
  }
}
