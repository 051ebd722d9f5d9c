package io.github.kraftacl.plugin;

import java.util.LinkedHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.metrics.Gauge;
import org.apache.kafka.common.metrics.Monitorable;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.common.metrics.Sensor;
import org.apache.kafka.common.metrics.stats.Rate;
import org.apache.kafka.common.metrics.stats.WindowedSum;

/**
 * A Kafka 4.1+ broker's {@code authorizer.class.name}: kraft-acl's authorizer with its metrics in the broker's plugin
 * metrics (KIP-877), named as Kafka's StandardAuthorizer names its own, plus the actions no serve answered.
 *
 * <p>Thread-safe (see {@link AbstractKraftAclAuthorizer}). Kafka 4.0 has no {@link Monitorable}, so a 4.0 broker
 * cannot load this class: it names {@link KraftAclAuthorizerKafka40} instead.
 */
public final class KraftAclAuthorizer extends AbstractKraftAclAuthorizer implements Monitorable {

    /** The same metrics as Kafka's StandardAuthorizer (acls-total-count, the decision rates), plus unanswered calls. */
    @Override
    public void withPluginMetrics(PluginMetrics metrics) {
        useMetrics(new DecisionMetrics(
                rate(metrics, "authorizer-authorization-allowed", "authorization-allowed-rate-per-minute",
                        "The number of authorization allowed per minute"),
                rate(metrics, "authorizer-authorization-denied", "authorization-denied-rate-per-minute",
                        "The number of authorization denied per minute"),
                rate(metrics, "authorizer-authorization-request", "authorization-request-rate-per-minute",
                        "The number of authorization request per minute"),
                rate(metrics, "kraft-acl-unanswered", "authorization-unanswered-rate-per-minute",
                        "The number of actions denied per minute because no kraft-acl serve answered (fail closed)")));
        metrics.addMetric(metrics.metricName("acls-total-count", "The number of acls defined", new LinkedHashMap<>()),
                (Gauge<Integer>) (cfg, now) -> aclCount());
    }

    private static Sensor rate(PluginMetrics metrics, String sensor, String name, String description) {
        Sensor s = metrics.addSensor(sensor);
        s.add(metrics.metricName(name, description, new LinkedHashMap<>()),
                new Rate(TimeUnit.MINUTES, new WindowedSum()));
        return s;
    }
}
