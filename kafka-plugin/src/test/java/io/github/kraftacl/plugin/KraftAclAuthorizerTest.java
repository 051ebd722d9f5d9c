package io.github.kraftacl.plugin;

import static io.github.kraftacl.plugin.TestPlugins.TOKEN;
import static io.github.kraftacl.plugin.TestPlugins.ctx;
import static io.github.kraftacl.plugin.TestPlugins.deadPort;
import static io.github.kraftacl.plugin.TestPlugins.info;
import static io.github.kraftacl.plugin.TestPlugins.read;
import static io.github.kraftacl.plugin.TestPlugins.waitFor;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.Endpoint;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.errors.AuthorizerNotReadyException;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.errors.UnknownServerException;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.internals.PluginMetricsImpl;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.server.authorizer.AclCreateResult;
import org.apache.kafka.server.authorizer.AclDeleteResult;
import org.apache.kafka.server.authorizer.Action;
import org.apache.kafka.server.authorizer.AuthorizationResult;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The plugin against a fake serve: the JSON it sends, how it reads answers, and what it does when serve fails. */
class KraftAclAuthorizerTest extends FakeServeTest {
    private static final AuthorizationResult ALLOWED = AuthorizationResult.ALLOWED;
    private static final AuthorizationResult DENIED = AuthorizationResult.DENIED;

    @Override
    String logLevel() {
        return "OFF";
    }

    private KraftAclAuthorizer plugin(String urls, String... more) throws Exception {
        plugin = TestPlugins.plugin(dir, urls, more);
        return plugin;
    }

    @Test
    void oneCallForTheWholeListResultsInOrder() throws Exception {
        serve.answer("/v1/authorize", 200, "{\"results\":[\"DENIED\",\"ALLOWED\",\"DENIED\"],\"offset\":7}");
        Action quiet = new Action(AclOperation.DESCRIBE, new ResourcePattern(ResourceType.GROUP, "g",
                PatternType.LITERAL), 3, false, false);
        List<AuthorizationResult> results = plugin(serve.url()).authorize(ctx("alice"),
                List.of(read("a"), read("b"), quiet));
        assertEquals(List.of(DENIED, ALLOWED, DENIED), results);
        List<FakeServe.Received> calls = serve.on("/v1/authorize");
        assertEquals(1, calls.size());
        assertEquals("Bearer " + TOKEN, calls.get(0).authorization());
        assertEquals("{\"principal\":\"User:alice\",\"client_address\":\"10.0.0.7\",\"listener\":\"SASL_PLAINTEXT\","
                + "\"request\":\"Metadata\",\"actions\":[{\"operation\":\"READ\",\"resource_type\":\"TOPIC\","
                + "\"resource_name\":\"a\"},{\"operation\":\"READ\",\"resource_type\":\"TOPIC\",\"resource_name\":"
                + "\"b\"},{\"operation\":\"DESCRIBE\",\"resource_type\":\"GROUP\",\"resource_name\":\"g\","
                + "\"ref_count\":3,\"log_if_allowed\":false,\"log_if_denied\":false}]}", calls.get(0).body());
    }

    @Test
    void superUsersAreDecidedInTheBroker() throws Exception {
        assertEquals(List.of(ALLOWED, ALLOWED), plugin(serve.url()).authorize(ctx("admin"), List.of(read("a"),
                read("b"))));
        assertEquals(ALLOWED, plugin.authorizeByResourceType(ctx("admin"), AclOperation.WRITE, ResourceType.TOPIC));
        assertTrue(serve.received.isEmpty());
    }

    @Test
    void onlyLiteralPatternsAsKafkaDoes() throws Exception {
        Action prefixed = new Action(AclOperation.READ, new ResourcePattern(ResourceType.TOPIC, "a",
                PatternType.PREFIXED), 1, true, true);
        assertThrows(IllegalArgumentException.class, () -> plugin(serve.url()).authorize(ctx("admin"),
                List.of(prefixed)));
    }

    @Test
    void notReadyIsKafkasException() throws Exception {
        serve.answer("/v1/authorize", 503, "{\"error\":{\"code\":\"AUTHORIZER_NOT_READY\",\"message\":\"loading\"}}");
        assertThrows(AuthorizerNotReadyException.class, () -> plugin(serve.url()).authorize(ctx("bob"),
                List.of(read("a"))));
    }

    @Test
    void failsClosedWhenNoServeAnswersInTime() throws Exception {
        serve.answer("/v1/authorize", 200, "{\"results\":[\"ALLOWED\"],\"offset\":1}", 6000);
        serve.answer("/v1/authorize-by-resource-type", 200, "{\"result\":\"ALLOWED\",\"offset\":1}", 6000);
        KraftAclAuthorizer slow = plugin(serve.url());
        long started = System.nanoTime();
        assertEquals(List.of(DENIED), slow.authorize(ctx("bob"), List.of(read("a"))));
        assertTrue(System.nanoTime() - started < TimeUnit.MILLISECONDS.toNanos(4000), "the request timeout bounds it");
        assertEquals(DENIED, slow.authorizeByResourceType(ctx("bob"), AclOperation.WRITE, ResourceType.TOPIC));
        plugin.close();
        KraftAclAuthorizer down = plugin("http://127.0.0.1:" + deadPort());
        assertEquals(List.of(DENIED, DENIED), down.authorize(ctx("bob"), List.of(read("a"), read("b"))));
    }

    @Test
    void failsClosedOnAnswersItCannotUse() throws Exception {
        serve.answer("/v1/authorize", 200, "{\"results\":[\"ALLOWED\"],\"offset\":1}");
        assertEquals(List.of(DENIED, DENIED), plugin(serve.url()).authorize(ctx("bob"), List.of(read("a"),
                read("b"))), "one result for two actions");
        serve.answer("/v1/authorize", 400, "{\"error\":{\"code\":\"INVALID_REQUEST\",\"message\":\"no\"}}");
        assertEquals(List.of(DENIED), plugin.authorize(ctx("bob"), List.of(read("a"))));
        serve.answer("/v1/authorize", 200, "not json");
        assertEquals(List.of(DENIED), plugin.authorize(ctx("bob"), List.of(read("a"))));
    }

    /**
     * An authorize answer of one action that is not exactly one result and an offset is denied, whatever else it
     * holds: more results than asked behind a result that is not a string, the results twice, a result that is
     * not ALLOWED or DENIED, fields of the wrong type, an error body with a 200, a truncated body, text after it.
     * Before, the first five and the text after it were read as ALLOWED.
     */
    @ParameterizedTest
    @ValueSource(strings = {
        "{\"offset\":1,\"results\":[\"ALLOWED\",false]}",
        "{\"offset\":1,\"results\":[\"ALLOWED\",[\"DENIED\"]]}",
        "{\"results\":[\"ALLOWED\",false],\"offset\":1}",
        "{\"results\":[\"ALLOWED\"],\"results\":[],\"offset\":1}",
        "{\"results\":[],\"offset\":1,\"results\":[\"ALLOWED\"]}",
        "{\"results\":[\"ALLOWED\"],\"offset\":1} {\"results\":[\"DENIED\"]}",
        "{\"results\":[\"ALLOWED\"],\"offset\":1",
        "{\"results\":[\"ALLOWED\"]}",
        "{\"results\":[\"ALLOWED\"],\"offset\":\"1\"}",
        "{\"results\":[\"ALLOWED\"],\"offset\":1.5}",
        "{\"results\":\"ALLOWED\",\"offset\":1}",
        "{\"results\":[\"allowed\"],\"offset\":1}",
        "{\"results\":[null],\"offset\":1}",
        "{\"error\":{\"code\":\"INTERNAL\",\"message\":\"oops\"}}",
        "[\"ALLOWED\"]",
        ""})
    void failsClosedOnMalformedAnswers(String body) throws Exception {
        serve.answer("/v1/authorize", 200, body);
        plugin(serve.url(), PluginConfig.CACHE_ENABLED, "false");
        assertEquals(List.of(DENIED), plugin.authorize(ctx("bob"), List.of(read("a"))), body);
    }

    /** The same for authorize-by-resource-type's one result. */
    @ParameterizedTest
    @ValueSource(strings = {
        "{\"result\":\"ALLOWED\"",
        "{\"result\":\"ALLOWED\",\"result\":\"DENIED\",\"offset\":1}",
        "{\"result\":\"ALLOWED\",\"offset\":1} trailing",
        "{\"result\":[\"ALLOWED\"],\"offset\":1}",
        "{\"offset\":1}",
        "{\"error\":{\"code\":\"INTERNAL\",\"message\":\"oops\"}}"})
    void failsClosedOnMalformedByResourceTypeAnswers(String body) throws Exception {
        serve.answer("/v1/authorize-by-resource-type", 200, body);
        plugin(serve.url(), PluginConfig.CACHE_ENABLED, "false");
        assertEquals(DENIED, plugin.authorizeByResourceType(ctx("bob"), AclOperation.WRITE, ResourceType.TOPIC), body);
    }

    /** Fields serve may add later are skipped: the answer is still used. */
    @Test
    void extraFieldsAreSkipped() throws Exception {
        serve.answer("/v1/authorize", 200, "{\"later\":{\"results\":[\"DENIED\"]},\"results\":[\"ALLOWED\"],"
                + "\"offset\":1,\"more\":[1,\"x\",null]}");
        serve.answer("/v1/authorize-by-resource-type", 200, "{\"later\":{\"result\":\"DENIED\"},"
                + "\"result\":\"ALLOWED\",\"offset\":1}");
        plugin(serve.url(), PluginConfig.CACHE_ENABLED, "false");
        assertEquals(List.of(ALLOWED), plugin.authorize(ctx("bob"), List.of(read("a"))));
        assertEquals(ALLOWED, plugin.authorizeByResourceType(ctx("bob"), AclOperation.WRITE, ResourceType.TOPIC));
    }

    @Test
    void failsOverInOrderSkippingAnUnreachableUrl() throws Exception {
        serve.answer("/v1/authorize", 200, "{\"results\":[\"ALLOWED\"],\"offset\":1}");
        try (FakeServe loading = new FakeServe()) {
            loading.answer("/v1/authorize", 503, "{\"error\":{\"code\":\"AUTHORIZER_NOT_READY\",\"message\":\"\"}}");
            String urls = "http://127.0.0.1:" + deadPort() + "," + loading.url() + "," + serve.url();
            KraftAclAuthorizer p = plugin(urls, PluginConfig.CACHE_ENABLED, "false");
            assertEquals(List.of(ALLOWED), p.authorize(ctx("bob"), List.of(read("a"))));
            assertTrue(p.routes().isOpen(0), "the unreachable URL is skipped from now on");
            assertEquals(List.of(ALLOWED), p.authorize(ctx("bob"), List.of(read("a"))));
            assertEquals(2, loading.on("/v1/authorize").size(), "before start-up completed a loading serve is "
                    + "passed over, not skipped");
            assertEquals(2, serve.on("/v1/authorize").size());
        }
    }

    @Test
    void nonEarlyListenersOpenWhenServeIsReady() throws Exception {
        serve.answer("/v1/status", 503, "{\"ready\":false,\"last_applied_offset\":-1,\"acl_count\":0}");
        Endpoint controller = new Endpoint("CONTROLLER", SecurityProtocol.PLAINTEXT, "127.0.0.1", 9093);
        Endpoint client = new Endpoint("CLIENT", SecurityProtocol.SASL_PLAINTEXT, "127.0.0.1", 9092);
        Map<Endpoint, ? extends CompletionStage<Void>> futures = plugin(serve.url()).start(info(List.of(controller,
                client), List.of("CONTROLLER")));
        assertTrue(futures.get(controller).toCompletableFuture().isDone());
        Thread.sleep(200);
        assertFalse(futures.get(client).toCompletableFuture().isDone());
        serve.answer("/v1/status", 200, "{\"ready\":true,\"last_applied_offset\":5,\"acl_count\":3}");
        futures.get(client).toCompletableFuture().get(5, TimeUnit.SECONDS);
    }

    @Test
    void closeFailsTheFutureOfAListenerStillWaiting() throws Exception {
        serve.answer("/v1/status", 503, "{\"ready\":false}");
        Endpoint client = new Endpoint("CLIENT", SecurityProtocol.SASL_PLAINTEXT, "127.0.0.1", 9092);
        CompletionStage<Void> future = plugin(serve.url()).start(info(List.of(client), List.of())).get(client);
        plugin.close();
        assertThrows(ExecutionException.class, () -> future.toCompletableFuture().get(5, TimeUnit.SECONDS));
    }

    /**
     * A create queued behind another on the writer thread when the authorizer closes fails with UNKNOWN_SERVER_ERROR
     * at once: before, close dropped it from the queue and its caller waited on its future forever.
     */
    @Test
    void closeFailsTheCreatesStillQueued() throws Exception {
        serve.answer("/v1/acls/create", 200, "{\"results\":[{\"error_code\":0,\"error\":\"NONE\",\"id\":\"x\"}],"
                + "\"offset\":3}", 1_000);
        plugin(serve.url());
        CompletionStage<AclCreateResult> running = plugin.createAcls(ctx("admin"), List.of(binding("a"))).get(0);
        CompletionStage<AclCreateResult> queued = plugin.createAcls(ctx("admin"), List.of(binding("b"))).get(0);
        waitFor(() -> !serve.on("/v1/acls/create").isEmpty(), "the first create reached serve");
        plugin.close();
        AclCreateResult result = queued.toCompletableFuture().get(500, TimeUnit.MILLISECONDS);
        assertTrue(result.exception().get() instanceof UnknownServerException, result.exception().toString());
        assertTrue(result.exception().get().getMessage().contains("closed"), result.exception().get().getMessage());
        running.toCompletableFuture().get(5, TimeUnit.SECONDS); // the one under way ends with serve's answer
    }

    @Test
    void aclManagementHasKafkasResultsAndErrorCodes() throws Exception {
        serve.answer("/v1/acls/create", 200, "{\"results\":[{\"error_code\":0,\"error\":\"NONE\",\"id\":\"x\"},"
                + "{\"error_code\":42,\"error\":\"INVALID_REQUEST\",\"message\":\"Resource name should not be empty\"}"
                + "],\"offset\":3}");
        AclBinding good = binding("t");
        AclBinding empty = binding("");
        List<AclCreateResult> created = plugin(serve.url()).createAcls(ctx("admin"), List.of(good, empty)).stream()
                .map(f -> f.toCompletableFuture().join()).toList();
        assertFalse(created.get(0).exception().isPresent());
        assertTrue(created.get(1).exception().get() instanceof InvalidRequestException);
        assertEquals("Resource name should not be empty", created.get(1).exception().get().getMessage());

        String acl = "{\"id\":\"x\",\"resource_type\":\"TOPIC\",\"resource_name\":\"t\",\"pattern_type\":\"LITERAL\","
                + "\"principal\":\"User:bob\",\"host\":\"*\",\"operation\":\"READ\",\"permission_type\":\"ALLOW\"}";
        serve.answer("/v1/acls/delete", 200, "{\"results\":[{\"error_code\":0,\"error\":\"NONE\",\"acls\":[" + acl
                + "]}],\"offset\":4}");
        AclDeleteResult deleted = plugin.deleteAcls(ctx("admin"), List.of(AclBindingFilter.ANY)).get(0)
                .toCompletableFuture().join();
        assertEquals(good, deleted.aclBindingDeleteResults().iterator().next().aclBinding());
        assertTrue(serve.on("/v1/acls/delete").get(0).body().contains("\"resource_name\":null"));

        serve.answer("/v1/acls/describe", 200, "{\"acls\":[" + acl + "],\"offset\":4}");
        assertEquals(List.of(good), plugin.acls(new AclBindingFilter(new ResourcePatternFilter(ResourceType.TOPIC,
                "t", PatternType.MATCH), AccessControlEntryFilter.ANY)));
        serve.answer("/v1/acls/count", 200, "{\"count\":12,\"offset\":4}");
        assertEquals(12, plugin.aclCount());
    }

    @Test
    void describeAsksForEveryAcknowledgedWriteAndFallsBackOnAnOlderServe() throws Exception {
        String acl = "{\"id\":\"x\",\"resource_type\":\"TOPIC\",\"resource_name\":\"t\",\"pattern_type\":\"LITERAL\","
                + "\"principal\":\"User:bob\",\"host\":\"*\",\"operation\":\"READ\",\"permission_type\":\"ALLOW\"}";
        serve.answer("/v1/acls/describe", 200, "{\"acls\":[" + acl + "],\"offset\":2}");
        assertEquals(List.of(binding("t")), plugin(serve.url()).acls(AclBindingFilter.ANY));
        assertTrue(serve.on("/v1/acls/describe").get(0).body().contains("\"consistent\":true"));

        // a serve before API 1.6.0 refuses the field it does not know: asked again without it, and not again
        serve.answer("/v1/acls/describe", r -> r.body().contains("consistent")
                ? new FakeServe.Answer(400, "{\"error\":{\"code\":\"INVALID_REQUEST\",\"message\":\"Object contains "
                        + "unknown field `consistent`\",\"field\":\"$.consistent\"}}", 0)
                : new FakeServe.Answer(200, "{\"acls\":[" + acl + "],\"offset\":3}", 0));
        assertEquals(List.of(binding("t")), plugin.acls(AclBindingFilter.ANY));
        assertEquals(List.of(binding("t")), plugin.acls(AclBindingFilter.ANY));
        List<FakeServe.Received> asked = serve.on("/v1/acls/describe");
        assertEquals(4, asked.size());
        assertTrue(asked.get(1).body().contains("consistent"));
        assertFalse(asked.get(2).body().contains("consistent"));
        assertFalse(asked.get(3).body().contains("consistent"), "the refused field was asked again");

        // a serve that cannot read its log's end now: the state it applied, as Kafka's brokers answer
        FakeServe other = new FakeServe();
        try {
            other.answer("/v1/acls/describe", r -> r.body().contains("consistent")
                    ? new FakeServe.Answer(503, "{\"error\":{\"code\":\"OFFSET_NOT_REACHED\",\"message\":\"this serve "
                            + "cannot read its metadata log's end now\",\"field\":\"$.consistent\"}}", 0)
                    : new FakeServe.Answer(200, "{\"acls\":[" + acl + "],\"offset\":3}", 0));
            KraftAclAuthorizer fresh = TestPlugins.plugin(dir, other.url());
            assertEquals(List.of(binding("t")), fresh.acls(AclBindingFilter.ANY));
            List<FakeServe.Received> tried = other.on("/v1/acls/describe");
            assertTrue(tried.get(0).body().contains("consistent"));
            assertFalse(tried.get(tried.size() - 1).body().contains("consistent"));
            fresh.acls(AclBindingFilter.ANY);
            assertTrue(other.on("/v1/acls/describe").get(tried.size()).body().contains("consistent"),
                    "asked consistent again: the log may be back");
            fresh.close();
        } finally {
            other.close();
        }

        // any other refusal is the caller's answer
        serve.answer("/v1/acls/describe", 400, "{\"error\":{\"code\":\"INVALID_REQUEST\",\"message\":\"bad filter\","
                + "\"field\":\"$.filter\"}}");
        assertThrows(InvalidRequestException.class, () -> plugin.acls(AclBindingFilter.ANY));
    }

    @Test
    void aclWritesToABrokerRoleServeFailWithItsReason() throws Exception {
        serve.answer("/v1/acls/create", 421, "{\"error\":{\"code\":\"NOT_CONTROLLER\",\"message\":\"broker role\"}}");
        AclCreateResult result = plugin(serve.url()).createAcls(ctx("admin"), List.of(binding("t"))).get(0)
                .toCompletableFuture().join();
        assertTrue(result.exception().get() instanceof UnknownServerException);
        assertTrue(result.exception().get().getMessage().contains("NOT_CONTROLLER: broker role"));
        serve.answer("/v1/acls/count", 503, "{\"error\":{\"code\":\"AUTHORIZER_NOT_READY\",\"message\":\"\"}}");
        assertEquals(-1, plugin.aclCount());
    }

    @Test
    void configurationErrorsNameTheKey() throws Exception {
        assertKeyRefused(PluginConfig.URLS, Map.of());
        assertKeyRefused(PluginConfig.URLS, Map.of(PluginConfig.URLS, "ftp://127.0.0.1:1"));
        assertKeyRefused(PluginConfig.URLS, Map.of(PluginConfig.URLS, "http://127.0.0.1"));
        Path shortToken = Files.writeString(dir.resolve("short"), "abc\n");
        assertKeyRefused(PluginConfig.TOKEN_FILE, Map.of(PluginConfig.URLS, serve.url(), PluginConfig.TOKEN_FILE,
                shortToken.toString()));
        assertKeyRefused(PluginConfig.REQUEST_TIMEOUT_MS, Map.of(PluginConfig.URLS, serve.url(),
                PluginConfig.REQUEST_TIMEOUT_MS, "0"));
        assertKeyRefused("super.users", Map.of(PluginConfig.URLS, serve.url(), "super.users", "User:a;bob"));
        assertKeyRefused(PluginConfig.CACHE_ENABLED, Map.of(PluginConfig.URLS, serve.url(),
                PluginConfig.CACHE_ENABLED, "maybe"));
        assertKeyRefused(PluginConfig.CACHE_MAX_BYTES, Map.of(PluginConfig.URLS, serve.url(),
                PluginConfig.CACHE_MAX_BYTES, "100"));
        assertKeyRefused(PluginConfig.CACHE_MAX_ENTRIES, Map.of(PluginConfig.URLS, serve.url(),
                PluginConfig.CACHE_MAX_ENTRIES, "0"));
        assertKeyRefused(PluginConfig.HEARTBEAT_MS, Map.of(PluginConfig.URLS, serve.url(),
                PluginConfig.HEARTBEAT_MS, "60001"));
        assertKeyRefused(PluginConfig.HEARTBEAT_GRACE_MS, Map.of(PluginConfig.URLS, serve.url(),
                PluginConfig.HEARTBEAT_GRACE_MS, Integer.toString(Integer.MAX_VALUE)));
        assertKeyRefused(PluginConfig.TRANSPORT, Map.of(PluginConfig.URLS, serve.url(), PluginConfig.TRANSPORT,
                "bogus"));
    }

    private static void assertKeyRefused(String key, Map<String, Object> props) {
        ConfigException e = assertThrows(ConfigException.class, () -> new KraftAclAuthorizer().configure(props));
        assertTrue(e.getMessage().contains(key), e.getMessage());
    }

    private static AclBinding binding(String name) {
        return new AclBinding(new ResourcePattern(ResourceType.TOPIC, name, PatternType.LITERAL),
                new AccessControlEntry("User:bob", "*", AclOperation.READ, AclPermissionType.ALLOW));
    }


    /**
     * The acls-total-count gauge is read on whichever thread reads the metrics (a JMX or reporter thread): it waits
     * at most {@link AclAdmin#COUNT_METRIC_WAIT_MS} for serve, then gives the last count known while the call goes on
     * in the background (one at a time), and serve's answer once it arrives. Before, a reading waited for serve up to
     * kraft.acl.admin.timeout.ms (30 s) per URL.
     */
    @Test
    void theAclCountMetricNeverWaitsLongForServe() throws Exception {
        serve.answer("/v1/acls/count", 200, "{\"count\":12,\"offset\":4}");
        try (Metrics metrics = new Metrics()) {
            plugin(serve.url()).withPluginMetrics(new PluginMetricsImpl(metrics, Map.of("plugin", "kraft-acl")));
            KafkaMetric gauge = metrics.metrics().values().stream()
                    .filter(m -> m.metricName().name().equals("acls-total-count")).findFirst().orElseThrow();
            assertEquals(12, gauge.metricValue(), "a serve that answers at once: its count, at once");
            serve.answer("/v1/acls/count", 200, "{\"count\":13,\"offset\":5}", 3000); // now slow
            long start = System.nanoTime();
            assertEquals(12, gauge.metricValue(), "the last count known");
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertTrue(ms < AclAdmin.COUNT_METRIC_WAIT_MS + 1000, "the reading waited " + ms + " ms");
            assertEquals(12, gauge.metricValue(), "still the last count known while the call is under way");
            assertEquals(2, serve.on("/v1/acls/count").size(), "one call at a time: a reading joins the one under way");
            waitFor(() -> gauge.metricValue().equals(13), "the slow answer is the value once it arrives");
        }
    }
}
