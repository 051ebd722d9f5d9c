package io.github.kraftacl.plugin;

import java.io.IOException;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.ClusterResource;
import org.apache.kafka.common.Endpoint;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.internals.PluginMetricsImpl;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.metadata.authorizer.StandardAcl;
import org.apache.kafka.metadata.authorizer.StandardAuthorizer;
import org.apache.kafka.server.authorizer.Action;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.authorizer.AuthorizationResult;
import org.apache.kafka.server.authorizer.Authorizer;
import org.apache.kafka.server.authorizer.AuthorizerServerInfo;

/**
 * The decision cache measured in one JVM against a real serve (PluginBench's {@code hit} and {@code invalidation}
 * modes): a repeated decision through the plugin beside Kafka's StandardAuthorizer loaded with the same ACLs, and
 * the time from serve applying an ACL change to every plugin instance dropping the decisions made before it.
 */
final class CacheBench {
    private static final int WARM_UP_S = 20;

    private CacheBench() {}

    /**
     * {@code calls} timed calls of the same actions through the plugin (answered from memory) and through
     * StandardAuthorizer holding every ACL serve has, alternating rounds of 1,000 calls; both with their broker
     * metrics and the audit logger at INFO, as in a broker. Prints {"plugin": {...}, "standard": {...}}.
     */
    static void hit(KraftAclAuthorizer plugin, Map<String, Object> configs, AuthorizableRequestContext ctx,
            List<Action> actions, int calls) throws Exception {
        CapturedLogs.level("INFO");
        plugin.withPluginMetrics(new PluginMetricsImpl(new Metrics(), Map.of("plugin", "kraft-acl")));
        waitUsable(plugin);
        StandardAuthorizer standard = standard(plugin, configs);
        long warm = System.nanoTime() + TimeUnit.SECONDS.toNanos(WARM_UP_S);
        while (System.nanoTime() < warm) {
            round(plugin, ctx, actions, null, 0);
            round(standard, ctx, actions, null, 0);
        }
        long hitsBefore = plugin.cacheMetrics().hits();
        int rounds = Math.max(1, calls / 1000);
        long[] viaPlugin = new long[rounds * 1000];
        long[] viaStandard = new long[rounds * 1000];
        List<AuthorizationResult> a = null;
        List<AuthorizationResult> b = null;
        for (int r = 0; r < rounds; r++) {
            a = round(plugin, ctx, actions, viaPlugin, r * 1000);
            b = round(standard, ctx, actions, viaStandard, r * 1000);
        }
        if (!a.equals(b)) {
            throw new IllegalStateException("the plugin answered " + a + ", StandardAuthorizer " + b);
        }
        long hits = plugin.cacheMetrics().hits() - hitsBefore;
        System.out.printf(Locale.ROOT, "{\"actions\":%d,\"calls\":%d,\"acls\":%d,\"plugin\":%s,\"standard\":%s,"
                + "\"plugin_hits_per_action\":%.3f,\"results\":\"%s\"}%n", actions.size(), viaPlugin.length,
                standard.aclCount(), summary(viaPlugin), summary(viaStandard),
                hits / (double) (viaPlugin.length * (long) actions.size()), a);
        standard.close();
    }

    private static List<AuthorizationResult> round(Authorizer authorizer, AuthorizableRequestContext ctx,
            List<Action> actions, long[] into, int at) {
        List<AuthorizationResult> last = null;
        for (int i = 0; i < 1000; i++) {
            long start = System.nanoTime();
            last = authorizer.authorize(ctx, actions);
            if (into != null) {
                into[at + i] = System.nanoTime() - start;
            }
        }
        return last;
    }

    /** Kafka's StandardAuthorizer with every ACL serve has (read through the plugin), loaded as a broker loads it. */
    private static StandardAuthorizer standard(KraftAclAuthorizer plugin, Map<String, Object> configs) {
        StandardAuthorizer standard = new StandardAuthorizer();
        standard.configure(configs);
        standard.withPluginMetrics(new PluginMetricsImpl(new Metrics(), Map.of("plugin", "standard")));
        Endpoint client = new Endpoint("CLIENT", SecurityProtocol.SASL_PLAINTEXT, "127.0.0.1", 9092);
        standard.start(new AuthorizerServerInfo() {
            public ClusterResource clusterResource() { return new ClusterResource("bench"); }
            public int brokerId() { return 1; }
            public java.util.Collection<Endpoint> endpoints() { return List.of(client); }
            public Endpoint interBrokerEndpoint() { return client; }
            public java.util.Collection<String> earlyStartListeners() { return List.of(); }
        });
        Map<Uuid, StandardAcl> acls = new HashMap<>();
        for (AclBinding b : plugin.acls(AclBindingFilter.ANY)) {
            acls.put(Uuid.randomUuid(), StandardAcl.fromAclBinding(b));
        }
        standard.loadSnapshot(acls);
        standard.completeInitialLoad();
        return standard;
    }

    /**
     * {@code plugins} plugin instances (each with its own change feed, as brokers have), each remembering a
     * decision; then {@code changes} ACL creations through serve's API, one at a time: per change, the longest of
     * the plugins' lags from serve applying it to dropping the decisions made before it. Prints
     * {"plugins": N, "changes": M, "p50_ms", "p99_ms", "max_ms"}.
     */
    static void invalidation(Map<String, Object> configs, String adminToken, int plugins, int changes,
            AuthorizableRequestContext ctx, List<Action> actions) throws Exception {
        List<KraftAclAuthorizer> all = new ArrayList<>();
        Map<Long, long[]> drops = new ConcurrentHashMap<>(); // acl offset -> {applied us, latest drop us, plugins}
        try {
            for (int i = 0; i < plugins; i++) {
                KraftAclAuthorizer p = new KraftAclAuthorizer();
                p.configure(configs);
                all.add(p);
                p.feed().listen((view, reset, appliedUs, droppedUs) -> {
                    if (appliedUs > 0) {
                        drops.merge(view.minOffset(), new long[] {appliedUs, droppedUs, 1},
                                (x, y) -> new long[] {x[0], Math.max(x[1], y[1]), x[2] + y[2]});
                    }
                });
                waitUsable(p);
                p.authorize(ctx, actions);
            }
            String url = configs.get(PluginConfig.URLS).toString().split(",")[0].trim();
            double[] lagMs = new double[changes];
            for (int c = 0; c < changes; c++) {
                long offset = createAcl(url, adminToken, "bench-invalidation-" + c + "-" + System.nanoTime());
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                long[] seen;
                while ((seen = drops.get(offset)) == null || seen[2] < plugins) {
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException("not every plugin dropped its decisions for offset " + offset
                                + " within 30 s: " + Arrays.toString(seen));
                    }
                    Thread.sleep(1);
                }
                lagMs[c] = (seen[1] - seen[0]) / 1000.0;
                Thread.sleep(20);
            }
            Arrays.sort(lagMs);
            System.out.printf(Locale.ROOT, "{\"plugins\":%d,\"changes\":%d,\"p50_ms\":%.2f,\"p99_ms\":%.2f,"
                    + "\"max_ms\":%.2f}%n", plugins, changes, lagMs[changes / 2],
                    lagMs[Math.min(changes - 1, changes * 99 / 100)], lagMs[changes - 1]);
        } finally {
            all.forEach(KraftAclAuthorizer::close);
        }
    }

    /**
     * The staleness bound as it happens: prints {"usable": true|false, "wall_us": ...} each time the plugin's change
     * feed view turns usable or unusable (checked every 0.2 ms), until stdin closes; the benchmark freezes and thaws
     * serve in between and reads how long after the freeze remembered decisions stopped being used.
     */
    static void staleness(KraftAclAuthorizer plugin) throws Exception {
        boolean was = false;
        Thread stop = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {
                    // until the benchmark closes our stdin
                }
            } catch (IOException e) {
                // closed
            }
            System.exit(0);
        });
        stop.setDaemon(true);
        stop.start();
        while (true) {
            boolean now = plugin.feed().view().usable(System.nanoTime());
            if (now != was) {
                System.out.printf(Locale.ROOT, "{\"usable\":%b,\"wall_us\":%d}%n", now, ChangeFeed.wallMicros());
                System.out.flush();
                was = now;
            }
            Thread.sleep(0, 200_000);
        }
    }

    /** Create one ACL through serve's API as its admin; the offset of the batch. */
    private static long createAcl(String url, String token, String name) throws IOException {
        HttpURLConnection c = (HttpURLConnection) new URL(url + "/v1/acls/create").openConnection();
        c.setRequestMethod("POST");
        c.setDoOutput(true);
        c.setRequestProperty("Authorization", "Bearer " + token);
        c.setRequestProperty("Content-Type", "application/json");
        byte[] body = ("{\"acls\":[{\"resource_type\":\"TOPIC\",\"resource_name\":\"" + name + "\",\"pattern_type\":"
                + "\"LITERAL\",\"principal\":\"User:bench-nobody\",\"host\":\"*\",\"operation\":\"READ\","
                + "\"permission_type\":\"ALLOW\"}]}").getBytes(StandardCharsets.UTF_8);
        try (OutputStream out = c.getOutputStream()) {
            out.write(body);
        }
        if (c.getResponseCode() != 200) {
            throw new IOException("serve refused the ACL: HTTP " + c.getResponseCode());
        }
        String answer = new String(c.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        int at = answer.lastIndexOf("\"offset\":");
        return Long.parseLong(answer.substring(at + 9).replaceAll("[^0-9].*$", ""));
    }

    private static void waitUsable(KraftAclAuthorizer plugin) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!plugin.feed().view().usable(System.nanoTime())) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the plugin's change feed did not connect within 30 s (does serve "
                        + "offer GET /v1/changes?)");
            }
            Thread.sleep(10);
        }
    }

    private static String summary(long[] nanos) {
        long total = Arrays.stream(nanos).sum();
        long[] sorted = nanos.clone();
        Arrays.sort(sorted);
        return String.format(Locale.ROOT, "{\"p50_us\":%.3f,\"p99_us\":%.3f,\"mean_us\":%.3f}",
                sorted[sorted.length / 2] / 1e3, sorted[Math.min(sorted.length - 1, sorted.length * 99 / 100)] / 1e3,
                total / 1e3 / sorted.length);
    }
}
