package io.github.kraftacl.plugin;

import java.io.IOException;
import java.util.Collection;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * KIP-801 start-up: polls serve's GET /v1/status until it reports ready, then completes the future the broker's
 * non-early-start listeners wait on (Kafka's EndpointReadyFutures), so they open only once the ACLs are loaded;
 * that is also the end of the broker's start-up for the plugin (a serve loading later is skipped, not waited for).
 *
 * <p>One daemon thread per watcher; the future is completed once, by that thread or by {@link #close()}.
 */
final class ReadyWatcher implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ReadyWatcher.class);
    private static final long LOG_EVERY_MS = 10_000;

    private final CompletableFuture<Void> ready = new CompletableFuture<>();
    private final ServeClient client;
    private final int pollMs;
    private final int timeoutMs;
    private final Collection<String> listeners;
    private final Thread thread;

    ReadyWatcher(ServeClient client, int pollMs, int timeoutMs, Collection<String> listeners) {
        this.client = client;
        this.pollMs = pollMs;
        this.timeoutMs = timeoutMs;
        this.listeners = listeners;
        this.thread = new Thread(this::run, "kraft-acl-ready-watcher");
        this.thread.setDaemon(true);
    }

    /** Start polling; the returned future completes when serve is ready. */
    CompletableFuture<Void> start() {
        thread.start();
        return ready;
    }

    private void run() {
        long lastLog = 0;
        String lastState = "";
        while (!ready.isDone()) {
            String state = poll();
            if (state == null) {
                return;
            }
            long now = System.currentTimeMillis();
            if (!state.equals(lastState) || now - lastLog >= LOG_EVERY_MS) {
                LOG.info("kraft-acl: {} until kraft-acl serve is ready: {}", waiting(), state);
                lastLog = now;
                lastState = state;
            }
            try {
                Thread.sleep(pollMs);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    /** One status call: null once ready (the future is then complete), else what serve said. */
    private String poll() {
        ServeClient.Reply reply;
        try {
            reply = client.get("/v1/status", timeoutMs);
        } catch (ServeClient.UnavailableException e) {
            return e.getMessage();
        }
        if (reply.status() != 200 && reply.status() != 503) {
            WireJson.ErrorBody error = WireJson.error(reply.body());
            return reply.server() + " answered GET /v1/status with HTTP " + reply.status() + " " + error.code()
                    + ": " + error.message();
        }
        DecisionJson.Status status;
        try {
            status = DecisionJson.status(reply.body());
        } catch (IOException e) {
            return reply.server() + " answered GET /v1/status with a body the plugin cannot read: " + e.getMessage();
        }
        if (reply.status() == 200 && status.ready()) {
            LOG.info("kraft-acl: serve {} is ready ({} ACLs, last applied offset {}){}", reply.server(),
                    status.aclCount(), status.lastAppliedOffset(),
                    listeners.isEmpty() ? "" : "; opening listeners " + listeners);
            ready.complete(null);
            return null;
        }
        return reply.server() + " is loading its ACLs (not ready yet)";
    }

    private String waiting() {
        return listeners.isEmpty() ? "early-start listeners answer AUTHORIZER_NOT_READY"
                : "listeners " + listeners + " stay closed";
    }

    @Override
    public void close() {
        ready.completeExceptionally(
                new TimeoutException("The authorizer was closed before kraft-acl serve was ready."));
        thread.interrupt();
    }
}
