package io.github.kraftacl.plugin;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.MalformedURLException;
import java.net.URI;
import java.net.URL;
import java.util.ArrayList;
import java.util.List;
import javax.net.ssl.HttpsURLConnection;
import javax.net.ssl.SSLSocketFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * HTTP calls to kraft-acl serve with failover: each call starts at the serve that answered last and tries the
 * others in the order of {@code kraft.acl.urls}.
 *
 * <p>Thread-safe: any number of broker threads call it at once. The transport is the JDK's
 * {@link HttpURLConnection} with its keep-alive connection pool. It was chosen by measured latency: a one-action
 * authorize round trip took 247-287 us at p50 on the development machine, against 366-453 us for
 * {@code java.net.http.HttpClient} (BENCHMARKS.md, "The Kafka broker plugin"). Decisions are sent buffered (one
 * write; the JDK may resend such a request once on a stale keep-alive connection, which is harmless for a
 * decision); ACL writes use fixed-length streaming, which the JDK never resends.
 */
final class ServeClient {
    private static final Logger LOG = LoggerFactory.getLogger(ServeClient.class);

    /** One HTTP answer and the serve that gave it. */
    record Reply(int status, byte[] body, URI server) {}

    /** No serve answered: every URL refused, reset or timed out. The message names each URL's failure. */
    static final class UnavailableException extends Exception {
        private static final long serialVersionUID = 1L;

        UnavailableException(String message) {
            super(message);
        }
    }

    private final List<URI> urls;
    private final String authorization; // null without a token
    private final int connectTimeoutMs;
    private final SSLSocketFactory sockets; // null without TLS
    private final boolean verifyHostname;
    private volatile int current;

    ServeClient(PluginConfig config) {
        this.urls = config.urls;
        this.authorization = config.token.map(t -> "Bearer " + t).orElse(null);
        this.connectTimeoutMs = config.connectTimeoutMs;
        this.sockets = config.sslContext == null ? null : config.sslContext.getSocketFactory();
        this.verifyHostname = config.verifyHostname;
    }

    /** GET path. */
    Reply get(String path, int timeoutMs) throws UnavailableException {
        return call(path, null, timeoutMs, false);
    }

    /**
     * POST a JSON body. {@code once}: never let the JDK resend it (ACL writes). A serve that answers 503 (not
     * ready) or 421 (not the controller) is passed over for the next one; if none does better, its answer is
     * returned.
     */
    Reply post(String path, byte[] body, int timeoutMs, boolean once) throws UnavailableException {
        return call(path, body, timeoutMs, once);
    }

    /** The serve URLs, for messages. */
    List<URI> urls() {
        return urls;
    }

    private Reply call(String path, byte[] body, int timeoutMs, boolean once) throws UnavailableException {
        int start = current;
        int n = urls.size();
        Reply passedOver = null;
        List<String> failures = null;
        for (int i = 0; i < n; i++) {
            int index = (start + i) % n;
            URI server = urls.get(index);
            Reply reply;
            try {
                reply = exchange(server, path, body, timeoutMs, once);
            } catch (IOException e) {
                if (failures == null) {
                    failures = new ArrayList<>(n);
                }
                failures.add(server + ": " + describe(e));
                continue;
            }
            if ((reply.status == 503 || reply.status == 421) && i + 1 < n) {
                passedOver = passedOver == null ? reply : passedOver;
                continue;
            }
            if (index != current && reply.status != 503 && reply.status != 421) {
                current = index;
                LOG.info("kraft-acl serve: now asking {} ({})", server,
                        failures == null ? "the previous serve was not ready" : String.join("; ", failures));
            }
            return reply;
        }
        if (passedOver != null) {
            return passedOver;
        }
        throw new UnavailableException("no kraft-acl serve answered: " + String.join("; ", failures));
    }

    private Reply exchange(URI server, String path, byte[] body, int timeoutMs, boolean once) throws IOException {
        HttpURLConnection c = (HttpURLConnection) url(server, path).openConnection();
        if (c instanceof HttpsURLConnection https) {
            https.setSSLSocketFactory(sockets);
            if (!verifyHostname) {
                https.setHostnameVerifier((host, session) -> true);
            }
        }
        c.setConnectTimeout(connectTimeoutMs);
        c.setReadTimeout(timeoutMs);
        c.setUseCaches(false);
        c.setRequestProperty("Accept", "application/json");
        if (authorization != null) {
            c.setRequestProperty("Authorization", authorization);
        }
        if (body != null) {
            c.setRequestMethod("POST");
            c.setDoOutput(true);
            c.setRequestProperty("Content-Type", "application/json");
            if (once) {
                c.setFixedLengthStreamingMode(body.length);
            }
            try (OutputStream out = c.getOutputStream()) {
                out.write(body);
            }
        }
        int status = c.getResponseCode();
        byte[] bytes;
        try (InputStream in = status >= 400 ? c.getErrorStream() : c.getInputStream()) {
            bytes = in == null ? new byte[0] : in.readAllBytes();
        }
        return new Reply(status, bytes, server);
    }

    private static URL url(URI server, String path) throws MalformedURLException {
        return new URL(server.getScheme(), server.getHost(), server.getPort(), path);
    }

    private static String describe(IOException e) {
        String message = e.getMessage();
        return e.getClass().getSimpleName() + (message == null ? "" : " " + message);
    }
}
