package io.github.kraftacl.plugin;

import static io.github.kraftacl.plugin.TestPlugins.ctx;
import static io.github.kraftacl.plugin.TestPlugins.plugin;
import static io.github.kraftacl.plugin.TestPlugins.read;
import static io.github.kraftacl.plugin.TestPlugins.waitFor;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.common.errors.AuthorizerNotReadyException;
import org.apache.kafka.server.authorizer.Action;
import org.apache.kafka.server.authorizer.AuthorizationResult;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Decisions remembered by the offset they were made at: used only while the change feed proves them current, never
 * after a notice of a newer ACL change, never while the feed is broken, late, or from another serve instance.
 */
class DecisionCacheTest extends FakeServeTest {
    private static final AuthorizationResult ALLOWED = AuthorizationResult.ALLOWED;
    private static final AuthorizationResult DENIED = AuthorizationResult.DENIED;

    private final FakeDecider decider = new FakeDecider();

    @BeforeEach
    void setUp() throws Exception {
        serve.answer("/v1/authorize", decider);
        decider.offset.set(5);
        serve.aclChange(5);
    }

    private KraftAclAuthorizer connected(String... more) throws Exception {
        plugin = plugin(dir, serve.url(), more);
        waitFor(() -> plugin.feed().view().usable(System.nanoTime()), "the change feed is connected");
        return plugin;
    }

    private List<AuthorizationResult> alice(String... topics) throws Exception {
        List<Action> actions = new ArrayList<>();
        for (String t : topics) {
            actions.add(read(t));
        }
        return plugin.authorize(ctx("alice"), actions);
    }

    /**
     * A decision answered at an older offset than the one remembered for the same key (a slow broker thread storing
     * ALLOWED at 8 after another stored DENIED at 10, an ACL change at 9 the feed has not reported yet) does not
     * replace it: before, the cache went back to the older answer, a wrong ALLOW until the feed's notice.
     */
    @Test
    void anOlderAnswerNeverReplacesANewerOneOfTheSameKey() throws Exception {
        DecisionCache cache = new DecisionCache(100, 1 << 20);
        DecisionKey key = DecisionKey.of(ctx("alice").principal(), "10.0.0.7", read("a"));
        cache.put(key, new Remembered(DENIED, 10, 3, null));
        cache.put(key, new Remembered(ALLOWED, 8, 3, null));
        assertEquals(new Remembered(DENIED, 10, 3, null), cache.get(key));
        cache.put(key, new Remembered(ALLOWED, 11, 3, null));
        assertEquals(ALLOWED, cache.get(key).result(), "a newer answer replaces it");
        cache.put(key, new Remembered(DENIED, 2, 4, null));
        assertEquals(DENIED, cache.get(key).result(), "one of a newer generation replaces it whatever its offset");
    }

    @Test
    void aRepeatedDecisionIsAnsweredFromMemory() throws Exception {
        decider.allowed.add("a");
        connected();
        assertEquals(List.of(ALLOWED, DENIED), alice("a", "b"));
        assertEquals(List.of(ALLOWED, DENIED), alice("a", "b"));
        assertEquals(List.of(DENIED, ALLOWED), alice("b", "a"));
        assertEquals(1, decider.asked.get(), "serve was asked once");
        assertEquals(List.of(ALLOWED, DENIED, DENIED), alice("a", "b", "c"));
        assertEquals(2, decider.asked.get());
        assertTrue(serve.on("/v1/authorize").get(1).body().contains("\"resource_name\":\"c\"}]"), "only c was asked");
        assertEquals(6, plugin.cacheMetrics().hits());
        assertEquals(3, plugin.cacheMetrics().misses());
    }

    @Test
    void anAclChangeBitesOnTheNextRequestAfterTheNotice() throws Exception {
        decider.allowed.add("a");
        connected();
        assertEquals(List.of(ALLOWED), alice("a"));
        decider.allowed.remove("a");
        decider.offset.set(6);
        serve.aclChange(6);
        waitFor(() -> plugin.feed().view().minOffset() == 6, "the feed reports offset 6");
        assertEquals(List.of(DENIED), alice("a"));
        assertEquals(2, decider.asked.get());
        assertEquals(List.of(DENIED), alice("a"));
        assertEquals(2, decider.asked.get(), "the new decision is remembered");
        assertEquals(1, plugin.cacheMetrics().invalidations());
        assertTrue(plugin.cacheMetrics().lastLagUs() >= 0);
    }

    @Test
    void aDecisionThatRacedAChangeIsNeverUsed() throws Exception {
        decider.allowed.add("a");
        connected();
        decider.delayMs = 300;
        CompletableFuture<List<AuthorizationResult>> inFlight = CompletableFuture.supplyAsync(() -> {
            try {
                return alice("a");
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        waitFor(() -> decider.asked.get() == 1, "serve received the decision request");
        decider.allowed.remove("a");
        serve.aclChange(6); // serve applied a change while its answer at offset 5 is on the way
        waitFor(() -> plugin.feed().view().minOffset() == 6, "the feed reports offset 6");
        assertEquals(List.of(ALLOWED), inFlight.join(), "the answer of its time");
        decider.delayMs = 0;
        decider.offset.set(6);
        assertEquals(List.of(DENIED), alice("a"), "the answer decided at 5 was stored after the notice: not used");
        assertEquals(2, decider.asked.get());
    }

    @Test
    void nothingRememberedIsUsedWhileTheFeedIsLate() throws Exception {
        decider.allowed.add("a");
        connected();
        alice("a");
        serve.freezeFeed(true); // a frozen serve: no heartbeat
        waitFor(() -> !plugin.feed().view().usable(System.nanoTime()), "the heartbeat is late");
        assertEquals(List.of(ALLOWED), alice("a"));
        assertEquals(2, decider.asked.get(), "asked of serve, not answered from memory");
        serve.freezeFeed(false);
        waitFor(() -> plugin.feed().view().usable(System.nanoTime()), "the feed is back");
        // the decision remembered before the freeze is still exact when the same poll was answered late (same serve,
        // no ACL change), and asked again when the plugin gave that poll up and polled anew: either is right
        alice("a");
        long asked = decider.asked.get();
        assertTrue(asked == 2 || asked == 3, "asked " + asked + " times");
        alice("a");
        alice("a");
        assertEquals(asked, decider.asked.get(), "remembered again once the feed is back");
    }

    @Test
    void aRestartedServeMakesEverythingRememberedUnusable() throws Exception {
        decider.allowed.add("a");
        connected();
        alice("a");
        long generation = plugin.feed().view().generation();
        serve.restart("fake-2", 6);
        waitFor(() -> plugin.feed().view().generation() != generation && plugin.feed().view().usable(System.nanoTime()),
                "the feed sees the new instance");
        alice("a");
        assertEquals(2, decider.asked.get());
        assertTrue(plugin.cacheMetrics().resets() >= 1);
    }

    @Test
    void aServeThatIsAnotherInstanceIsNoticedAtOnceNotAfterAHeartbeat() throws Exception {
        // The URL now reaches another serve (a proxy or DNS name repointed) whose ACL offset is below the one known:
        // the waiting poll names the instance it knows, so the other serve answers it at once, not a heartbeat later.
        decider.allowed.add("a");
        connected(PluginConfig.HEARTBEAT_MS, "30000");
        alice("a");
        long generation = plugin.feed().view().generation();
        waitFor(() -> serve.on(ChangeFeed.PATH).stream().anyMatch(r -> r.query().contains("instance=fake-1")),
                "a poll names the instance it knows");
        long restarted = System.nanoTime();
        serve.restart("fake-2", 3);
        waitFor(() -> plugin.feed().view().generation() != generation, "the feed sees the other instance");
        assertTrue(System.nanoTime() - restarted < 10_000_000_000L, "well before the 30 s heartbeat");
        alice("a");
        assertEquals(2, decider.asked.get(), "nothing remembered from the first serve is used");
    }

    @Test
    void aUrlOverSeveralServesInTurnIsNotPolledInATightLoop() throws Exception {
        // Every poll reaches another serve instance, so each is answered at once and starts the feed anew: the
        // plugin then pauses between polls instead of asking again at once, and remembers nothing meanwhile.
        decider.allowed.add("a");
        connected();
        serve.rotateInstances("fake-a", "fake-b");
        int before = serve.on(ChangeFeed.PATH).size();
        Thread.sleep(1_000);
        int polls = serve.on(ChangeFeed.PATH).size() - before;
        assertTrue(polls <= 1_000 / ChangeFeed.FLAPPING_PAUSE_MS + 5, polls + " polls in one second");
        alice("a");
        alice("a");
        assertTrue(decider.asked.get() >= 1);
    }

    @Test
    void aLateAnswerDoesNotStretchTheStalenessBound() throws Exception {
        // Every feed answer reaches the plugin 300 ms after serve made it: the view is dated from the poll's start
        // plus the time serve held it, so it expires heartbeat + grace (3 s) after the answer was made, 2.7 s after
        // it arrived, not 3 s after (the bound would be 3.3 s).
        serve.delayFeed(300);
        List<long[]> seen = new CopyOnWriteArrayList<>();
        plugin = plugin(dir, serve.url(), PluginConfig.HEARTBEAT_MS, "2000", PluginConfig.HEARTBEAT_GRACE_MS, "1000");
        plugin.feed().listen((view, reset, appliedUs, droppedUs) -> {
            if (view.server() >= 0) {
                seen.add(new long[] {System.nanoTime(), view.deadlineNanos()});
            }
        });
        waitFor(() -> seen.size() >= 2, "two feed answers");
        for (long[] s : seen) {
            long leftMs = (s[1] - s[0]) / 1_000_000;
            assertTrue(leftMs <= 2_700 + 50, "usable for " + leftMs + " ms after arriving 300 ms late");
            assertTrue(leftMs >= 2_000, "usable for most of the heartbeat: " + leftMs + " ms");
        }
    }

    @Test
    void anErrorInTheFeedThreadDoesNotEndTheFeed() throws Exception {
        connected();
        AtomicInteger thrown = new AtomicInteger();
        plugin.feed().listen((view, reset, appliedUs, droppedUs) -> {
            if (thrown.getAndIncrement() == 0) {
                throw new IllegalStateException("a listener's bug");
            }
        });
        serve.aclChange(6);
        waitFor(() -> thrown.get() >= 2, "the feed goes on after the error");
        Thread.sleep(1_200); // past heartbeat + grace: a dead feed thread would leave the view expired
        assertTrue(plugin.feed().view().usable(System.nanoTime()), "the feed is current");
    }

    @Test
    void offsetsThatGoBackwardsMakeEverythingRememberedUnusable() throws Exception {
        decider.allowed.add("a");
        connected();
        alice("a");
        long generation = plugin.feed().view().generation();
        serve.restart("fake-1", 2); // the same instance id, an older log
        waitFor(() -> plugin.feed().view().generation() != generation, "the feed starts over");
        decider.offset.set(2);
        waitFor(() -> plugin.feed().view().usable(System.nanoTime()), "the feed is connected");
        alice("a");
        assertEquals(2, decider.asked.get());
    }

    /**
     * A feed answer the plugin cannot use (garbage, a heartbeat without the offsets, a field of the wrong type, a
     * field twice, text after the answer) breaks the feed: nothing remembered is used until it answers properly.
     */
    @ParameterizedTest
    @ValueSource(strings = {"garbage\n", "{\"instance\":\"fake-1\",\"held_us\":1}",
        "{\"instance\":\"fake-1\",\"acl_offset\":\"5\",\"applied_offset\":5}",
        "{\"instance\":\"fake-1\",\"acl_offset\":5,\"applied_offset\":5,\"acl_offset\":4}",
        "{\"instance\":\"fake-1\",\"acl_offset\":5,\"applied_offset\":5}\n{\"acl_offset\":4}",
        "{\"instance\":7,\"acl_offset\":5,\"applied_offset\":5}"})
    void aFeedAnswerItCannotUseBreaksTheFeed(String body) throws Exception {
        decider.allowed.add("a");
        connected();
        assertEquals(List.of(ALLOWED), alice("a"));
        assertEquals(List.of(ALLOWED), alice("a"));
        assertEquals(1, decider.asked.get(), "remembered");
        serve.answer(ChangeFeed.PATH, 200, body);
        waitFor(() -> !plugin.feed().view().usable(System.nanoTime()), "the feed broke");
        alice("a");
        alice("a");
        assertEquals(3, decider.asked.get(), "nothing remembered is used");
    }

    /**
     * A decision answered at an offset older than the newest ACL change the feed reported (a serve answering from a
     * state behind its own feed) is never used from memory: each call asks serve again.
     */
    @Test
    void aDecisionAnsweredBeforeTheFeedsNewestChangeIsNeverUsed() throws Exception {
        decider.allowed.add("a");
        serve.aclChange(7);
        connected();
        waitFor(() -> plugin.feed().view().minOffset() == 7, "the feed reports offset 7");
        assertEquals(List.of(ALLOWED), alice("a")); // decided at offset 5
        assertEquals(List.of(ALLOWED), alice("a"));
        assertEquals(2, decider.asked.get(), "an answer at 5 is older than the change at 7");
        decider.offset.set(7);
        alice("a");
        alice("a");
        assertEquals(3, decider.asked.get(), "an answer at 7 is remembered");
    }

    /** An offset that jumps ahead drops everything remembered (decisions made before it are not used). */
    @Test
    void anOffsetThatJumpsAheadDropsEverythingRemembered() throws Exception {
        decider.allowed.add("a");
        connected();
        alice("a");
        serve.aclChange(1L << 60);
        waitFor(() -> plugin.feed().view().minOffset() == 1L << 60, "the feed reports the jump");
        alice("a");
        alice("a");
        assertEquals(3, decider.asked.get(), "answers at offset 5 are older than the change: never used");
    }

    @Test
    void withoutAChangeFeedNothingIsRemembered() throws Exception {
        serve.removeFeed();
        plugin = plugin(dir, serve.url());
        // (a line of the previous test's feed thread, ending as its plugin closed, may come first)
        waitFor(() -> CapturedLogs.lines(ChangeFeed.class.getName(), "INFO").stream()
                .anyMatch(l -> l.message().contains("offers no change feed")), "the plugin says why");
        alice("a");
        alice("a");
        assertEquals(2, decider.asked.get());
        assertEquals(0, plugin.cache().size());
        assertTrue(serve.on("/v1/authorize").stream().noneMatch(r -> r.body().contains("\"rules\"")),
                "a serve without the feed (an older one) is not asked for rules it does not know");
    }

    @Test
    void withTheCacheOffEveryDecisionIsAskedAndNoFeedIsPolled() throws Exception {
        plugin = plugin(dir, serve.url(), PluginConfig.CACHE_ENABLED, "false");
        alice("a");
        alice("a");
        assertEquals(2, decider.asked.get());
        assertTrue(serve.on(ChangeFeed.PATH).isEmpty());
        assertEquals(null, plugin.cache());
    }

    @Test
    void theEntriesBoundHolds() throws Exception {
        connected(PluginConfig.CACHE_MAX_ENTRIES, "100");
        String[] topics = new String[1000];
        for (int i = 0; i < topics.length; i++) {
            topics[i] = "t" + i;
        }
        alice(topics);
        assertTrue(plugin.cache().size() <= 100, "at most 100 entries: " + plugin.cache().size());
        assertTrue(plugin.cache().size() > 0);
    }

    @Test
    void theEntriesBoundHoldsWhateverTheBytesBound() throws Exception {
        connected(PluginConfig.CACHE_MAX_ENTRIES, "100", PluginConfig.CACHE_MAX_BYTES, Long.toString(Long.MAX_VALUE / 2));
        String[] topics = new String[1000];
        for (int i = 0; i < topics.length; i++) {
            topics[i] = "t" + i;
        }
        alice(topics);
        assertTrue(plugin.cache().size() <= 100, "at most 100 entries: " + plugin.cache().size());
    }

    @Test
    void theBytesBoundHolds() throws Exception {
        connected(PluginConfig.CACHE_MAX_BYTES, "65536");
        String[] topics = new String[200];
        for (int i = 0; i < topics.length; i++) {
            topics[i] = "t".repeat(2000) + i;
        }
        alice(topics);
        assertTrue(plugin.cache().weight() <= 65536, "at most 65536 bytes: " + plugin.cache().weight());
        assertTrue(plugin.cache().size() > 0 && plugin.cache().size() < 32, "entries: " + plugin.cache().size());
    }

    @Test
    void decisionsOfAnotherServeThanTheFeedsAreNotRemembered() throws Exception {
        try (FakeServe second = new FakeServe()) {
            FakeDecider other = new FakeDecider();
            second.answer("/v1/authorize", other);
            plugin = plugin(dir, serve.url() + "," + second.url());
            waitFor(() -> plugin.feed().view().usable(System.nanoTime()), "the feed is connected");
            assertEquals(0, plugin.feed().view().server());
            decider.delayMs = 2000; // the first serve times out: the decision comes from the second
            alice("a");
            assertEquals(1, other.asked.get());
            assertEquals(0, plugin.cache().size(), "decided by a serve the feed was not following");
        }
    }

    /**
     * README: "a serve that is skipped: nothing remembered is used". A serve that wakes from a freeze answers
     * decisions 503 STALE_STATE until its tailer has read the log (a grant revoked meanwhile must not be answered
     * ALLOWED) while the feed's poll it holds may end only at its heartbeat: the plugin skips that serve at its first
     * 503, and from then on answers nothing from what that serve decided before.
     */
    @Test
    void nothingRememberedOfASkippedServeIsUsed() throws Exception {
        serve.answer("/v1/status", 200, "{\"ready\":true,\"last_applied_offset\":5,\"acl_count\":1}");
        decider.allowed.add("a");
        connected(PluginConfig.HEARTBEAT_MS, "30000", PluginConfig.HEARTBEAT_GRACE_MS, "30000");
        plugin.start(TestPlugins.oneListener()).values().iterator().next().toCompletableFuture()
                .get(5, java.util.concurrent.TimeUnit.SECONDS); // start-up completed: a 503 skips the serve
        assertEquals(List.of(ALLOWED), alice("a"));
        serve.answer("/v1/authorize", 503, "{\"error\":{\"code\":\"STALE_STATE\",\"message\":\"frozen\"}}");
        assertEquals(List.of(DENIED), alice("b"), "no serve decides: fail closed");
        assertTrue(plugin.routes().isOpen(0), "serve skipped until it decides again");
        assertEquals(List.of(DENIED), alice("a"), "not the ALLOWED serve decided before it was skipped");
    }

    @Test
    void superUsersAreNeverAskedNorRemembered() throws Exception {
        connected();
        assertEquals(List.of(ALLOWED), plugin.authorize(ctx("admin"), List.of(read("a"))));
        assertEquals(0, decider.asked.get());
        assertEquals(0, plugin.cache().size());
    }

    @Test
    void notReadyIsNeverRemembered() throws Exception {
        connected();
        decider.status = 503;
        assertThrows(AuthorizerNotReadyException.class, () -> alice("a"), "before start-up completed: KIP-801");
        assertEquals(0, plugin.cache().size());
        assertFalse(plugin.routes().isOpen(0), "a loading serve is not skipped before start-up completed");
    }
}
