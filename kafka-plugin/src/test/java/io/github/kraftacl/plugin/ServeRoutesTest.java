package io.github.kraftacl.plugin;

import static io.github.kraftacl.plugin.TestPlugins.ctx;
import static io.github.kraftacl.plugin.TestPlugins.oneListener;
import static io.github.kraftacl.plugin.TestPlugins.plugin;
import static io.github.kraftacl.plugin.TestPlugins.read;
import static io.github.kraftacl.plugin.TestPlugins.waitFor;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.Proxy;
import java.net.ProxySelector;
import java.net.SocketAddress;
import java.net.URI;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.server.authorizer.AuthorizationResult;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;

/**
 * The circuit breaker and the URL order: the local (first) serve is asked first; one that times out or is loading
 * after start-up is skipped until the probe finds it answering, then asked first again; with none answering,
 * decisions are denied without waiting.
 */
class ServeRoutesTest {
    private static final AuthorizationResult ALLOWED = AuthorizationResult.ALLOWED;
    private static final AuthorizationResult DENIED = AuthorizationResult.DENIED;

    @TempDir
    Path dir;
    private final FakeServe local;
    private final FakeServe other;
    private final FakeDecider localDecider = new FakeDecider();
    private final FakeDecider otherDecider = new FakeDecider();
    private KraftAclAuthorizer plugin;

    ServeRoutesTest() throws Exception {
        local = new FakeServe().answer("/v1/authorize", localDecider);
        other = new FakeServe().answer("/v1/authorize", otherDecider);
    }

    @BeforeEach
    void setUp() {
        localDecider.allowed.add("a");
        otherDecider.allowed.add("a");
        CapturedLogs.level("INFO");
        CapturedLogs.clear();
    }

    @AfterEach
    void tearDown() {
        if (plugin != null) {
            plugin.close();
        }
        local.close();
        other.close();
        CapturedLogs.level("OFF");
    }

    private KraftAclAuthorizer started(String urls) throws Exception {
        local.answer("/v1/status", 200, "{\"ready\":true,\"last_applied_offset\":1,\"acl_count\":1}");
        other.answer("/v1/status", 200, "{\"ready\":true,\"last_applied_offset\":1,\"acl_count\":1}");
        plugin = plugin(dir, urls, PluginConfig.CACHE_ENABLED, "false");
        plugin.start(oneListener()).values().iterator().next().toCompletableFuture().get(20, TimeUnit.SECONDS);
        return plugin;
    }

    private AuthorizationResult bob() throws Exception {
        return plugin.authorize(ctx("bob"), List.of(read("a"))).get(0);
    }

    @Test
    void theLocalServeIsAskedFirstAndAgainOnceItAnswersAfterAFailover() throws Exception {
        started(local.url() + "," + other.url());
        assertEquals(ALLOWED, bob());
        assertEquals(1, localDecider.asked.get());
        localDecider.status = 503; // the local serve restarted and loads
        assertEquals(ALLOWED, bob(), "the other serve answers instead, no AuthorizerNotReadyException");
        assertTrue(plugin.routes().isOpen(0));
        assertEquals(ALLOWED, bob());
        assertEquals(2, localDecider.asked.get(), "the loading serve is skipped, not asked again");
        assertEquals(2, otherDecider.asked.get());
        localDecider.status = 200;
        waitFor(() -> !plugin.routes().isOpen(0), "the probe finds the local serve answering");
        assertEquals(ALLOWED, bob());
        assertEquals(3, localDecider.asked.get(), "back to the local serve");
        assertEquals(2, otherDecider.asked.get());
    }

    @Test
    void aServeThatTimesOutIsSkippedAndTheNextAnswersWithinOneTimeout() throws Exception {
        started(local.url() + "," + other.url());
        localDecider.delayMs = 3000; // frozen: longer than the 500 ms request timeout
        assertEquals(ALLOWED, bob());
        assertEquals(1, otherDecider.asked.get(), "the same call went on to the next serve");
        assertEquals(ALLOWED, bob());
        other.answer("/v1/authorize-by-resource-type", 200, "{\"result\":\"ALLOWED\",\"offset\":1}");
        assertEquals(ALLOWED, plugin.authorizeByResourceType(ctx("bob"), AclOperation.WRITE, ResourceType.TOPIC));
        assertTrue(local.on("/v1/authorize-by-resource-type").isEmpty(), "skipped for every decision API");
        assertEquals(1, localDecider.asked.get(), "the frozen serve was asked once");
        assertTrue(CapturedLogs.lines(ServeRoutes.class.getName(), "WARN").get(0).message()
                .contains("stopped asking serve " + local.url()));
    }

    @Test
    void withNoServeAnsweringDecisionsAreDeniedWithoutAsking() throws Exception {
        started(local.url());
        localDecider.delayMs = 3000;
        assertEquals(DENIED, bob());
        assertEquals(DENIED, bob());
        assertEquals(DENIED, bob());
        assertEquals(1, localDecider.asked.get(), "only the first call waited for the frozen serve");
        String warn = CapturedLogs.lines(Decisions.class.getName(), "WARN").get(0).message();
        assertTrue(warn.contains("fail closed"), warn);
        assertEquals(1, CapturedLogs.lines(Decisions.class.getName(), "WARN").size(), "rate-limited");
        assertEquals(3, CapturedLogs.lines(AuditLog.LOGGER, "INFO").stream().filter(l -> l.message().endsWith(
                "based on rule " + Decisions.FAIL_CLOSED_RULE)).count(), "each denial is in the audit log");
        localDecider.delayMs = 0;
        waitFor(() -> !plugin.routes().isOpen(0), "the probe finds serve answering");
        assertEquals(ALLOWED, bob());
    }

    @Test
    void aServeLoadingAfterStartUpIsSkippedAndDecisionsAreDeniedNotThrown() throws Exception {
        started(local.url());
        localDecider.status = 503;
        assertEquals(DENIED, bob(), "a denial with a WARN, never AuthorizerNotReadyException on open listeners");
        assertEquals(DENIED, bob());
        assertEquals(1, localDecider.asked.get());
        localDecider.status = 200;
        waitFor(() -> !plugin.routes().isOpen(0), "serve is ready again");
        assertEquals(ALLOWED, bob());
        assertFalse(CapturedLogs.lines(ServeRoutes.class.getName(), "INFO").isEmpty());
    }

    /**
     * A decision whose connection fails with a RuntimeException (the JVM's ProxySelector throwing for the local serve,
     * on the broker's thread: a bug or JDK surprise under the JDK's networking) is that serve failing, over HTTP as
     * over frames: the next serve answers, or the decision is denied. Before, the exception left authorize() (Kafka
     * answers UNKNOWN_SERVER_ERROR) and the other serve was never asked.
     */
    @ParameterizedTest
    @ValueSource(strings = {"http", "frames"})
    void aConnectionFailingWithAnUnexpectedExceptionFailsOver(String transport) throws Exception {
        ProxySelector prior = ProxySelector.getDefault();
        Thread broker = Thread.currentThread();
        int port = URI.create(local.url()).getPort();
        AtomicBoolean armed = new AtomicBoolean();
        ProxySelector.setDefault(new ProxySelector() {
            @Override
            public List<Proxy> select(URI uri) {
                if (armed.get() && Thread.currentThread() == broker && uri.getPort() == port) {
                    throw new IllegalStateException("a proxy selector bug");
                }
                return prior == null ? List.of(Proxy.NO_PROXY) : prior.select(uri);
            }

            @Override
            public void connectFailed(URI uri, SocketAddress address, IOException e) {
                if (prior != null) {
                    prior.connectFailed(uri, address, e);
                }
            }
        });
        try {
            // the selector is asked when a socket connects (for a SOCKS proxy), not per request: no keep-alive
            // connection from start-up may carry the decision
            local.closeEachConnection();
            local.answer("/v1/status", 200, "{\"ready\":true,\"last_applied_offset\":1,\"acl_count\":1}");
            plugin = plugin(dir, local.url() + "," + other.url(), PluginConfig.CACHE_ENABLED, "false",
                    PluginConfig.TRANSPORT, transport);
            plugin.start(oneListener()).values().iterator().next().toCompletableFuture().get(20, TimeUnit.SECONDS);
            armed.set(true);
            assertEquals(ALLOWED, bob(), "the other serve answers");
            assertEquals(1, otherDecider.asked.get());
            assertEquals(0, localDecider.asked.get());
        } finally {
            armed.set(false);
            ProxySelector.setDefault(prior);
        }
    }

    /**
     * A probe that fails with a RuntimeException (here the JVM's ProxySelector throwing once on the probe thread, as
     * any bug or JDK surprise under it could) is logged and the probing goes on: the skipped serve is asked again once
     * it answers. Before, the probe thread ended and the serve stayed skipped for good (every decision DENIED).
     */
    @Test
    void aProbeFailingWithAnUnexpectedExceptionDoesNotEndTheProbing() throws Exception {
        ProxySelector prior = ProxySelector.getDefault();
        AtomicBoolean armed = new AtomicBoolean();
        AtomicBoolean thrown = new AtomicBoolean();
        ProxySelector.setDefault(new ProxySelector() {
            @Override
            public List<Proxy> select(URI uri) {
                if (Thread.currentThread().getName().equals("kraft-acl-probe") && armed.compareAndSet(true, false)) {
                    thrown.set(true);
                    throw new IllegalStateException("a proxy selector bug");
                }
                return prior == null ? List.of(Proxy.NO_PROXY) : prior.select(uri);
            }

            @Override
            public void connectFailed(URI uri, SocketAddress address, IOException e) {
                if (prior != null) {
                    prior.connectFailed(uri, address, e);
                }
            }
        });
        try {
            local.closeEachConnection(); // the selector is asked when a socket connects: each probe on a new one
            started(local.url());
            armed.set(true);
            localDecider.status = 503; // restarted and loading: skipped, and probed at once
            assertEquals(DENIED, bob());
            assertTrue(plugin.routes().isOpen(0));
            waitFor(thrown::get, "the probe met the exception");
            localDecider.status = 200;
            waitFor(() -> !plugin.routes().isOpen(0), "the probe goes on and finds serve answering");
            assertEquals(ALLOWED, bob());
            String warn = CapturedLogs.lines(HealthProbe.class.getName(), "WARN").get(0).message();
            assertTrue(warn.contains("a proxy selector bug") && warn.contains("probing goes on"), warn);
        } finally {
            ProxySelector.setDefault(prior);
        }
    }
}
