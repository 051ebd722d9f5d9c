package io.github.kraftacl.plugin;

import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.server.authorizer.Action;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.authorizer.AuthorizationResult;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The broker's audit log of decisions, written exactly as Kafka's StandardAuthorizer writes it
 * ({@code StandardAuthorizerData.logAuditMessage}): logger {@code kafka.authorizer.logger}; an allowed action at
 * DEBUG when the action asks to be logged if allowed, else TRACE; a denied one at INFO when it asks to be logged
 * if denied, else TRACE; the message word for word, with the rule that decided.
 *
 * <p>Stateless and thread-safe. The message is built only when its level is enabled.
 */
final class AuditLog {
    static final String LOGGER = "kafka.authorizer.logger";
    private static final Logger AUDIT = LoggerFactory.getLogger(LOGGER);

    /** Which decisions' rules the audit logger's level needs (ask serve for those, remember them with them). */
    enum Rules {
        /** Above INFO: nothing is logged. */
        NONE(null),
        /** INFO (Kafka's default): denials are logged, allowed decisions are not. */
        DENIED("denied"),
        /** DEBUG or TRACE: every decision may be logged. */
        ALL("all");

        /** The value of the request's {@code rules} field. */
        final String wire;

        Rules(String wire) {
            this.wire = wire;
        }

        /** True when a decision with this result needs its rule at this level. */
        boolean needs(AuthorizationResult result) {
            return this == ALL || (this == DENIED && result == AuthorizationResult.DENIED);
        }
    }

    static final String UNREPORTED_RULE = "(not reported by kraft-acl serve)";

    private AuditLog() {}

    /** The rules the logger's level needs now. */
    static Rules rulesNeeded() {
        if (AUDIT.isDebugEnabled()) {
            return Rules.ALL;
        }
        return AUDIT.isInfoEnabled() ? Rules.DENIED : Rules.NONE;
    }

    /** Log one decided action at its level, as StandardAuthorizer does. */
    static void log(KafkaPrincipal principal, AuthorizableRequestContext ctx, Action action, boolean allowed,
            String rule) {
        if (allowed) {
            if (action.logIfAllowed() && AUDIT.isDebugEnabled()) {
                AUDIT.debug(message(principal, ctx, action, true, rule));
            } else if (AUDIT.isTraceEnabled()) {
                AUDIT.trace(message(principal, ctx, action, true, rule));
            }
        } else if (action.logIfDenied()) {
            if (AUDIT.isInfoEnabled()) {
                AUDIT.info(message(principal, ctx, action, false, rule));
            }
        } else if (AUDIT.isTraceEnabled()) {
            AUDIT.trace(message(principal, ctx, action, false, rule));
        }
    }

    /** StandardAuthorizer's audit message (buildAuditMessage). */
    static String message(KafkaPrincipal principal, AuthorizableRequestContext ctx, Action action, boolean allowed,
            String rule) {
        ResourcePattern p = action.resourcePattern();
        return new StringBuilder(160).append("Principal = ").append(principal)
                .append(" is ").append(allowed ? "Allowed" : "Denied")
                .append(" operation = ").append(action.operation())
                .append(" from host = ").append(ctx.clientAddress().getHostAddress())
                .append(" on resource = ").append(typeName(p.resourceType())).append(':').append(p.patternType())
                .append(':').append(p.name())
                .append(" for request = ").append(RequestNames.of(ctx.requestType()))
                .append(" with resourceRefCount = ").append(action.resourceReferenceCount())
                .append(" based on rule ").append(rule == null ? UNREPORTED_RULE : rule)
                .toString();
    }

    /**
     * The resource type as Kafka's audit line writes it ({@code SecurityUtils.resourceTypeName}, an internal class):
     * TOPIC is Topic, TRANSACTIONAL_ID is TransactionalId.
     */
    static String typeName(ResourceType type) {
        StringBuilder out = new StringBuilder();
        boolean upper = true;
        for (char c : type.name().toCharArray()) {
            if (c == '_') {
                upper = true;
            } else {
                out.append(upper ? c : Character.toLowerCase(c));
                upper = false;
            }
        }
        return out.toString();
    }
}
