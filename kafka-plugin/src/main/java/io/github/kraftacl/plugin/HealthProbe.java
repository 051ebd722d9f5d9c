package io.github.kraftacl.plugin;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The circuit breaker's probe: every {@code kraft.acl.probe.interval.ms} (and at once when a URL is skipped) it
 * asks each skipped serve an empty decision, and lets calls use that serve again once it answers 200, so a broker
 * goes back to its own local serve after a failover without a user request paying for the test.
 *
 * <p>One daemon thread; {@link #wake()} and {@link #close()} may be called from any thread. The empty decision
 * ({@code POST /v1/authorize} with no actions) answers 200 exactly when serve can decide: 503 while it loads, and
 * 200 while it keeps deciding from its last state with its log unreachable (where {@code /v1/status} says 503).
 */
final class HealthProbe implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(HealthProbe.class);
    static final String PATH = "/v1/authorize";
    private static final byte[] EMPTY_DECISION = ("{\"principal\":\"User:kraft-acl-probe\",\"client_address\":"
            + "\"127.0.0.1\",\"actions\":[]}").getBytes(StandardCharsets.UTF_8);

    private final ServeClient client;
    private final int intervalMs;
    private final int timeoutMs;
    private final Thread thread;
    private final Object signal = new Object();
    private final RateLimitedLog unexpectedLog = new RateLimitedLog(60_000);
    private boolean woken;
    private volatile boolean closed;

    HealthProbe(ServeClient client, int intervalMs, int timeoutMs) {
        this.client = client;
        this.intervalMs = intervalMs;
        this.timeoutMs = timeoutMs;
        this.thread = new Thread(this::run, "kraft-acl-probe");
        this.thread.setDaemon(true);
    }

    /** Start probing. */
    HealthProbe start() {
        thread.start();
        return this;
    }

    /** Probe now (a URL was just skipped), not at the end of the interval. */
    void wake() {
        synchronized (signal) {
            woken = true;
            signal.notifyAll();
        }
    }

    private void run() {
        while (!closed) {
            ServeRoutes routes = client.routes();
            for (int i = 0; i < routes.size() && !closed; i++) {
                if (routes.isOpen(i) && answers(i)) {
                    routes.close(i);
                }
            }
            synchronized (signal) {
                if (!woken && !closed) {
                    try {
                        signal.wait(intervalMs);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
                woken = false;
            }
        }
    }

    /**
     * One probe of one URL: true when it answered the empty decision with 200. Never throws: a probe thread ended by
     * an unexpected exception would leave every skipped URL skipped for good (decisions denied once none is left).
     */
    private boolean answers(int index) {
        try {
            ServeClient.Reply reply = client.send(index, PATH, EMPTY_DECISION, timeoutMs);
            if (reply.status() == 200) {
                return true;
            }
            if (!client.misconfigured(reply, PATH)) {
                LOG.debug("kraft-acl: probe of {}: HTTP {}", reply.server(), reply.status());
            }
        } catch (IOException e) {
            LOG.debug("kraft-acl: probe of {}: {}", client.routes().url(index), ServeClient.describe(e));
        } catch (RuntimeException e) {
            long skipped = unexpectedLog.due(System.currentTimeMillis());
            if (skipped >= 0) {
                LOG.warn("kraft-acl: probe of {} failed with an unexpected error ({} more since the last such message; "
                        + "probing goes on): {}", client.routes().url(index), skipped, e.toString());
            }
        }
        return false;
    }

    @Override
    public void close() {
        closed = true;
        wake();
        thread.interrupt();
    }
}
