package io.github.kraftacl.plugin;

/**
 * What the change feed last proved about one serve, as one immutable value that broker threads read with a single
 * volatile read: remembered decisions are usable only under the view they were stored in ({@code generation}), only
 * if made at or after the newest ACL change serve reported ({@code minOffset}), and only until {@code deadlineNanos}.
 *
 * <p>Immutable. A new generation starts whenever the chain of feed answers breaks (a failure, another serve, a
 * restarted serve, offsets that went backwards), so nothing remembered before the break is ever used after it.
 *
 * <pre>
 *   feed answers:     acl_offset 7 ........ acl_offset 7 (heartbeat) ...... acl_offset 9 (an ACL change)
 *   view:             gen 3, min 7 ........ gen 3, min 7 ................... gen 3, min 9
 *   entry offset 8:   usable                usable                           not usable (decided before 9)
 *   entry offset 9:                                                          usable
 * </pre>
 */
record FeedView(long generation, int server, long minOffset, long deadlineNanos) {
    /** No serve proved anything: nothing remembered is usable. */
    static FeedView disconnected(long generation) {
        return new FeedView(generation, -1, Long.MAX_VALUE, Long.MIN_VALUE);
    }

    /** True while remembered decisions may be used (the feed answered recently enough). */
    boolean usable(long nowNanos) {
        return server >= 0 && nowNanos - deadlineNanos < 0;
    }

    /** True when a decision stored with this generation at this offset may be used under this view. */
    boolean current(long entryGeneration, long entryOffset) {
        return entryGeneration == generation && entryOffset >= minOffset;
    }
}
