package io.github.kraftacl.plugin;

import static io.github.kraftacl.plugin.HostileHttp.send;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.server.authorizer.AuthorizationResult;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A hostile or broken serve (or a man in the middle on a plaintext link), over HTTP and over decision frames: whatever
 * it sends, a decision ends by its deadline, and without an answer the plugin can use it is a failure (denied), never
 * an ALLOW.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class HostileServeTest {
    private static final byte[] ALICE_READS_A = ("{\"principal\":\"User:alice\",\"client_address\":\"10.0.0.7\","
            + "\"actions\":[{\"operation\":\"READ\",\"resource_type\":\"TOPIC\",\"resource_name\":\"a\"}]}")
            .getBytes(StandardCharsets.UTF_8);
    private static final int TIMEOUT_MS = 500;
    private static final long BOUND_MS = 900;

    @TempDir
    Path dir;

    /** A decision over HTTP to this URL; fails unless it ends without an answer within BOUND_MS. */
    private static void unansweredInTime(String url, String... more) throws Exception {
        Map<String, Object> props = new java.util.HashMap<>(Map.of(PluginConfig.URLS, url, PluginConfig.TRANSPORT,
                "http"));
        for (int i = 0; i < more.length; i += 2) {
            props.put(more[i], more[i + 1]);
        }
        try (ServeClient client = new ServeClient(PluginConfig.parse(props))) {
            long start = System.nanoTime();
            assertThrows(ServeClient.UnavailableException.class,
                    () -> client.decide("/v1/authorize", ALICE_READS_A, TIMEOUT_MS));
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertTrue(ms < BOUND_MS, "a decision with a " + TIMEOUT_MS + " ms timeout ended after " + ms + " ms");
        }
    }

    /** A 200 whose chunked body never ends (a chunk now and then, each within the read timeout). */
    @Test
    void aChunkedBodyThatNeverEndsEndsByTheDeadline() throws Exception {
        try (HostileHttp serve = new HostileHttp(out -> {
            send(out, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n");
            for (int i = 0; i < 100; i++) {
                send(out, "1\r\n \r\n");
                Thread.sleep(200);
            }
        })) {
            unansweredInTime(serve.url());
        }
    }

    /**
     * The last chunk, then trailers that never end: one read() of the JDK's chunked decoder (HttpURLConnection) looped
     * on them with no bound; the plugin's own decoder is under the exchange's deadline.
     */
    @Test
    void endlessTrailersEndByTheDeadline() throws Exception {
        try (HostileHttp serve = new HostileHttp(HostileServeTest::endlessTrailers)) {
            unansweredInTime(serve.url());
        }
    }

    private static void endlessTrailers(java.io.OutputStream out) throws Exception {
        send(out, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n");
        for (int i = 0; i < 100; i++) {
            send(out, "X-A: b\r\n");
            Thread.sleep(200);
        }
    }

    /** A chunk-size line whose extension is trickled a byte at a time, each within the read timeout. */
    @Test
    void aTrickledChunkExtensionEndsByTheDeadline() throws Exception {
        try (HostileHttp serve = new HostileHttp(out -> {
            send(out, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1;");
            for (int i = 0; i < 100; i++) {
                send(out, "a");
                Thread.sleep(200);
            }
        })) {
            unansweredInTime(serve.url());
        }
    }

    /** The head just before the deadline, then a body that stalls: ends at the deadline, not one read timeout later. */
    @Test
    void aBodyStalledAfterALateHeadEndsByTheDeadline() throws Exception {
        try (HostileHttp serve = new HostileHttp(out -> {
            Thread.sleep(TIMEOUT_MS - 60);
            send(out, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n{");
            Thread.sleep(5000);
        })) {
            unansweredInTime(serve.url());
        }
    }

    /** Under the default frames transport, a serve answering the upgrade 404 is asked over HTTP: bounded there too. */
    @Test
    void endlessTrailersAfterAnUpgradeAnswered404EndByTheDeadline() throws Exception {
        java.util.concurrent.atomic.AtomicInteger connections = new java.util.concurrent.atomic.AtomicInteger();
        try (HostileHttp serve = new HostileHttp(out -> {
            if (connections.getAndIncrement() == 0) {
                send(out, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            } else {
                endlessTrailers(out);
            }
        })) {
            deniedInTime(serve.url());
            assertTrue(connections.get() >= 2, "the decision was not asked over HTTP");
        }
    }

    /** The change feed, the probe and ACL management go over the same exchange: each ends by its deadline. */
    @Test
    void theOtherCallsEndByTheirDeadlineToo() throws Exception {
        try (HostileHttp serve = new HostileHttp(HostileServeTest::endlessTrailers);
                ServeClient client = new ServeClient(PluginConfig.parse(Map.of(PluginConfig.URLS, serve.url())))) {
            for (java.util.concurrent.Callable<?> call : List.<java.util.concurrent.Callable<?>>of(
                    () -> client.send(0, "/v1/changes?after=0", null, TIMEOUT_MS),
                    () -> client.get("/v1/acls/count", TIMEOUT_MS),
                    () -> client.post("/v1/acls/create", new byte[] {'{', '}'}, TIMEOUT_MS, true))) {
                long start = System.nanoTime();
                assertThrows(Exception.class, call::call);
                long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
                assertTrue(ms < BOUND_MS, "a call with a " + TIMEOUT_MS + " ms timeout ended after " + ms + " ms");
            }
        }
    }

    /** A keep-alive connection serve closed after its answer: the next decision goes on a new one, answered. */
    @Test
    void aKeepAliveConnectionServeClosedIsReplaced() throws Exception {
        String allowed = "{\"decisions\":[{\"result\":\"ALLOWED\"}]}";
        try (HostileHttp serve = new HostileHttp(out -> send(out, "HTTP/1.1 200 OK\r\nContent-Type: application/json"
                + "\r\nContent-Length: " + allowed.length() + "\r\n\r\n" + allowed));
                ServeClient client = new ServeClient(PluginConfig.parse(Map.of(PluginConfig.URLS, serve.url(),
                        PluginConfig.TRANSPORT, "http")))) {
            for (int i = 0; i < 3; i++) {
                ServeClient.Reply reply = client.decide("/v1/authorize", ALICE_READS_A, TIMEOUT_MS);
                assertEquals(200, reply.status());
                assertEquals(allowed, new String(reply.body(), StandardCharsets.UTF_8));
                Thread.sleep(50); // serve's close arrives
            }
        }
    }

    /** An endless run of 100 Continue heads, one now and then. */
    @Test
    void aStormOf100ContinueEndsByTheDeadline() throws Exception {
        try (HostileHttp serve = new HostileHttp(out -> {
            for (int i = 0; i < 100; i++) {
                send(out, "HTTP/1.1 100 Continue\r\n\r\n");
                Thread.sleep(200);
            }
        })) {
            unansweredInTime(serve.url());
        }
    }

    /** A head trickled a byte at a time. */
    @Test
    void aTrickledHeadEndsByTheDeadline() throws Exception {
        try (HostileHttp serve = new HostileHttp(out -> {
            for (char c : "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}".toCharArray()) {
                send(out, String.valueOf(c));
                Thread.sleep(200);
            }
        })) {
            unansweredInTime(serve.url());
        }
    }

    /** A TLS handshake trickled a byte at a time (a ServerHello record that never ends) over HTTPS. */
    @Test
    void aTrickledTlsHandshakeEndsByTheDeadline() throws Exception {
        try (HostileHttp serve = HostileHttp.raw(out -> {
            out.write(new byte[] {0x16, 0x03, 0x03, 0x40, 0x00}); // a handshake record of 16 KiB
            for (int i = 0; i < 100; i++) {
                out.write(2);
                out.flush();
                Thread.sleep(200);
            }
        })) {
            unansweredInTime(serve.url().replace("http:", "https:"));
        }
    }

    /** A connect that does not complete ends by the decision's deadline, not kraft.acl.connect.timeout.ms. */
    @Test
    void aConnectEndsByTheDeadlineNotTheConnectTimeout() throws Exception {
        List<Socket> queued = new ArrayList<>();
        try (ServerSocket full = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            FrameClientTest.fillAcceptQueue(full, queued);
            unansweredInTime("http://127.0.0.1:" + full.getLocalPort(), PluginConfig.CONNECT_TIMEOUT_MS, "3000");
        } finally {
            for (Socket s : queued) {
                s.close();
            }
        }
    }

    private static final String ALLOWED_BODY = "{\"results\":[\"ALLOWED\"],\"offset\":1}";

    /** A decision over frames to this URL (cache off): DENIED, within BOUND_MS. */
    private void deniedInTime(String url) throws Exception {
        try (KraftAclAuthorizer plugin = TestPlugins.plugin(dir, url, PluginConfig.CACHE_ENABLED, "false")) {
            long start = System.nanoTime();
            assertEquals(List.of(AuthorizationResult.DENIED), plugin.authorize(TestPlugins.ctx("bob"),
                    List.of(TestPlugins.read("a"))));
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertTrue(ms < BOUND_MS, "a decision with a " + TIMEOUT_MS + " ms timeout ended after " + ms + " ms");
        }
    }

    /** Answers that carry only ids nobody asked for, again and again: the call times out, denied. */
    @Test
    void answerFramesWithWrongIdsOnly() throws Exception {
        try (HostileFrames serve = new HostileFrames((in, out) -> {
            while (true) {
                int id = HostileFrames.frameId(in);
                for (int i = 1; i <= 50; i++) {
                    out.write(HostileFrames.answer(id + i, 200, ALLOWED_BODY));
                    out.write(HostileFrames.answer(id - i, 200, ALLOWED_BODY));
                    out.flush();
                    Thread.sleep(20);
                }
            }
        })) {
            deniedInTime(serve.url());
        }
    }

    /** A status that is no HTTP status (0, 999, 65535) with an ALLOWED body: denied. */
    @ParameterizedTest
    @ValueSource(ints = {0, 99, 204, 299, 999, 65535})
    void answerFramesWithAStatusOutOfRange(int status) throws Exception {
        try (HostileFrames serve = new HostileFrames((in, out) -> {
            while (true) {
                out.write(HostileFrames.answer(HostileFrames.frameId(in), status, ALLOWED_BODY));
                out.flush();
            }
        })) {
            deniedInTime(serve.url());
        }
    }

    /** Half an answer frame, then the connection closed (every time): denied, within the timeout. */
    @Test
    void aTruncatedAnswerFrameThenClose() throws Exception {
        try (HostileFrames serve = new HostileFrames((in, out) -> {
            byte[] answer = HostileFrames.answer(HostileFrames.frameId(in), 200, ALLOWED_BODY);
            out.write(answer, 0, answer.length / 2);
            out.flush();
        })) {
            deniedInTime(serve.url());
        }
    }

    /** A declared length over the limit (and one below the header's 6 bytes): denied, the connection dropped. */
    @ParameterizedTest
    @ValueSource(ints = {Integer.MAX_VALUE, (1 << 28) + 1, -1, 5, 0})
    void answerFramesWithALengthOutOfRange(int length) throws Exception {
        try (HostileFrames serve = new HostileFrames((in, out) -> {
            while (true) {
                int id = HostileFrames.frameId(in);
                out.write(ByteBuffer.allocate(10).putInt(length).putInt(id).putShort((short) 200).array());
                out.flush();
            }
        })) {
            deniedInTime(serve.url());
        }
    }

    /** Answer frames of one action with the wrong count of results, or the wrong types: denied. */
    @ParameterizedTest
    @ValueSource(strings = {"{\"results\":[],\"offset\":1}", "{\"results\":[\"ALLOWED\",\"ALLOWED\"],\"offset\":1}",
        "{\"results\":[1],\"offset\":1}", "{\"results\":[\"ALLOWED\"],\"offset\":true}", "ALLOWED"})
    void answerFramesWithBodiesItCannotUse(String body) throws Exception {
        try (HostileFrames serve = new HostileFrames((in, out) -> {
            while (true) {
                out.write(HostileFrames.answer(HostileFrames.frameId(in), 200, body));
                out.flush();
            }
        })) {
            deniedInTime(serve.url());
        }
    }

    /**
     * The upgrade to frames answered with no 101 and no refusal (a 200 carrying an ALLOWED authorize answer, a 100
     * Continue, a 3xx): no decision, denied. Before, the 200's body was taken for the decision's answer (ALLOWED).
     */
    @ParameterizedTest
    @ValueSource(strings = {"200 OK", "204 No Content", "100 Continue", "302 Found"})
    void anUpgradeAnsweredWithNeither101NorARefusal(String status) throws Exception {
        try (HostileHttp serve = new HostileHttp(out -> send(out, "HTTP/1.1 " + status + "\r\nContent-Length: "
                + ALLOWED_BODY.length() + "\r\n\r\n" + ALLOWED_BODY))) {
            deniedInTime(serve.url());
        }
    }

    /**
     * A decision answered with a redirect (to a host answering ALLOWED to anything) is not followed: denied, and the
     * token goes nowhere else. Before, the JDK followed it (as a GET, with the Authorization header) and the other
     * host's body was taken for the decision.
     */
    @ParameterizedTest
    @ValueSource(strings = {"301 Moved Permanently", "302 Found", "303 See Other", "307 Temporary Redirect"})
    void aRedirectIsNotFollowed(String status) throws Exception {
        java.util.concurrent.atomic.AtomicInteger followed = new java.util.concurrent.atomic.AtomicInteger();
        try (HostileHttp elsewhere = new HostileHttp(out -> {
            followed.incrementAndGet();
            send(out, "HTTP/1.1 200 OK\r\nContent-Length: " + ALLOWED_BODY.length() + "\r\n\r\n" + ALLOWED_BODY);
        });
                HostileHttp serve = new HostileHttp(out -> send(out, "HTTP/1.1 " + status + "\r\nLocation: "
                        + elsewhere.url() + "/v1/authorize\r\nContent-Length: 0\r\n\r\n"))) {
            try (KraftAclAuthorizer plugin = TestPlugins.plugin(dir, serve.url(), PluginConfig.CACHE_ENABLED, "false",
                    PluginConfig.TRANSPORT, "http")) {
                assertEquals(List.of(AuthorizationResult.DENIED), plugin.authorize(TestPlugins.ctx("bob"),
                        List.of(TestPlugins.read("a"))));
            }
            assertEquals(0, followed.get(), "the redirect was followed: " + elsewhere.heads);
        }
    }
}
