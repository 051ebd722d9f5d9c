package io.github.kraftacl.plugin;

import com.sun.tools.attach.VirtualMachine;
import java.util.Set;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

/**
 * Prints JMX attributes of every MBean matching a pattern in a running JVM (attached by pid, no JMX port needed):
 * {@code JmxAttribute <pid> <object-name-pattern> <attribute>} prints {@code <object name>\t<value>} lines;
 * {@code <attribute>,<attribute>...} prints {@code <object name>\t<attribute>\t<value>} lines, one JVM for all.
 *
 * <p>The broker tests read the broker's own {@code acls-total-count} this way. A tool, not part of the plugin.
 */
public final class JmxAttribute {
    private JmxAttribute() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: JmxAttribute <pid> <object-name-pattern> <attribute>");
            System.exit(2);
        }
        VirtualMachine vm = VirtualMachine.attach(args[0]);
        String address;
        try {
            address = vm.startLocalManagementAgent();
        } finally {
            vm.detach();
        }
        try (JMXConnector connector = JMXConnectorFactory.connect(new JMXServiceURL(address))) {
            MBeanServerConnection server = connector.getMBeanServerConnection();
            Set<ObjectName> names = server.queryNames(new ObjectName(args[1]), null);
            String[] attributes = args[2].split(",");
            for (ObjectName name : names) {
                for (String attribute : attributes) {
                    try {
                        Object value = server.getAttribute(name, attribute);
                        System.out.println(name + "\t" + (attributes.length > 1 ? attribute + "\t" : "") + value);
                    } catch (javax.management.AttributeNotFoundException e) {
                        // another MBean of the pattern
                    }
                }
            }
        }
    }
}
