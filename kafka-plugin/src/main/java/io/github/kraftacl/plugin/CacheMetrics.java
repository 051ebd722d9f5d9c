package io.github.kraftacl.plugin;

import java.util.concurrent.atomic.LongAdder;
import org.apache.kafka.common.metrics.Sensor;

/**
 * The decision cache's figures: hits and misses (lock-free counters on the broker's request path), the hit ratio
 * over the last 30 to 60 seconds, invalidations (an ACL change made older decisions unusable), resets (the feed's
 * chain of answers broke) and the invalidation lag (serve applying a change to this plugin dropping older decisions).
 *
 * <p>Thread-safe. Kept on every Kafka release; {@link KraftAclAuthorizer} exposes them as the broker's plugin
 * metrics where the broker offers those (4.1+), and gives the lag its Kafka sensor.
 */
final class CacheMetrics implements ChangeFeed.Listener {
    private final LongAdder hits = new LongAdder();
    private final LongAdder misses = new LongAdder();
    private final LongAdder invalidations = new LongAdder();
    private final LongAdder resets = new LongAdder();
    private volatile Sensor lagMs;
    private volatile long lastLagUs = -1;
    private long baseHits;
    private long baseLookups;
    private long nextAtMs;
    private long nextHits;
    private long nextLookups;

    /** Count one call's lookups. */
    void lookedUp(int hit, int missed) {
        if (hit > 0) {
            hits.add(hit);
        }
        if (missed > 0) {
            misses.add(missed);
        }
    }

    /** Record the invalidation lag in this sensor too (Kafka's avg and max over its sample window). */
    void lagSensor(Sensor sensor) {
        this.lagMs = sensor;
    }

    @Override
    public void onView(FeedView view, boolean reset, long appliedUs, long droppedUs) {
        if (reset) {
            resets.increment();
        }
        if (appliedUs > 0 && droppedUs > 0) {
            invalidations.increment();
            long lag = Math.max(0, droppedUs - appliedUs);
            lastLagUs = lag;
            Sensor sensor = lagMs;
            if (sensor != null) {
                sensor.record(lag / 1000.0);
            }
        }
    }

    long hits() {
        return hits.sum();
    }

    long misses() {
        return misses.sum();
    }

    long invalidations() {
        return invalidations.sum();
    }

    long resets() {
        return resets.sum();
    }

    /** The last invalidation's lag in microseconds, -1 before the first. */
    long lastLagUs() {
        return lastLagUs;
    }

    /** Hits / lookups over the last 30 to 60 s (NaN without lookups in that time). */
    synchronized double hitRatio(long nowMs) {
        long h = hits.sum();
        long lookups = h + misses.sum();
        if (nowMs - nextAtMs >= 30_000) {
            baseHits = nextHits;
            baseLookups = nextLookups;
            nextAtMs = nowMs;
            nextHits = h;
            nextLookups = lookups;
        }
        long window = lookups - baseLookups;
        return window == 0 ? Double.NaN : (double) (h - baseHits) / window;
    }
}
