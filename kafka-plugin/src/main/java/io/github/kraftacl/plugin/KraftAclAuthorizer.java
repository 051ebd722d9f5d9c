package io.github.kraftacl.plugin;

import java.util.LinkedHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.metrics.Gauge;
import org.apache.kafka.common.metrics.Monitorable;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.common.metrics.Sensor;
import org.apache.kafka.common.metrics.stats.Avg;
import org.apache.kafka.common.metrics.stats.Max;
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
                (Gauge<Integer>) (cfg, now) -> aclCountForMetric());
        cacheMetrics(metrics);
        gauge(metrics, "serve-urls-skipped", "The number of kraft.acl.urls skipped until they answer again "
                + "(circuit open)", now -> routes().openCount());
    }

    /** The decision cache's figures (the cache's own metrics; kept at 0 while it is off). */
    private void cacheMetrics(PluginMetrics metrics) {
        CacheMetrics m = cacheMetrics();
        gauge(metrics, "cache-hit-total", "Actions answered from remembered decisions", now -> m.hits());
        gauge(metrics, "cache-miss-total", "Actions asked of serve (not remembered, or not usable)", now -> m.misses());
        gauge(metrics, "cache-hit-ratio", "Hits per action over the last 30 to 60 seconds (NaN without actions)",
                m::hitRatio);
        gauge(metrics, "cache-entries", "Decisions remembered now",
                now -> cache() == null ? 0L : cache().size());
        gauge(metrics, "cache-invalidation-total", "ACL changes that made the decisions remembered before unusable",
                now -> m.invalidations());
        gauge(metrics, "cache-reset-total", "Times the change feed's chain of answers broke (serve failed, "
                + "restarted or changed), forgetting every remembered decision", now -> m.resets());
        gauge(metrics, "cache-usable", "1 while remembered decisions may be used (change feed current), else 0",
                now -> feed() != null && feed().view().usable(System.nanoTime()) ? 1 : 0);
        gauge(metrics, "cache-acl-offset", "The offset of the newest ACL change the change feed reported (-1 before "
                + "any, or while the feed is broken)", now -> feed() == null || feed().view().server() < 0 ? -1L
                : feed().view().minOffset());
        Sensor lag = metrics.addSensor("kraft-acl-cache-invalidation-lag");
        lag.add(metrics.metricName("cache-invalidation-lag-ms-avg", "Average time from serve applying an ACL change "
                + "to this broker dropping the decisions made before it", new LinkedHashMap<>()), new Avg());
        lag.add(metrics.metricName("cache-invalidation-lag-ms-max", "Longest time from serve applying an ACL change "
                + "to this broker dropping the decisions made before it", new LinkedHashMap<>()), new Max());
        m.lagSensor(lag);
    }

    private static <T> void gauge(PluginMetrics metrics, String name, String description,
            java.util.function.LongFunction<T> value) {
        metrics.addMetric(metrics.metricName(name, description, new LinkedHashMap<>()),
                (Gauge<T>) (cfg, now) -> value.apply(now));
    }

    private static Sensor rate(PluginMetrics metrics, String sensor, String name, String description) {
        Sensor s = metrics.addSensor(sensor);
        s.add(metrics.metricName(name, description, new LinkedHashMap<>()),
                new Rate(TimeUnit.MINUTES, new WindowedSum()));
        return s;
    }
}
