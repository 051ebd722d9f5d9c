package io.github.kraftacl.plugin;

import java.io.IOException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The plugin's end of serve's change feed: one daemon thread keeps a long poll ({@code GET /v1/changes?after=N
 * &wait_ms=W}) outstanding on the serve that calls go to first, and publishes a {@link FeedView} after each answer,
 * so remembered decisions are dropped the moment serve reports an ACL change, and are not used at all while the
 * feed is broken or its heartbeat is late.
 *
 * <p>Thread-safe: the feed thread is the only writer; broker threads read {@link #view()}. The staleness bound:
 * a view expires {@code heartbeat + grace} ms after the answer that made it was made (dated from when the poll was
 * sent plus the time serve says it held it: an answer delayed on the way, or read late after a pause of this JVM,
 * does not extend it), and serve answers a quiet poll every {@code heartbeat} ms and a change at once, so a decision
 * is used at most that long after serve applied a change that the feed could not report (serve frozen or cut off),
 * and one network delay after it otherwise. Each poll names the serve instance the feed knows, so a URL that now
 * reaches another serve (a proxy, a DNS name) is answered at once, and the feed starts anew.
 */
final class ChangeFeed implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ChangeFeed.class);
    static final String PATH = "/v1/changes";
    private static final long NO_FEED_RETRY_MS = 10_000;
    /** Between two polls when serve's instance keeps changing (a URL that reaches several serves in turn). */
    static final long FLAPPING_PAUSE_MS = 100;

    /** Told of every view the feed publishes (metrics, the benchmark). */
    interface Listener {
        /**
         * A new view. {@code invalidatedUs}: when an ACL change made older decisions unusable, serve's wall-clock
         * microseconds of applying it and this JVM's of dropping them; both -1 otherwise.
         */
        void onView(FeedView view, boolean reset, long appliedUs, long droppedUs);
    }

    private final ServeClient client;
    private final DecisionCache cache;
    private final int heartbeatMs;
    private final int graceMs;
    private final List<Listener> listeners = new CopyOnWriteArrayList<>();
    private final Thread thread;
    private final RateLimitedLog breaks = new RateLimitedLog(60_000);
    private final RateLimitedLog noFeed = new RateLimitedLog(3_600_000);
    private volatile FeedView view = FeedView.disconnected(0);
    private volatile boolean closed;

    // Owned by the feed thread.
    private long generation;
    private int server = -1;
    private String instance;
    private long known = -1;
    private long applied = -1;
    private int failures;
    private long lastResetNanos = Long.MIN_VALUE / 2;
    private boolean flapping;

    ChangeFeed(ServeClient client, DecisionCache cache, int heartbeatMs, int graceMs) {
        this.client = client;
        this.cache = cache;
        this.heartbeatMs = heartbeatMs;
        this.graceMs = graceMs;
        this.thread = new Thread(this::run, "kraft-acl-change-feed");
        this.thread.setDaemon(true);
    }

    /** Start following the feed. */
    ChangeFeed start() {
        thread.start();
        return this;
    }

    /** The current view (one volatile read). */
    FeedView view() {
        return view;
    }

    /** Be told of every view from now on. */
    void listen(Listener listener) {
        listeners.add(listener);
    }

    private void run() {
        while (!closed) {
            int preferred = client.routes().preferred();
            if (preferred != server) {
                broke(preferred < 0 ? "no serve is healthy" : "calls now go to " + client.routes().url(preferred));
                server = preferred;
            }
            long pause;
            try {
                pause = server < 0 ? heartbeatMs : poll();
            } catch (RuntimeException e) { // never end the feed: a dead feed thread would leave the cache unused
                pause = failed("an unexpected error: " + e);
            }
            if (pause > 0 && !sleep(pause)) {
                return;
            }
        }
    }

    /** One poll of the feed at {@code server}: 0 to poll again at once, else how long to wait first. */
    private long poll() {
        boolean first = instance == null;
        String path = PATH + "?after=" + (first ? -1 : known) + "&wait_ms=" + (first ? 0 : heartbeatMs)
                + (first ? "" : "&instance=" + URLEncoder.encode(instance, StandardCharsets.UTF_8));
        long sent = System.nanoTime();
        ServeClient.Reply reply;
        try {
            reply = client.send(server, path, null, (int) Math.min(Integer.MAX_VALUE, (long) heartbeatMs + graceMs));
        } catch (IOException e) {
            return failed(ServeClient.describe(e));
        }
        if (reply.status() == 404) {
            broke(null);
            if (noFeed.due(System.currentTimeMillis()) >= 0) {
                LOG.info("kraft-acl: serve {} offers no change feed (GET {} answered 404: an older serve), so the "
                        + "plugin remembers no decision and asks serve for each", reply.server(), PATH);
            }
            return NO_FEED_RETRY_MS;
        }
        if (reply.status() != 200) {
            client.misconfigured(reply, PATH);
            WireJson.ErrorBody error = WireJson.error(reply.body());
            return failed("HTTP " + reply.status() + " " + error.code() + " " + error.message());
        }
        DecisionJson.Changes changes;
        try {
            changes = DecisionJson.changes(reply.body());
        } catch (IOException e) {
            return failed("an answer the plugin cannot read: " + e.getMessage());
        }
        accept(changes, sent);
        failures = 0;
        return flapping ? FLAPPING_PAUSE_MS : 0;
    }

    private void accept(DecisionJson.Changes c, long sent) {
        long now = System.nanoTime();
        // when the answer was made, at the earliest: the poll's start plus the time serve held it (never later than
        // now; an older serve, which does not say, dates it on arrival)
        long held = c.heldUs() < 0 ? Long.MAX_VALUE : Math.min(c.heldUs(), Long.MAX_VALUE / 2_000) * 1_000;
        long made = now - sent <= held ? now : sent + held;
        boolean reset = instance == null || !c.instance().equals(instance) || c.aclOffset() < known
                || c.appliedOffset() < applied;
        boolean changed = !reset && c.aclOffset() > known;
        // a URL that reaches several serves in turn (a round-robin proxy) answers every poll at once with another
        // instance: nothing is remembered either way, but the feed then polls at most every FLAPPING_PAUSE_MS
        flapping = reset && instance != null && now - lastResetNanos < heartbeatMs * 1_000_000L;
        if (reset) {
            lastResetNanos = now;
            generation++;
            LOG.info("kraft-acl: change feed from serve {} (instance {}, ACLs changed last at offset {}): decisions "
                    + "it makes are remembered{}", client.routes().url(server), c.instance(), c.aclOffset(),
                    instance == null ? "" : " anew (it was instance " + instance + " at offset " + known + ")");
        }
        instance = c.instance();
        known = c.aclOffset();
        applied = c.appliedOffset();
        FeedView next = new FeedView(generation, server, known, made + (heartbeatMs + (long) graceMs) * 1_000_000L);
        view = next;
        long droppedUs = changed ? wallMicros() : -1;
        if (reset || changed) {
            cache.clear();
        }
        for (Listener l : listeners) {
            l.onView(next, reset, changed ? c.aclAppliedUs() : -1, droppedUs);
        }
    }

    /** The chain of answers broke: nothing remembered is usable until a new one starts. */
    private void broke(String why) {
        if (instance == null && view.server() < 0) {
            return;
        }
        generation++;
        FeedView next = FeedView.disconnected(generation);
        view = next;
        if (why != null && instance != null) {
            long skipped = breaks.due(System.currentTimeMillis());
            if (skipped >= 0) {
                LOG.info("kraft-acl: change feed from serve {} broke ({}): decisions are asked of serve until it is "
                        + "back ({} other break(s) since the last such message)",
                        server < 0 ? "-" : client.routes().url(server), why, skipped);
            }
        }
        instance = null;
        cache.clear();
        for (Listener l : listeners) {
            l.onView(next, true, -1, -1);
        }
    }

    private long failed(String why) {
        broke(why);
        failures = Math.min(failures + 1, 6);
        return Math.min(1000, 25L << failures);
    }

    private boolean sleep(long ms) {
        try {
            Thread.sleep(ms);
            return !closed;
        } catch (InterruptedException e) {
            return false;
        }
    }

    static long wallMicros() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
    }

    @Override
    public void close() {
        closed = true;
        thread.interrupt();
    }
}
