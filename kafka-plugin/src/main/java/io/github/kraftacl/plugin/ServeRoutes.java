package io.github.kraftacl.plugin;

import java.net.URI;
import java.util.List;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which serve URLs a call may use, in the operator's order ({@code kraft.acl.urls}: the broker's local serve first):
 * a URL that timed out, refused the connection, was loading or refused the plugin's credentials is <em>open</em>
 * (a circuit breaker) and skipped by every call until {@link HealthProbe} finds it answering again.
 *
 * <p>Thread-safe and lock-free on the read side: broker threads read each URL's state with one volatile read; a
 * state changes only from healthy to open (any thread) and back (the probe).
 */
final class ServeRoutes {
    private static final Logger LOG = LoggerFactory.getLogger(ServeRoutes.class);

    private final List<URI> urls;
    private final AtomicReferenceArray<String> open; // null: healthy; else why it was opened
    private final int probeIntervalMs;
    private volatile Runnable onOpen;

    ServeRoutes(List<URI> urls, int probeIntervalMs) {
        this.urls = List.copyOf(urls);
        this.open = new AtomicReferenceArray<>(urls.size());
        this.probeIntervalMs = probeIntervalMs;
    }

    /** How many URLs there are. */
    int size() {
        return urls.size();
    }

    /** The URL at this index of {@code kraft.acl.urls}. */
    URI url(int index) {
        return urls.get(index);
    }

    /** The index of this URL (the object calls were given), or -1. */
    int indexOf(URI url) {
        for (int i = 0; i < urls.size(); i++) {
            if (urls.get(i) == url) {
                return i;
            }
        }
        return -1;
    }

    /** Every URL, in order. */
    List<URI> urls() {
        return urls;
    }

    /** True while calls skip this URL. */
    boolean isOpen(int index) {
        return open.get(index) != null;
    }

    /** The first URL calls may use (the most preferred healthy one), or -1 when every one is open. */
    int preferred() {
        for (int i = 0; i < urls.size(); i++) {
            if (open.get(i) == null) {
                return i;
            }
        }
        return -1;
    }

    /** How many URLs are open now. */
    int openCount() {
        int n = 0;
        for (int i = 0; i < urls.size(); i++) {
            if (open.get(i) != null) {
                n++;
            }
        }
        return n;
    }

    /** Called (with no lock held) each time a URL is skipped from now on: the probe tests it at once. */
    void onOpen(Runnable listener) {
        this.onOpen = listener;
    }

    /** Stop sending calls to this URL until the probe finds it answering; logged once per opening. */
    void open(int index, String why) {
        if (open.compareAndSet(index, null, why)) {
            LOG.warn("kraft-acl: stopped asking serve {} ({}); it is probed every {} ms and asked again once it "
                    + "answers{}", urls.get(index), why, probeIntervalMs,
                    preferred() < 0 ? "; no other serve is healthy: decisions are DENIED until one answers" : "");
            Runnable listener = onOpen;
            if (listener != null) {
                listener.run();
            }
        }
    }

    /** The probe found this URL answering: calls use it again, in its place in the order. */
    void close(int index) {
        String why = open.getAndSet(index, null);
        if (why != null) {
            LOG.info("kraft-acl: serve {} answers again (it had been skipped: {}); calls go to it again{}",
                    urls.get(index), why, preferred() == index ? " first" : "");
        }
    }

    /** Why this URL is open, or null. */
    String why(int index) {
        return open.get(index);
    }
}
