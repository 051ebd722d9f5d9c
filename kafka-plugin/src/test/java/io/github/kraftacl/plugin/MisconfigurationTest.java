package io.github.kraftacl.plugin;

import static io.github.kraftacl.plugin.TestPlugins.ctx;
import static io.github.kraftacl.plugin.TestPlugins.oneListener;
import static io.github.kraftacl.plugin.TestPlugins.plugin;
import static io.github.kraftacl.plugin.TestPlugins.read;
import static io.github.kraftacl.plugin.TestPlugins.waitFor;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.server.authorizer.AuthorizationResult;
import org.junit.jupiter.api.Test;

/** Permanent misconfigurations are an ERROR naming the cause and the fix at their first occurrence, then rate-limited. */
class MisconfigurationTest extends FakeServeTest {
    private static List<CapturedLogs.Line> errors() {
        return CapturedLogs.lines(MisconfigurationLog.class.getName(), "ERROR");
    }

    @Test
    void aTokenServeDoesNotKnowIsAnErrorAtStartUpOnceThenRateLimited() throws Exception {
        String unauthenticated = "{\"error\":{\"code\":\"UNAUTHENTICATED\",\"message\":\"unknown bearer token\"}}";
        serve.answer("/v1/status", 401, unauthenticated).answer("/v1/authorize", 401, unauthenticated);
        plugin = plugin(dir, serve.url());
        plugin.start(oneListener());
        waitFor(() -> serve.on("/v1/status").size() + serve.on("/v1/authorize").size() >= 5, "several attempts");
        assertEquals(1, errors().size(), "one ERROR, then rate-limited: " + errors());
        String message = errors().get(0).message();
        assertTrue(message.contains("answered /v1/status with HTTP 401 UNAUTHENTICATED: unknown bearer token"),
                message);
        assertTrue(message.contains("the token in kraft.acl.token.file=" + dir.resolve("token")
                + " is not in serve's auth.token.file"), message);
        assertEquals(List.of(AuthorizationResult.DENIED), plugin.authorize(ctx("bob"), List.of(read("a"))));
        assertEquals(1, errors().size());
    }

    @Test
    void aTokenRefusedAtTheUpgradeToFramesIsTheSameError() throws Exception {
        serve.answer(FrameClient.PATH, 401, "{\"error\":{\"code\":\"UNAUTHENTICATED\",\"message\":\"unknown "
                + "bearer token\"}}");
        plugin = plugin(dir, serve.url(), PluginConfig.CACHE_ENABLED, "false");
        assertEquals(List.of(AuthorizationResult.DENIED), plugin.authorize(ctx("bob"), List.of(read("a"))));
        assertTrue(plugin.routes().isOpen(0), "skipped, as a serve refusing the token over HTTP is");
        assertTrue(serve.on("/v1/authorize").stream().noneMatch(r -> r.body().contains("User:bob")),
                "not asked over HTTP instead");
        String message = errors().get(0).message();
        assertTrue(message.contains("HTTP 401 UNAUTHENTICATED: unknown bearer token") && message.contains(
                "the token in kraft.acl.token.file=" + dir.resolve("token")), message);
    }

    @Test
    void aPrincipalThatIsNotABrokerPrincipalIsAnError() throws Exception {
        serve.answer("/v1/authorize", 403, "{\"error\":{\"code\":\"AUTHORIZATION_FAILED\",\"message\":\"User:x may "
                + "ask decisions only about itself\"}}");
        plugin = plugin(dir, serve.url(), PluginConfig.CACHE_ENABLED, "false");
        assertEquals(List.of(AuthorizationResult.DENIED), plugin.authorize(ctx("bob"), List.of(read("a"))));
        String message = errors().get(0).message();
        assertTrue(message.contains("HTTP 403 AUTHORIZATION_FAILED") && message.contains("broker.principals"),
                message);
    }

    @Test
    void aTlsHandshakeFailureIsAnErrorNamingTheTrustStore() throws Exception {
        try (ServerSocket plain = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            Thread answers = new Thread(() -> { // a plain HTTP listener: the client's handshake reads no TLS
                while (!plain.isClosed()) {
                    try (Socket s = plain.accept()) {
                        s.getOutputStream().write("HTTP/1.1 400 Bad Request\r\n\r\n".getBytes(StandardCharsets.UTF_8));
                    } catch (IOException e) {
                        return;
                    }
                }
            });
            answers.setDaemon(true);
            answers.start();
            String https = "https://127.0.0.1:" + plain.getLocalPort();
            plugin = plugin(dir, https, PluginConfig.CACHE_ENABLED, "false");
            assertEquals(List.of(AuthorizationResult.DENIED), plugin.authorize(ctx("bob"), List.of(read("a"))));
            String message = errors().get(0).message();
            assertTrue(message.contains("the TLS handshake with " + https + " failed") && message.contains(
                    "kraft.acl.ssl.truststore"), message);
        }
    }

    @Test
    void aRelativeTokenFileThatDoesNotExistNamesTheWorkingDirectory() {
        ConfigException e = assertThrows(ConfigException.class, () -> new KraftAclAuthorizer().configure(Map.of(
                PluginConfig.URLS, serve.url(), PluginConfig.TOKEN_FILE, "examples/plugin/no-such.token")));
        assertTrue(e.getMessage().contains("resolved against the broker's working directory ("
                + Path.of("").toAbsolutePath() + ")"), e.getMessage());
    }

    @Test
    void anUnreadableTokenFileSaysSo() throws Exception {
        Path token = java.nio.file.Files.createDirectory(dir.resolve("token.d")); // unreadable as a file, even by root
        ConfigException e = assertThrows(ConfigException.class, () -> new KraftAclAuthorizer().configure(Map.of(
                PluginConfig.URLS, serve.url(), PluginConfig.TOKEN_FILE, token.toString())));
        assertTrue(e.getMessage().contains("cannot read the token file") && e.getMessage().contains(
                "the broker's user must be able to read it"), e.getMessage());
    }
}
