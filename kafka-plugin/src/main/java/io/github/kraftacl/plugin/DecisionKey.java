package io.github.kraftacl.plugin;

import java.net.Inet4Address;
import java.net.InetAddress;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.server.authorizer.Action;

/**
 * What a decision depends on, as serve decides it (Kafka's StandardAuthorizer rules): the principal, the client's
 * address, the operation, and the LITERAL resource's type and name. The listener and the request are only audited.
 *
 * <p>Immutable. {@code host} is the client's {@link Inet4Address} (whose equality is its 32-bit address, with no
 * string built per request) or, for IPv6, the address text as serve sees it (with its scope, which
 * {@code Inet6Address} equality ignores).
 */
record DecisionKey(String principalType, String principalName, Object host, AclOperation operation,
        ResourceType resourceType, String name) {

    /** The key of one action of one request. */
    static DecisionKey of(KafkaPrincipal principal, Object host, Action action) {
        return new DecisionKey(principal.getPrincipalType(), principal.getName(), host, action.operation(),
                action.resourcePattern().resourceType(), action.resourcePattern().name());
    }

    /** The host part of a key for this client address. */
    static Object host(InetAddress address) {
        return address instanceof Inet4Address ? address : address.getHostAddress();
    }

    /** The bytes this key holds, roughly (object headers, fields, the strings' characters). */
    int weight() {
        return 40 + 48 * 3 + principalType.length() + principalName.length() + name.length()
                + (host instanceof String text ? 48 + text.length() : 0);
    }
}
