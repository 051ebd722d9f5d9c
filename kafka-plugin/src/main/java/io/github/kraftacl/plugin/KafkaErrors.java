package io.github.kraftacl.plugin;

import java.util.HashMap;
import java.util.Map;
import java.util.function.Function;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.errors.ClusterAuthorizationException;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.errors.NotControllerException;
import org.apache.kafka.common.errors.PolicyViolationException;
import org.apache.kafka.common.errors.SecurityDisabledException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.UnknownServerException;
import org.apache.kafka.common.errors.UnsupportedVersionException;

/**
 * Kafka's exception for an error serve names (by Kafka's error name or code), built from Kafka's public
 * {@code org.apache.kafka.common.errors} classes.
 *
 * <p>Immutable. Kafka's own name/code table ({@code org.apache.kafka.common.protocol.Errors}) is an internal class
 * that a plugin must not use, so this lists the errors serve's ACL API can return (KIP-140's per-entry results and
 * the whole-call errors); any other becomes UNKNOWN_SERVER_ERROR carrying the name or code in its message.
 * KraftAclAuthorizerTest checks every entry against Kafka's table.
 */
final class KafkaErrors {
    /** One error: Kafka's name, code and exception. */
    record Known(String name, int code, Function<String, ApiException> exception) {}

    static final Known[] KNOWN = {
        new Known("UNKNOWN_SERVER_ERROR", -1, UnknownServerException::new),
        new Known("REQUEST_TIMED_OUT", 7, TimeoutException::new),
        new Known("CLUSTER_AUTHORIZATION_FAILED", 31, ClusterAuthorizationException::new),
        new Known("UNSUPPORTED_VERSION", 35, UnsupportedVersionException::new),
        new Known("NOT_CONTROLLER", 41, NotControllerException::new),
        new Known("INVALID_REQUEST", 42, InvalidRequestException::new),
        new Known("POLICY_VIOLATION", 44, PolicyViolationException::new),
        new Known("SECURITY_DISABLED", 54, SecurityDisabledException::new),
    };

    private static final Map<String, Known> BY_NAME = index(Known::name);
    private static final Map<Integer, Known> BY_CODE = index(Known::code);

    private KafkaErrors() {}

    private static <K> Map<K, Known> index(Function<Known, K> key) {
        Map<K, Known> out = new HashMap<>();
        for (Known k : KNOWN) {
            out.put(key.apply(k), k);
        }
        return Map.copyOf(out);
    }

    /** The exception for Kafka's error name (e.g. INVALID_REQUEST), or null when the name is not one listed here. */
    static ApiException byName(String name, String message) {
        Known known = BY_NAME.get(name);
        return known == null ? null : known.exception().apply(message);
    }

    /** The exception for Kafka's error code; an unlisted code is UNKNOWN_SERVER_ERROR naming it. */
    static ApiException byCode(int code, String message) {
        Known known = BY_CODE.get(code);
        return known == null
                ? new UnknownServerException("Kafka error code " + code + ": " + message)
                : known.exception().apply(message);
    }
}
