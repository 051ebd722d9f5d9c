package io.github.kraftacl.plugin;

import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Kafka 4.0 broker's {@code authorizer.class.name}: kraft-acl's authorizer without metrics, because Kafka 4.0
 * offers plugins none (KIP-877's Monitorable arrived in 4.1, and a class implementing it cannot load on 4.0).
 *
 * <p>Thread-safe (see {@link AbstractKraftAclAuthorizer}). On Kafka 4.1 and later it works too, without metrics;
 * {@link KraftAclAuthorizer} is the class to name there, and this one says so at start-up.
 */
public final class KraftAclAuthorizerKafka40 extends AbstractKraftAclAuthorizer {
    private static final Logger LOG = LoggerFactory.getLogger(KraftAclAuthorizerKafka40.class);

    @Override
    public void configure(Map<String, ?> configs) {
        super.configure(configs);
        if (brokerOffersPluginMetrics()) {
            LOG.info("kraft-acl: this broker offers plugin metrics (Kafka 4.1 or later); name {} in "
                    + "authorizer.class.name to have the authorizer's metrics", "io.github.kraftacl.plugin.KraftAclAuthorizer");
        }
    }

    /** True when Kafka's Monitorable interface (Kafka 4.1+) is on the broker's classpath. */
    static boolean brokerOffersPluginMetrics() {
        try {
            Class.forName("org.apache.kafka.common.metrics.Monitorable", false,
                    KraftAclAuthorizerKafka40.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }
}
