package io.github.kraftacl.plugin;

import static org.junit.jupiter.api.Assertions.fail;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import org.apache.kafka.common.ClusterResource;
import org.apache.kafka.common.Endpoint;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.server.authorizer.Action;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.authorizer.AuthorizerServerInfo;

/** What the plugin's unit tests share: a configured plugin, request contexts, actions, and waiting for a state. */
final class TestPlugins {
    static final String TOKEN = "plugin-token-0123456789";

    private TestPlugins() {}

    /** A configured KraftAclAuthorizer (token in DIR/token, 500 ms timeouts, a fast feed) with extra key/values. */
    static KraftAclAuthorizer plugin(Path dir, String urls, String... more) throws Exception {
        Path token = dir.resolve("token");
        Files.writeString(token, "# comment\n" + TOKEN + "\n");
        Map<String, Object> props = new HashMap<>(Map.of(PluginConfig.URLS, urls, PluginConfig.TOKEN_FILE,
                token.toString(), PluginConfig.REQUEST_TIMEOUT_MS, "500", PluginConfig.READY_POLL_MS, "20",
                "super.users", "User:admin; User:ANONYMOUS", PluginConfig.HEARTBEAT_MS, "100",
                PluginConfig.HEARTBEAT_GRACE_MS, "200", PluginConfig.PROBE_INTERVAL_MS, "50"));
        for (int i = 0; i < more.length; i += 2) {
            props.put(more[i], more[i + 1]);
        }
        KraftAclAuthorizer plugin = new KraftAclAuthorizer();
        plugin.configure(props);
        return plugin;
    }

    /** A Metadata request's context of this user from 10.0.0.7. */
    static AuthorizableRequestContext ctx(String user) throws Exception {
        return ctx(user, ApiKeys.METADATA.id);
    }

    /** A request's context of this user from 10.0.0.7, of this API key. */
    static AuthorizableRequestContext ctx(String user, int apiKey) throws Exception {
        InetAddress address = InetAddress.getByName("10.0.0.7");
        return new AuthorizableRequestContext() {
            public String listenerName() { return "SASL_PLAINTEXT"; }
            public SecurityProtocol securityProtocol() { return SecurityProtocol.SASL_PLAINTEXT; }
            public KafkaPrincipal principal() { return new KafkaPrincipal("User", user); }
            public InetAddress clientAddress() { return address; }
            public int requestType() { return apiKey; }
            public int requestVersion() { return 12; }
            public String clientId() { return "test"; }
            public int correlationId() { return 1; }
        };
    }

    /** READ on a LITERAL topic, logged if allowed and if denied. */
    static Action read(String topic) {
        return new Action(AclOperation.READ, new ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL), 1,
                true, true);
    }

    /** A port nothing listens on. */
    static int deadPort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /** Wait (up to 20 s) until the condition holds; fails naming it otherwise. */
    static void waitFor(BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + 20_000_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("not within 20 s: " + what);
            }
            Thread.sleep(5);
        }
    }

    /** The broker's start-up as the plugin sees it. */
    static AuthorizerServerInfo info(Collection<Endpoint> endpoints, Collection<String> early) {
        return new AuthorizerServerInfo() {
            public ClusterResource clusterResource() { return new ClusterResource("c"); }
            public int brokerId() { return 1; }
            public Collection<Endpoint> endpoints() { return endpoints; }
            public Endpoint interBrokerEndpoint() { return endpoints.iterator().next(); }
            public Collection<String> earlyStartListeners() { return early; }
        };
    }

    /** One client listener, not early-start. */
    static AuthorizerServerInfo oneListener() {
        return info(List.of(new Endpoint("CLIENT", SecurityProtocol.SASL_PLAINTEXT, "127.0.0.1", 9092)), List.of());
    }
}
