package io.github.kraftacl.plugin;

/**
 * Whether a repeated message is due: the first time, then at most once per period, with how many occurrences
 * were not logged in between.
 *
 * <p>Thread-safe (one lock, taken only on the path that would log).
 */
final class RateLimitedLog {
    private final long periodMs;
    private long lastMs;
    private boolean logged;
    private long skipped;

    RateLimitedLog(long periodMs) {
        this.periodMs = periodMs;
    }

    /**
     * Count one occurrence: -1 when it is not to be logged now, else how many occurrences were not logged since
     * the last logged one.
     */
    synchronized long due(long nowMs) {
        if (logged && nowMs - lastMs < periodMs) {
            skipped++;
            return -1;
        }
        long out = skipped;
        skipped = 0;
        lastMs = nowMs;
        logged = true;
        return out;
    }
}
