package io.github.kraftacl.plugin;

import java.io.IOException;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * HTTP calls to kraft-acl serve over the URLs of {@link ServeRoutes}: each call goes to the first URL in the
 * operator's order that is not skipped (its circuit is open), and on to the next when that one fails; a URL that
 * times out, refuses the connection or refuses the plugin's credentials is skipped from then on, until the probe
 * finds it answering again.
 *
 * <p>Thread-safe: any number of broker threads call it at once. Decisions go over serve's decision frames
 * ({@link FrameClient}) unless {@code kraft.acl.serve.transport=http} or that serve has none; every other call, and
 * a decision to a serve without frames, over HTTP/1.1 keep-alive on the plugin's own sockets ({@link HttpConnections}),
 * each exchange ended as a whole by its deadline (the JDK's HttpURLConnection was dropped: one read() of its chunked
 * decoder loops on endless trailers or a trickled chunk-size line with no bound, and closing it waits for that read).
 * Decisions, status calls and the change feed reuse a keep-alive connection, and are sent once more on a new one when
 * serve closed it before a byte of the answer; ACL writes go on a new connection and are never resent.
 */
final class ServeClient implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ServeClient.class);
    /** One HTTP answer and the serve that gave it. */
    record Reply(int status, byte[] body, URI server) {}

    /** No serve answered: every URL refused, reset, timed out or is skipped. The message names each URL's failure. */
    static final class UnavailableException extends Exception {
        private static final long serialVersionUID = 1L;

        UnavailableException(String message) {
            super(message);
        }
    }

    private final ServeRoutes routes;
    private final MisconfigurationLog problems;
    private final HttpConnections http;
    private final FrameClient frames; // null with kraft.acl.serve.transport=http
    private volatile boolean started;
    private volatile int answering; // the index of the serve that answered last, for the "now asking" line

    ServeClient(PluginConfig config) {
        this.routes = new ServeRoutes(config.urls, config.probeIntervalMs);
        this.problems = new MisconfigurationLog(config.tokenFile);
        this.http = new HttpConnections(config.token.map(t -> "Bearer " + t).orElse(null), config.connectTimeoutMs,
                config.sslContext == null ? null : config.sslContext.getSocketFactory(), config.verifyHostname);
        this.frames = config.frames ? new FrameClient(routes, config) : null;
    }

    /** The URLs and which of them calls skip. */
    ServeRoutes routes() {
        return routes;
    }

    /**
     * From now on a serve that answers a decision with 503 AUTHORIZER_NOT_READY is skipped like an unreachable
     * one (it restarted and is loading), so the broker's open listeners get another serve's answer or a denial,
     * never KIP-801's AuthorizerNotReadyException, which is for start-up.
     */
    void started() {
        started = true;
    }

    /** True once {@link #started()} was called. */
    boolean isStarted() {
        return started;
    }

    /** GET path. */
    Reply get(String path, int timeoutMs) throws UnavailableException {
        return call(path, null, timeoutMs, false, false);
    }

    /**
     * POST a JSON body. {@code once}: never let the JDK resend it (ACL writes). A serve that answers 503 (not
     * ready) or 421 (not the controller) is passed over for the next one; if none does better, its answer is
     * returned.
     */
    Reply post(String path, byte[] body, int timeoutMs, boolean once) throws UnavailableException {
        return call(path, body, timeoutMs, once, false);
    }

    /** POST a decision request: like {@link #post}, and after start-up a loading serve is skipped until it is ready. */
    Reply decide(String path, byte[] body, int timeoutMs) throws UnavailableException {
        return call(path, body, timeoutMs, false, true);
    }

    /** One exchange with the serve at this index, whatever its state (the change feed and the probe). */
    Reply send(int index, String path, byte[] body, int timeoutMs) throws IOException {
        URI server = routes.url(index);
        try {
            return exchange(server, path, body, timeoutMs, false);
        } catch (IOException e) {
            problems.failed(server, e);
            throw e;
        }
    }

    /** Log a misconfiguration this answer shows (401, or 403 to the decision API); true if it was one. */
    boolean misconfigured(Reply reply, String path) {
        return (reply.status() == 401 || reply.status() == 403)
                && problems.answered(reply.server(), path, reply.status(), WireJson.error(reply.body()));
    }

    /**
     * The first usable answer of the URLs not skipped, in order. A decision never waits for a skipped serve; any other
     * call (ACL management, status), when no other serve gave a usable answer, also tries the skipped ones (a
     * controller that just came back, before the probe found it), and one that answers is asked again from then on.
     */
    private Reply call(String path, byte[] body, int timeoutMs, boolean once, boolean decision)
            throws UnavailableException {
        int n = routes.size();
        boolean[] skipped = new boolean[n];
        for (int i = 0; i < n; i++) {
            skipped[i] = routes.isOpen(i);
        }
        Reply passedOver = null;
        List<String> failures = new ArrayList<>(0);
        for (int pass = 0; pass < (decision ? 1 : 2); pass++) {
            for (int index = 0; index < n; index++) {
                if (skipped[index] != (pass == 1)) {
                    continue;
                }
                URI server = routes.url(index);
                Reply reply;
                try {
                    reply = decision ? decision(index, server, path, body, timeoutMs)
                            : exchange(server, path, body, timeoutMs, once);
                } catch (IOException | RuntimeException failure) {
                    // a RuntimeException under the JDK's networking (a ProxySelector's, say) is that serve failing
                    // too: never out of authorize(), where Kafka would answer UNKNOWN_SERVER_ERROR, not DENIED
                    IOException e = failure instanceof IOException io ? io
                            : new IOException("an unexpected error: " + failure, failure);
                    problems.failed(server, e);
                    failures.add(server + ": " + describe(e));
                    routes.open(index, describe(e));
                    continue;
                }
                if (misconfigured(reply, path)) {
                    routes.open(index, "it refused the plugin's credentials: HTTP " + reply.status());
                    passedOver = passedOver == null ? reply : passedOver;
                    continue;
                }
                if (reply.status == 503 || reply.status == 421) {
                    if (decision && started && reply.status == 503) {
                        routes.open(index, "it answered HTTP 503 " + WireJson.error(reply.body()).code());
                    }
                    passedOver = passedOver == null ? reply : passedOver;
                    continue;
                }
                if (pass == 1) {
                    routes.close(index);
                }
                if (index != answering) {
                    answering = index;
                    LOG.info("kraft-acl serve: now asking {}{}", server, failures.isEmpty() ? ""
                            : " (" + String.join("; ", failures) + ")");
                }
                return reply;
            }
        }
        if (passedOver != null) {
            return passedOver;
        }
        List<String> why = new ArrayList<>(failures);
        for (int i = 0; i < n; i++) {
            String reason = routes.why(i);
            String url = routes.url(i) + ": ";
            if (reason != null && failures.stream().noneMatch(f -> f.startsWith(url))) {
                why.add(url + "skipped until it answers again (" + reason + ")");
            }
        }
        throw new UnavailableException("no kraft-acl serve answered: " + String.join("; ", why));
    }

    /** A decision over frames when this serve has them, else over HTTP. */
    private Reply decision(int index, URI server, String path, byte[] body, int timeoutMs) throws IOException {
        Reply reply = frames == null ? null : frames.decide(index, path, body, timeoutMs);
        return reply != null ? reply : exchange(server, path, body, timeoutMs, false);
    }

    /** One HTTP exchange, ended by its deadline ({@code timeoutMs} from now) as a whole: {@link HttpConnections}. */
    private Reply exchange(URI server, String path, byte[] body, int timeoutMs, boolean once) throws IOException {
        return http.exchange(server, path, body, timeoutMs, once);
    }

    /** Close the decision-frames connections (decisions waiting on them fail) and the idle HTTP ones. */
    @Override
    public void close() {
        http.close();
        if (frames != null) {
            frames.close();
        }
    }

    static String describe(IOException e) {
        String message = e.getMessage();
        return e.getClass().getSimpleName() + (message == null ? "" : " " + message);
    }
}
