package io.github.kraftacl.plugin;

import org.apache.kafka.server.authorizer.AuthorizationResult;

/**
 * One decision serve made, as the plugin remembers it: the result, the log offset of the state that decided it,
 * the feed generation it was stored under, and the rule in Kafka's audit-log words (null when not asked).
 *
 * <p>Immutable.
 */
record Remembered(AuthorizationResult result, long offset, long generation, String rule) {
    /** The bytes this value holds beyond its key, roughly (object headers, fields, the rule's characters). */
    int weight() {
        return 32 + (rule == null ? 0 : 48 + rule.length());
    }
}
