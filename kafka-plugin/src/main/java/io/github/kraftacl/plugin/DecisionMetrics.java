package io.github.kraftacl.plugin;

import java.util.List;
import org.apache.kafka.common.metrics.Sensor;
import org.apache.kafka.server.authorizer.AuthorizationResult;

/**
 * The decision counters of Kafka's StandardAuthorizer (allowed, denied and requested actions per minute) plus the
 * actions denied because no serve answered, as four Kafka sensors.
 *
 * <p>Thread-safe (Kafka's sensors are). Built by {@link KraftAclAuthorizer#withPluginMetrics} where the broker
 * offers plugin metrics; it names no class Kafka 4.0 lacks, so the authorizer base can hold one on every release.
 */
final class DecisionMetrics {
    private final Sensor allowed;
    private final Sensor denied;
    private final Sensor requests;
    private final Sensor unanswered;

    DecisionMetrics(Sensor allowed, Sensor denied, Sensor requests, Sensor unanswered) {
        this.allowed = allowed;
        this.denied = denied;
        this.requests = requests;
        this.unanswered = unanswered;
    }

    /** Count one call's results. */
    void record(List<AuthorizationResult> results) {
        int granted = 0;
        for (AuthorizationResult r : results) {
            if (r == AuthorizationResult.ALLOWED) {
                granted++;
            }
        }
        requests.record(results.size());
        allowed.record(granted);
        denied.record(results.size() - granted);
    }

    /** Count actions denied without a decision (fail closed). */
    void unanswered(int actions) {
        unanswered.record(actions);
    }
}
