package io.github.kraftacl.plugin;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;

/**
 * The decisions serve made recently, bounded in entries ({@code kraft.acl.cache.max.entries}) and in estimated bytes
 * ({@code kraft.acl.cache.max.bytes}), in a Caffeine cache from the broker's own classpath.
 *
 * <p>Thread-safe (Caffeine's). Both bounds are one weight: every entry weighs its estimated bytes but at least
 * {@code maxBytes / maxEntries}, and the total weight is at most {@code maxBytes}, so there are at most
 * {@code maxEntries} entries and at most {@code maxBytes} estimated bytes. Eviction work runs on the calling
 * thread, amortized (no thread pool in the broker). Whether an entry may be used is {@link FeedView}'s decision.
 */
final class DecisionCache {
    private final Cache<DecisionKey, Remembered> cache;
    private final long maxBytes;
    private final int maxEntries;

    DecisionCache(int maxEntries, long maxBytes) {
        this.maxEntries = maxEntries;
        this.maxBytes = maxBytes;
        // A weight is an int: past Integer.MAX_VALUE bytes per entry, the byte bound is lowered to that many per
        // entry (no entry weighs as much), so the floor stays a weight and the entry bound still holds.
        long bound = Math.min(maxBytes, (long) maxEntries * Integer.MAX_VALUE);
        long floor = (bound + maxEntries - 1) / maxEntries;
        this.cache = Caffeine.newBuilder()
                .maximumWeight(bound)
                .weigher((DecisionKey k, Remembered v) -> (int) Math.min(Integer.MAX_VALUE,
                        Math.max(floor, (long) k.weight() + v.weight())))
                .executor(Runnable::run)
                .build();
    }

    /** The remembered decision for this key, usable or not, or null. */
    Remembered get(DecisionKey key) {
        return cache.getIfPresent(key);
    }

    /**
     * Remember a decision, unless the one remembered for the key is newer (a later generation, or a later offset in
     * the same): a thread that stores a decision made before another thread's, after it, must not bring it back.
     */
    void put(DecisionKey key, Remembered decision) {
        cache.asMap().merge(key, decision, (old, made) -> old.generation() > made.generation()
                || (old.generation() == made.generation() && old.offset() > made.offset()) ? old : made);
    }

    /** Forget everything (the feed's view moved on: nothing stored before is usable). */
    void clear() {
        cache.invalidateAll();
    }

    /** How many decisions are remembered now (after pending evictions). */
    long size() {
        cache.cleanUp();
        return cache.estimatedSize();
    }

    /** Their estimated bytes, as weighed for the bound (after pending evictions). */
    long weight() {
        cache.cleanUp();
        return cache.policy().eviction().map(e -> e.weightedSize().orElse(0L)).orElse(0L);
    }

    /** The bounds, for messages. */
    String bounds() {
        return maxEntries + " entries, " + maxBytes + " bytes";
    }
}
