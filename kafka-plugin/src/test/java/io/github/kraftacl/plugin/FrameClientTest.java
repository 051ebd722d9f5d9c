package io.github.kraftacl.plugin;

import static io.github.kraftacl.plugin.TestPlugins.TOKEN;
import static io.github.kraftacl.plugin.TestPlugins.ctx;
import static io.github.kraftacl.plugin.TestPlugins.plugin;
import static io.github.kraftacl.plugin.TestPlugins.read;
import static io.github.kraftacl.plugin.TestPlugins.waitFor;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.server.authorizer.Action;
import org.apache.kafka.server.authorizer.AuthorizationResult;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Decisions over serve's decision frames: one connection per serve shared by every thread (answers matched by id, out
 * of order), the fallback to HTTP, timeouts, and failing connections.
 */
class FrameClientTest extends FakeServeTest {
    private static final AuthorizationResult ALLOWED = AuthorizationResult.ALLOWED;
    private static final AuthorizationResult DENIED = AuthorizationResult.DENIED;
    private static final byte[] ALICE_READS_A = aliceReads("a");
    private static final byte[] ALICE_READS_B = aliceReads("b");
    private static final String ALLOWED_BODY = "{\"results\":[\"ALLOWED\"],\"offset\":0}";

    private final FakeDecider decider = new FakeDecider();
    private FakeFrames frames;

    @BeforeEach
    void startFakeFrames() throws IOException {
        decider.allowed.add("a");
        frames = new FakeFrames(this::answer);
    }

    @AfterEach
    void stopFakeFrames() throws IOException {
        frames.close();
    }

    /** FakeDecider's decisions; every authorizeByResourceType ALLOWED. */
    private FakeServe.Answer answer(FakeServe.Received r) {
        return r.path().equals("/v1/authorize-by-resource-type")
                ? new FakeServe.Answer(200, "{\"result\":\"ALLOWED\",\"offset\":1}", 0) : decider.apply(r);
    }

    /** A FrameClient of the plugin's configuration for this one URL. */
    private static FrameClient client(String url) {
        PluginConfig config = PluginConfig.parse(Map.of(PluginConfig.URLS, url));
        return new FrameClient(new ServeRoutes(config.urls, 500), config);
    }

    /** A FrameClient for this URL, trusting the certificate of {@link FakeFrames#tls} in this directory. */
    private FrameClient client(String url, boolean tls) {
        if (!tls) {
            return client(url);
        }
        PluginConfig config = PluginConfig.parse(Map.of(PluginConfig.URLS, url,
                PluginConfig.SSL_PREFIX + "truststore.location", dir.resolve("frames.p12").toString(),
                PluginConfig.SSL_PREFIX + "truststore.type", "PKCS12",
                PluginConfig.SSL_PREFIX + "truststore.password", FakeFrames.TLS_PASSWORD));
        return new FrameClient(new ServeRoutes(config.urls, 500), config);
    }

    private static byte[] aliceReads(String topic) {
        return ("{\"principal\":\"User:alice\",\"client_address\":\"10.0.0.7\",\"actions\":[{\"operation\":\"READ\","
                + "\"resource_type\":\"TOPIC\",\"resource_name\":\"" + topic + "\"}]}").getBytes(StandardCharsets.UTF_8);
    }

    private static String body(ServeClient.Reply reply) {
        return new String(reply.body(), StandardCharsets.UTF_8);
    }

    /**
     * A connect that does not complete (a peer whose accept queue is full drops the SYN) ends by the decision's own
     * deadline, whatever {@code kraft.acl.connect.timeout.ms} says: before, it took the whole connect timeout (3 s
     * here) on top of a 500 ms request timeout.
     */
    @Test
    @Timeout(value = 20, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void aConnectEndsByTheDecisionsDeadlineNotTheConnectTimeout() throws Exception {
        List<Socket> queued = new ArrayList<>();
        try (ServerSocket full = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            fillAcceptQueue(full, queued);
            String url = "http://127.0.0.1:" + full.getLocalPort();
            PluginConfig config = PluginConfig.parse(Map.of(PluginConfig.URLS, url, PluginConfig.CONNECT_TIMEOUT_MS,
                    "3000"));
            try (FrameClient client = new FrameClient(new ServeRoutes(config.urls, 500), config)) {
                long start = System.nanoTime();
                assertThrows(SocketTimeoutException.class, () -> client.decide(0, "/v1/authorize", ALICE_READS_A,
                        500));
                long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
                assertTrue(ms < 900, "the decision with a 500 ms timeout ended after " + ms + " ms");
            }
        } finally {
            for (Socket s : queued) {
                s.close();
            }
        }
    }

    /** Connect to this listener (which never accepts) until a connect no longer completes. */
    static void fillAcceptQueue(ServerSocket full, List<Socket> queued) throws IOException {
        for (int i = 0; i < 64; i++) {
            Socket s = new Socket();
            try {
                s.connect(full.getLocalSocketAddress(), 200);
            } catch (SocketTimeoutException e) {
                s.close();
                return;
            }
            queued.add(s);
        }
        throw new AssertionError("every connect completed: the accept queue never filled");
    }

    @Test
    void decisionsGoOverFramesOnOneSharedConnection() throws Exception {
        plugin = plugin(dir, frames.url(), PluginConfig.CACHE_ENABLED, "false");
        assertEquals(List.of(ALLOWED, DENIED), plugin.authorize(ctx("alice"), List.of(read("a"), read("b"))));
        assertEquals(List.of(ALLOWED), plugin.authorize(ctx("alice"), List.of(read("a"))));
        assertEquals(ALLOWED, plugin.authorizeByResourceType(ctx("alice"), AclOperation.WRITE, ResourceType.TOPIC));
        assertEquals(2, frames.on("/v1/authorize").size(), "kind 1");
        assertEquals(1, frames.on("/v1/authorize-by-resource-type").size(), "kind 2");
        assertEquals(1, frames.upgrades.get(), "one connection, kept between calls");
        FakeServe.Received first = frames.on("/v1/authorize").get(0);
        assertEquals("Bearer " + TOKEN, first.authorization());
        assertTrue(first.body().startsWith("{\"principal\":\"User:alice\",\"client_address\":\"10.0.0.7\""),
                "the HTTP endpoint's JSON body: " + first.body());
        plugin.close();
        waitFor(() -> frames.ended.get() == 1, "closing the plugin closes its connection");
    }

    @ParameterizedTest
    @ValueSource(ints = {404, 405, 400})
    void aServeWithoutFramesIsAskedOverHttpFromThenOn(int status) throws Exception {
        serve.answer(FrameClient.PATH, status, "{\"error\":{\"code\":\"NOT_FOUND\",\"message\":\"no\"}}");
        serve.answer("/v1/authorize", decider);
        plugin = plugin(dir, serve.url(), PluginConfig.CACHE_ENABLED, "false");
        for (int i = 0; i < 3; i++) {
            assertEquals(List.of(ALLOWED, DENIED), plugin.authorize(ctx("alice"), List.of(read("a"), read("b"))));
        }
        assertEquals(1, serve.on(FrameClient.PATH).size(), "the upgrade is tried once");
        assertEquals("Bearer " + TOKEN, serve.on(FrameClient.PATH).get(0).authorization());
        assertEquals(3, serve.on("/v1/authorize").size());
        List<CapturedLogs.Line> info = CapturedLogs.lines(FrameClient.class.getName(), "INFO");
        assertEquals(1, info.size(), info.toString());
        assertTrue(info.get(0).message().contains("with HTTP " + status + " (a serve without them): decisions go to "
                + "it over HTTP"), info.get(0).message());
    }

    @Test
    void transportHttpNeverAsksForFrames() throws Exception {
        serve.answer("/v1/authorize", decider);
        plugin = plugin(dir, serve.url(), PluginConfig.CACHE_ENABLED, "false", PluginConfig.TRANSPORT, "http");
        assertEquals(List.of(ALLOWED), plugin.authorize(ctx("alice"), List.of(read("a"))));
        assertTrue(serve.on(FrameClient.PATH).isEmpty());
        assertEquals(1, serve.on("/v1/authorize").size());
    }

    @Test
    void aConnectionServeClosedIsReplacedOnce() throws Exception {
        frames.closeAfterAnswer = true;
        plugin = plugin(dir, frames.url(), PluginConfig.CACHE_ENABLED, "false");
        for (int i = 0; i < 3; i++) {
            assertEquals(List.of(ALLOWED), plugin.authorize(ctx("alice"), List.of(read("a"))));
        }
        assertEquals(3, frames.upgrades.get());
        assertEquals(3, frames.received.size());
        assertFalse(plugin.routes().isOpen(0));
    }

    @Test
    void aReadTimeoutIsNeverRetriedAndTheLateAnswerIsDroppedOnTheSameConnection() throws Exception {
        try (FrameClient client = client(frames.url())) {
            assertEquals(200, client.decide(0, "/v1/authorize", ALICE_READS_A, 2000).status());
            frames.delayMs = 500;
            frames.delayed.set(1);
            assertThrows(SocketTimeoutException.class, () -> client.decide(0, "/v1/authorize", ALICE_READS_B, 200),
                    "a timeout is not retried");
            assertEquals(2, frames.received.size());
            waitFor(() -> frames.answered.get() == 2, "the late answer was sent");
            ServeClient.Reply reply = client.decide(0, "/v1/authorize", ALICE_READS_A, 2000);
            assertEquals(ALLOWED_BODY, body(reply), "its own answer, not the late DENIED one");
            assertEquals(1, frames.upgrades.get(), "the connection stays in use");
        }
    }

    @Test
    void aServeThatTimesOutIsSkippedForTheNext() throws Exception {
        try (FakeFrames slow = new FakeFrames(this::answer)) {
            slow.delayMs = 2000;
            slow.delayed.set(100);
            plugin = plugin(dir, slow.url() + "," + frames.url(), PluginConfig.CACHE_ENABLED, "false");
            assertEquals(List.of(ALLOWED), plugin.authorize(ctx("alice"), List.of(read("a"))));
            assertTrue(plugin.routes().isOpen(0), "skipped from now on, as after an HTTP read timeout");
            assertEquals(1, frames.received.size());
        }
    }

    @Test
    void anAnswerWithAnUnknownIdIsDroppedButAFrameTooShortBreaksTheConnection() throws Exception {
        try (FrameClient client = client(frames.url())) {
            frames.strays.set(1);
            assertEquals(ALLOWED_BODY, body(client.decide(0, "/v1/authorize", ALICE_READS_A, 2000)));
            assertEquals(1, frames.upgrades.get(), "an answer nobody waits for is dropped, not an error");
            frames.shortFrames.set(1);
            IOException e = assertThrows(IOException.class, () -> client.decide(0, "/v1/authorize", ALICE_READS_A,
                    2000));
            assertTrue(e.getMessage().contains(frames.url() + " sent a decision frame of length 5 (expected 6 to "),
                    e.getMessage());
            assertEquals(2, frames.received.size(), "a malformed frame is never resent");
            assertEquals(ALLOWED_BODY, body(client.decide(0, "/v1/authorize", ALICE_READS_A, 2000)));
            assertEquals(2, frames.upgrades.get(), "a new connection after the broken one");
        }
    }

    @Test
    void everyThreadGetsItsOwnAnswerOverOneConnection() throws Exception {
        try (FakeFrames echo = new FakeFrames(r -> new FakeServe.Answer(200, r.body(), 0));
                FrameClient client = client(echo.url())) {
            echo.reverse = true;
            echo.holdMicros = 200;
            int threads = 16;
            int calls = 500;
            List<String> wrong = new CopyOnWriteArrayList<>();
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            try {
                List<Future<?>> done = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    int thread = t;
                    done.add(pool.submit(() -> {
                        for (int i = 0; i < calls; i++) {
                            String asked = "{\"thread\":" + thread + ",\"call\":" + i + "}";
                            ServeClient.Reply reply = client.decide(0, "/v1/authorize",
                                    asked.getBytes(StandardCharsets.UTF_8), 10_000);
                            if (reply.status() != 200 || !body(reply).equals(asked)) {
                                wrong.add(asked + " -> " + reply.status() + " " + body(reply));
                            }
                        }
                        return null;
                    }));
                }
                for (Future<?> f : done) {
                    f.get(60, TimeUnit.SECONDS);
                }
            } finally {
                pool.shutdownNow();
            }
            assertEquals(List.of(), wrong);
            assertEquals(threads * calls, echo.received.size());
            assertEquals(1, echo.upgrades.get(), "every thread on the one connection");
            assertTrue(echo.reordered.get() > 0, "some answers came out of order");
        }
    }

    @Test
    void aCallTimingOutLeavesTheConcurrentCallsOnItsConnectionAnswered() throws Exception {
        try (FrameClient client = client(frames.url())) {
            assertEquals(200, client.decide(0, "/v1/authorize", ALICE_READS_A, 2000).status());
            frames.delayMs = 700;
            frames.delayed.set(1);
            ExecutorService pool = Executors.newFixedThreadPool(5);
            try {
                Future<ServeClient.Reply> late = pool.submit(() -> client.decide(0, "/v1/authorize", ALICE_READS_B,
                        300));
                waitFor(() -> frames.received.size() == 2, "the call to time out was sent");
                List<Future<ServeClient.Reply>> others = new ArrayList<>();
                for (int t = 0; t < 4; t++) {
                    others.add(pool.submit(() -> {
                        ServeClient.Reply r = null;
                        for (int i = 0; i < 20; i++) {
                            r = client.decide(0, "/v1/authorize", ALICE_READS_A, 5000);
                            Thread.sleep(20); // calls before, during and after the other's timeout
                        }
                        return r;
                    }));
                }
                ExecutionException e = assertThrows(ExecutionException.class, () -> late.get(10, TimeUnit.SECONDS));
                assertTrue(e.getCause() instanceof SocketTimeoutException, e.getCause().toString());
                for (Future<ServeClient.Reply> f : others) {
                    assertEquals(ALLOWED_BODY, body(f.get(10, TimeUnit.SECONDS)));
                }
            } finally {
                pool.shutdownNow();
            }
            waitFor(() -> frames.answered.get() == 82, "the late answer was sent");
            assertEquals(ALLOWED_BODY, body(client.decide(0, "/v1/authorize", ALICE_READS_A, 2000)));
            assertEquals(1, frames.upgrades.get(), "the late answer was dropped; the connection stayed");
        }
    }

    @Test
    void callsWaitingWhenServeClosesTheConnectionAreResentOnceOnANewOne() throws Exception {
        try (FrameClient client = client(frames.url())) {
            assertEquals(200, client.decide(0, "/v1/authorize", ALICE_READS_A, 2000).status());
            frames.mute = true;
            ExecutorService pool = Executors.newFixedThreadPool(8);
            try {
                List<Future<ServeClient.Reply>> waiting = new ArrayList<>();
                for (int t = 0; t < 8; t++) {
                    waiting.add(pool.submit(() -> client.decide(0, "/v1/authorize", ALICE_READS_A, 10_000)));
                }
                waitFor(() -> frames.received.size() == 9, "8 calls wait for their answers");
                frames.mute = false;
                frames.dropConnections();
                for (Future<ServeClient.Reply> f : waiting) {
                    assertEquals(ALLOWED_BODY, body(f.get(10, TimeUnit.SECONDS)));
                }
            } finally {
                pool.shutdownNow();
            }
            assertEquals(2, frames.upgrades.get(), "one new connection for the 8 resent calls");
            assertEquals(17, frames.received.size(), "each resent once");
        }
    }

    @Test
    void aFreshConnectionServeClosesIsNotResentButFailsOver() throws Exception {
        try (FakeFrames closing = new FakeFrames(this::answer)) {
            closing.closeOnFrame.set(1);
            plugin = plugin(dir, closing.url() + "," + frames.url(), PluginConfig.CACHE_ENABLED, "false");
            assertEquals(List.of(ALLOWED), plugin.authorize(ctx("alice"), List.of(read("a"))));
            assertEquals(1, closing.received.size(), "a new connection that breaks is not resent");
            assertTrue(plugin.routes().isOpen(0), "skipped from now on");
            assertEquals(1, frames.received.size());
        }
    }

    @ParameterizedTest
    @CsvSource({"413, INVALID_REQUEST, ''", "413, TOO_LARGE, ',\"field\":\"length\"'",
            "400, INVALID_REQUEST, ',\"field\":\"length\"'"})
    void aFramingErrorAnswerEndsItsConnection(int status, String code, String field) throws Exception {
        String error = "{\"error\":{\"code\":\"" + code + "\",\"message\":\"frame length\"" + field + "}}";
        try (FakeFrames limited = new FakeFrames(r -> r.body().contains("\"b\"")
                ? new FakeServe.Answer(status, error, 0) : answer(r));
                FrameClient client = client(limited.url())) {
            ServeClient.Reply refused = client.decide(0, "/v1/authorize", ALICE_READS_B, 2000);
            assertEquals(status, refused.status());
            assertEquals(error, body(refused), "the caller gets serve's answer");
            waitFor(() -> limited.ended.get() == 1, "the plugin closed the connection serve closes after a " + status
                    + " about the frame's length");
            assertEquals(ALLOWED_BODY, body(client.decide(0, "/v1/authorize", ALICE_READS_A, 2000)));
            assertEquals(2, limited.upgrades.get());
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"kind", "actions[0].operation", ""})
    void a400AboutAnotherFieldEndsOnlyItsCall(String field) throws Exception {
        String error = "{\"error\":{\"code\":\"INVALID_REQUEST\",\"message\":\"bad\""
                + (field.isEmpty() ? "" : ",\"field\":\"" + field + "\"") + "}}";
        try (FakeFrames picky = new FakeFrames(r -> r.body().contains("\"b\"")
                ? new FakeServe.Answer(400, error, 0) : answer(r));
                FrameClient client = client(picky.url())) {
            assertEquals(ALLOWED_BODY, body(client.decide(0, "/v1/authorize", ALICE_READS_A, 2000)));
            ServeClient.Reply refused = client.decide(0, "/v1/authorize", ALICE_READS_B, 2000);
            assertEquals(400, refused.status());
            assertEquals(error, body(refused), "the caller gets serve's answer");
            assertEquals(ALLOWED_BODY, body(client.decide(0, "/v1/authorize", ALICE_READS_A, 2000)));
            assertEquals(1, picky.upgrades.get(), "serve keeps the connection after such a 400: so does the plugin");
            assertEquals(0, picky.ended.get());
            assertEquals(3, picky.received.size());
        }
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    @Timeout(value = 20, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD) // no hang in CI
    void writesToAServeThatStopsReadingFailWithinTheTimeoutAndTheNextCallReconnects(boolean tls) throws Exception {
        int timeoutMs = 500;
        int threads = 8;
        byte[] large = new byte[4 << 20]; // 8 x 4 MiB: more than the socket buffers take
        Arrays.fill(large, (byte) ' ');
        try (FakeFrames deaf = new FakeFrames(this::answer, tls ? FakeFrames.tls(dir) : null);
                FrameClient client = client(deaf.url(), tls)) {
            deaf.deaf.set(1000); // every connection: upgraded, then never read
            record Failed(long ms, IOException error) {}
            List<Failed> failed = new ArrayList<>();
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            try {
                List<Future<Failed>> calls = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    calls.add(pool.submit(() -> {
                        long start = System.nanoTime();
                        IOException e = assertThrows(IOException.class, () -> client.decide(0, "/v1/authorize", large,
                                timeoutMs));
                        return new Failed(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start), e);
                    }));
                }
                for (Future<Failed> call : calls) {
                    failed.add(call.get());
                }
            } finally {
                pool.shutdownNow();
            }
            for (Failed f : failed) {
                assertTrue(f.ms < timeoutMs + 1500, "a call failed after " + f.ms + " ms (timeout " + timeoutMs
                        + " ms): " + f.error);
            }
            assertTrue(failed.stream().anyMatch(f -> f.error.getMessage().contains(" timed out on the decision-frames "
                    + "connection: SocketTimeoutException a decision frame's write did not end within 500 ms")),
                    "a write blocked until its deadline broke the connection: " + failed);
            int upgrades = deaf.upgrades.get();
            deaf.deaf.set(0);
            assertEquals(ALLOWED_BODY, body(client.decide(0, "/v1/authorize", ALICE_READS_A, 5000)));
            assertEquals(upgrades + 1, deaf.upgrades.get(), "the next call opens a new connection");
        }
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    @Timeout(value = 20, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void closingTheClientEndsAWriteBlockedOnAServeThatStopsReading(boolean tls) throws Exception {
        byte[] large = new byte[32 << 20];
        Arrays.fill(large, (byte) ' ');
        try (FakeFrames deaf = new FakeFrames(this::answer, tls ? FakeFrames.tls(dir) : null)) {
            deaf.deaf.set(1);
            FrameClient client = client(deaf.url(), tls);
            ExecutorService pool = Executors.newSingleThreadExecutor();
            try {
                Future<ServeClient.Reply> writing = pool.submit(() -> client.decide(0, "/v1/authorize", large,
                        15_000));
                waitFor(() -> deaf.upgrades.get() == 1, "the connection is upgraded");
                Thread.sleep(300); // the write fills the socket buffers and blocks
                client.close(); // under TLS, closing the SSLSocket would wait for the blocked write
                ExecutionException e = assertThrows(ExecutionException.class, () -> writing.get(5, TimeUnit.SECONDS));
                assertTrue(e.getCause() instanceof IOException && e.getCause().getMessage().contains("closed"),
                        e.getCause().toString());
            } finally {
                pool.shutdownNow();
            }
        }
    }

    @Test
    @Timeout(value = 20, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void aServeThatStopsReadingIsSkippedForTheNextWithinTheTimeout() throws Exception {
        try (FakeFrames deaf = new FakeFrames(this::answer)) {
            deaf.deaf.set(1000);
            plugin = plugin(dir, deaf.url() + "," + frames.url(), PluginConfig.CACHE_ENABLED, "false");
            List<Action> actions = new ArrayList<>();
            String name = "a".repeat(200);
            for (int i = 0; i < 40_000; i++) { // one request of 40,000 actions: a frame of about 12 MB
                actions.add(new Action(AclOperation.READ, new ResourcePattern(ResourceType.TOPIC, name + i,
                        PatternType.LITERAL), 1, false, false));
            }
            long start = System.nanoTime();
            List<AuthorizationResult> results = plugin.authorize(ctx("alice"), actions);
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertEquals(actions.size(), results.size());
            assertTrue(ms < 500 + 2500, "answered by the next serve after " + ms + " ms (request timeout 500 ms)");
            assertTrue(plugin.routes().isOpen(0), "skipped from now on, as after a read timeout");
            assertEquals(1, frames.received.size());
        }
    }

    @Test
    void closingTheClientFailsTheCallsWaiting() throws Exception {
        FrameClient client = client(frames.url());
        frames.mute = true;
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            Future<ServeClient.Reply> waiting = pool.submit(() -> client.decide(0, "/v1/authorize", ALICE_READS_A,
                    10_000));
            waitFor(() -> frames.received.size() == 1, "a call waits for its answer");
            client.close();
            ExecutionException e = assertThrows(ExecutionException.class, () -> waiting.get(5, TimeUnit.SECONDS));
            assertTrue(e.getCause() instanceof IOException && e.getCause().getMessage().contains("closed"),
                    e.getCause().toString());
            assertEquals(1, frames.received.size(), "not resent");
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void anInterruptedCallEndsAndTheConnectionStaysInUse() throws Exception {
        try (FrameClient client = client(frames.url())) {
            assertEquals(200, client.decide(0, "/v1/authorize", ALICE_READS_A, 2000).status());
            frames.delayMs = 300;
            frames.delayed.set(1);
            ExecutorService pool = Executors.newSingleThreadExecutor();
            try {
                Future<ServeClient.Reply> waiting = pool.submit(() -> client.decide(0, "/v1/authorize", ALICE_READS_B,
                        10_000));
                waitFor(() -> frames.received.size() == 2, "a call waits for its answer");
                waiting.cancel(true);
                pool.shutdown();
                assertTrue(pool.awaitTermination(5, TimeUnit.SECONDS), "the interrupted call ended");
            } finally {
                pool.shutdownNow();
            }
            waitFor(() -> frames.answered.get() == 2, "the late answer was sent");
            assertEquals(ALLOWED_BODY, body(client.decide(0, "/v1/authorize", ALICE_READS_A, 2000)));
            assertEquals(1, frames.upgrades.get());
        }
    }

    /**
     * A peer that accepts and then sends one byte every 100 ms, never a whole answer: over TCP the head of an upgrade
     * answer, over TLS a handshake record of 16 KiB. Every read returns within the read timeout, so only the
     * watchdog ends the call, at its deadline.
     */
    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    @Timeout(value = 20, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void aPeerTricklingTheHandshakeOrUpgradeIsCutAtTheCallsDeadline(boolean tls) throws Exception {
        if (tls) {
            FakeFrames.tls(dir); // the truststore the client is given; the peer below never uses it
        }
        byte[] trickle = tls ? new byte[] {0x16, 0x03, 0x03, 0x40, 0x00, 0x02, 0x00}
                : "HTTP/1.1 101 Switching Protocols\r\nUpgrade: kraft-acl-frames/1\r\nX-Slow: ".getBytes(
                        StandardCharsets.US_ASCII);
        int timeoutMs = 500;
        try (ServerSocket peer = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Thread sender = new Thread(() -> {
                try (Socket s = peer.accept()) {
                    for (int i = 0; i < 300; i++) { // 30 s at most
                        s.getOutputStream().write(trickle[Math.min(i, trickle.length - 1)]);
                        s.getOutputStream().flush();
                        Thread.sleep(100);
                    }
                } catch (IOException | InterruptedException e) {
                    // the client closed the connection: the end of the test
                }
            }, "trickling-peer");
            sender.setDaemon(true);
            sender.start();
            String url = (tls ? "https" : "http") + "://127.0.0.1:" + peer.getLocalPort();
            try (FrameClient client = client(url, tls)) {
                long start = System.nanoTime();
                SocketTimeoutException e = assertThrows(SocketTimeoutException.class,
                        () -> client.decide(0, "/v1/authorize", ALICE_READS_A, timeoutMs));
                long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
                assertTrue(ms < timeoutMs + 1500, "the call ended after " + ms + " ms (timeout " + timeoutMs + ")");
                assertTrue(e.getMessage().contains("did not end within the call's 500 ms"), e.toString());
            }
            sender.join(5000);
            assertFalse(sender.isAlive(), "the client closed the trickled connection");
        }
    }

    /**
     * A peer answering the upgrade with an empty head (a blank line, no status line) once made the upgrade throw an
     * ArrayIndexOutOfBoundsException out of authorize() (Kafka answers UNKNOWN_SERVER_ERROR, and the serve was not
     * skipped): it is an IOException like any other failure to reach a serve, so the decision goes on to the next
     * serve and that one is skipped, or, with no other, the actions are DENIED (fail closed).
     */
    @Test
    @Timeout(value = 20, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void anUpgradeAnsweredWithAnEmptyHeadFailsOverAndIsNeverAnException() throws Exception {
        try (ServerSocket peer = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            Thread answering = new Thread(() -> {
                while (!peer.isClosed()) {
                    Socket accepted;
                    try {
                        accepted = peer.accept();
                    } catch (IOException e) {
                        return; // closed: the end of the test
                    }
                    // each connection on its own thread: one the client keeps open (a probe's) holds no other back
                    Thread one = new Thread(() -> {
                        try (Socket s = accepted) {
                            byte[] request = new byte[4096];
                            int n = 0;
                            while (n < 4
                                    || !new String(request, 0, n, StandardCharsets.US_ASCII).contains("\r\n\r\n")) {
                                int read = s.getInputStream().read(request, n, request.length - n);
                                if (read < 0) {
                                    break;
                                }
                                n += read;
                            }
                            s.getOutputStream().write("\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                            s.getOutputStream().flush();
                            s.getInputStream().read(); // until the client closes it
                        } catch (IOException e) {
                            // the client reset it
                        }
                    }, "empty-head-answer");
                    one.setDaemon(true);
                    one.start();
                }
            }, "empty-head-peer");
            answering.setDaemon(true);
            answering.start();
            String url = "http://127.0.0.1:" + peer.getLocalPort();
            plugin = plugin(dir, url + "," + frames.url(), PluginConfig.CACHE_ENABLED, "false");
            assertEquals(List.of(ALLOWED), plugin.authorize(ctx("alice"), List.of(read("a"))));
            assertTrue(plugin.routes().isOpen(0), "skipped from now on");
            assertTrue(plugin.routes().why(0).contains("no HTTP status line"), plugin.routes().why(0));
            assertEquals(1, frames.received.size(), "the next serve answered");
            plugin.close();
            plugin = plugin(dir, url, PluginConfig.CACHE_ENABLED, "false");
            assertEquals(List.of(DENIED), plugin.authorize(ctx("alice"), List.of(read("a"))), "fail closed");
            try (FrameClient client = client(url)) {
                IOException e = assertThrows(IOException.class,
                        () -> client.decide(0, "/v1/authorize", ALICE_READS_A, 500));
                assertTrue(e.getMessage().contains("no HTTP status line"), e.toString());
            }
        }
    }
}
