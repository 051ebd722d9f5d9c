package io.github.kraftacl.plugin;

import java.io.Reader;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.server.authorizer.Action;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.authorizer.AuthorizationResult;

/**
 * The plugin outside a broker, as the broker calls it: {@code authorize(ctx, actions)} on a configured instance.
 *
 * <pre>
 *   PluginBench PROPS decide PRINCIPAL OPERATION TYPE NAME...    one call; prints one result per line
 *   PluginBench PROPS time PRINCIPAL OPERATION TYPE PREFIX N ITERATIONS
 *       ITERATIONS calls of N actions (names PREFIX0 .. PREFIX(N-1)) after a warm-up; prints one JSON line:
 *       {"actions":N,"calls":ITERATIONS,"p50_us":..,"p99_us":..,"mean_us":..,"allowed":..}
 *   PluginBench PROPS concurrent PRINCIPAL OPERATION TYPE PREFIX N THREADS SECONDS
 *       THREADS threads calling authorize() at once (a busy broker), "measuring" then one JSON line
 *   PluginBench PROPS transports PRINCIPAL OPERATION TYPE PREFIX N CALLS
 *       the same request over the plugin's decision frames and over HTTP (HttpConnections), alternating
 *   PluginBench PROPS hit PRINCIPAL OPERATION TYPE PREFIX N CALLS
 *       the same N actions answered from the plugin's memory, beside Kafka's StandardAuthorizer holding every ACL
 *       serve has (CacheBench.hit)
 *   PluginBench PROPS invalidation PRINCIPAL OPERATION TYPE PREFIX N CHANGES PLUGINS ADMIN_TOKEN
 *       PLUGINS plugin instances, then CHANGES ACL creations: the lag to every plugin dropping older decisions
 *   PluginBench PROPS staleness PRINCIPAL OPERATION TYPE PREFIX N
 *       a line each time the change feed's view turns usable or unusable, until stdin closes
 * </pre>
 * PROPS is a properties file of the broker keys the plugin reads (kraft.acl.*, super.users). Used by
 * {@code kraft-acl bench --suite plugin} and the TLS test; not part of the plugin jar.
 */
public final class PluginBench {
    private static final int WARM_UP_S = 20;

    private PluginBench() {}

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        try (Reader in = Files.newBufferedReader(Path.of(args[0]))) {
            props.load(in);
        }
        Map<String, Object> configs = new HashMap<>();
        props.forEach((k, v) -> configs.put(k.toString(), v));
        KraftAclAuthorizer plugin = new KraftAclAuthorizer();
        plugin.configure(configs);
        try {
            AuthorizableRequestContext ctx = context(args[2]);
            AclOperation op = AclOperation.fromString(args[3]);
            ResourceType type = ResourceType.fromString(args[4]);
            if (args[1].equals("decide")) {
                List<Action> actions = new ArrayList<>();
                for (String name : Arrays.copyOfRange(args, 5, args.length)) {
                    actions.add(action(op, type, name));
                }
                plugin.authorize(ctx, actions).forEach(System.out::println);
            } else {
                List<Action> actions = new ArrayList<>();
                for (int i = 0; i < Integer.parseInt(args[6]); i++) {
                    actions.add(action(op, type, args[5] + i));
                }
                if (args[1].equals("concurrent")) {
                    concurrent(plugin, ctx, actions, Integer.parseInt(args[7]), Integer.parseInt(args[8]));
                } else if (args[1].equals("transports")) {
                    transports(PluginConfig.parse(configs), args[2], actions, Integer.parseInt(args[7]));
                } else if (args[1].equals("hit")) {
                    CacheBench.hit(plugin, configs, ctx, actions, Integer.parseInt(args[7]));
                } else if (args[1].equals("staleness")) {
                    CacheBench.staleness(plugin);
                } else if (args[1].equals("invalidation")) {
                    CacheBench.invalidation(configs, args[9], Integer.parseInt(args[8]), Integer.parseInt(args[7]),
                            ctx, actions);
                } else {
                    time(plugin, ctx, actions, Integer.parseInt(args[7]));
                }
            }
        } finally {
            plugin.close();
        }
    }

    private static void time(KraftAclAuthorizer plugin, AuthorizableRequestContext ctx, List<Action> actions,
            int iterations) {
        // Warm-up, as in a broker that has served for a while: connections and the JIT (the JSON code reaches its
        // steady 2 us per one-action call only after some 100,000 calls).
        long warm = System.nanoTime() + TimeUnit.SECONDS.toNanos(WARM_UP_S);
        for (int i = 0; i < 1000 || System.nanoTime() < warm; i++) {
            plugin.authorize(ctx, actions);
        }
        long[] nanos = new long[iterations];
        long allowed = 0;
        for (int i = 0; i < iterations; i++) {
            long start = System.nanoTime();
            List<AuthorizationResult> results = plugin.authorize(ctx, actions);
            nanos[i] = System.nanoTime() - start;
            allowed += results.stream().filter(r -> r == AuthorizationResult.ALLOWED).count();
        }
        long total = Arrays.stream(nanos).sum();
        Arrays.sort(nanos);
        System.out.printf(Locale.ROOT, "{\"actions\":%d,\"calls\":%d,\"p50_us\":%.1f,\"p99_us\":%.1f,"
                + "\"mean_us\":%.1f,\"allowed\":%d}%n", actions.size(), iterations, nanos[iterations / 2] / 1e3,
                nanos[Math.min(iterations - 1, iterations * 99 / 100)] / 1e3, total / 1e3 / iterations, allowed);
    }

    /**
     * The same authorize request through the plugin's two transports, decision frames ({@link FrameClient}, the
     * default) and HTTP ({@link HttpConnections}, {@code kraft.acl.serve.transport=http}), in alternating
     * rounds of 100 calls in this one JVM, so that both see the same machine; prints
     * {"frames": {"p50_us", "p99_us"}, "HttpURLConnection": {...}} (the HTTP key keeps the name it had when the
     * plugin's HTTP went through the JDK's HttpURLConnection, so results compare with earlier ones).
     */
    private static void transports(PluginConfig config, String principal, List<Action> actions, int calls)
            throws Exception {
        byte[] body = WireJson.authorize(new WireJson.Subject(principal, "127.0.0.1", "SASL_PLAINTEXT", "Metadata"),
                actions);
        if (!config.frames) {
            throw new IllegalArgumentException("the transports comparison needs kraft.acl.serve.transport=frames");
        }
        int timeout = config.requestTimeoutMs;
        try (ServeClient plugin = new ServeClient(config)) {
            Call viaFrames = () -> plugin.decide("/v1/authorize", body, timeout).status();
            Call viaHttp = () -> plugin.post("/v1/authorize", body, timeout, false).status();
            int rounds = Math.max(4, calls / 100);
            long[] frames = new long[rounds * 100];
            long[] http = new long[rounds * 100];
            long warm = System.nanoTime() + TimeUnit.SECONDS.toNanos(WARM_UP_S);
            while (System.nanoTime() < warm) {
                round(viaFrames, null, 0);
                round(viaHttp, null, 0);
            }
            for (int r = 0; r < rounds; r++) {
                round(viaFrames, frames, r * 100);
                round(viaHttp, http, r * 100);
            }
            System.out.printf(Locale.ROOT, "{\"frames\":%s,\"HttpURLConnection\":%s}%n", summary(frames),
                    summary(http));
        }
    }

    /**
     * THREADS broker threads calling authorize() at once for SECONDS (after a warm-up), as a busy broker's request
     * handlers do; prints "measuring" when the measured window starts (the caller reads serve's CPU then) and one
     * JSON line at its end: {"threads", "calls", "seconds", "calls_per_s"}.
     */
    private static void concurrent(KraftAclAuthorizer plugin, AuthorizableRequestContext ctx, List<Action> actions,
            int threads, int seconds) throws InterruptedException {
        long warm = System.nanoTime() + TimeUnit.SECONDS.toNanos(WARM_UP_S / 4);
        while (System.nanoTime() < warm) {
            plugin.authorize(ctx, actions);
        }
        CountDownLatch go = new CountDownLatch(1);
        LongAdder calls = new LongAdder();
        long[] window = new long[1];
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            Thread worker = new Thread(() -> {
                try {
                    go.await();
                } catch (InterruptedException e) {
                    return;
                }
                while (System.nanoTime() < window[0]) {
                    plugin.authorize(ctx, actions);
                    calls.increment();
                }
            });
            worker.start();
            workers.add(worker);
        }
        System.out.println("measuring");
        System.out.flush();
        long start = System.nanoTime();
        window[0] = start + TimeUnit.SECONDS.toNanos(seconds);
        go.countDown();
        for (Thread worker : workers) {
            worker.join();
        }
        double elapsed = (System.nanoTime() - start) / 1e9;
        System.out.printf(Locale.ROOT, "{\"threads\":%d,\"calls\":%d,\"seconds\":%.2f,\"calls_per_s\":%.0f}%n",
                threads, calls.sum(), elapsed, calls.sum() / elapsed);
    }

    /** A call answering an HTTP status. */
    private interface Call {
        int status() throws Exception;
    }

    /** 100 calls, their nanoseconds stored from {@code at} (not stored when {@code into} is null). */
    private static void round(Call call, long[] into, int at) throws Exception {
        for (int i = 0; i < 100; i++) {
            long start = System.nanoTime();
            if (call.status() != 200) {
                throw new IllegalStateException("serve refused the request");
            }
            if (into != null) {
                into[at + i] = System.nanoTime() - start;
            }
        }
    }

    private static String summary(long[] nanos) {
        Arrays.sort(nanos);
        return String.format(Locale.ROOT, "{\"p50_us\":%.1f,\"p99_us\":%.1f}", nanos[nanos.length / 2] / 1e3,
                nanos[nanos.length * 99 / 100] / 1e3);
    }

    private static Action action(AclOperation op, ResourceType type, String name) {
        return new Action(op, new ResourcePattern(type, name, PatternType.LITERAL), 1, true, false);
    }

    private static AuthorizableRequestContext context(String principal) throws Exception {
        KafkaPrincipal p = new KafkaPrincipal(principal.substring(0, principal.indexOf(':')),
                principal.substring(principal.indexOf(':') + 1));
        InetAddress address = InetAddress.getByName("127.0.0.1");
        return new AuthorizableRequestContext() {
            public String listenerName() { return "SASL_PLAINTEXT"; }
            public SecurityProtocol securityProtocol() { return SecurityProtocol.SASL_PLAINTEXT; }
            public KafkaPrincipal principal() { return p; }
            public InetAddress clientAddress() { return address; }
            public int requestType() { return ApiKeys.METADATA.id; }
            public int requestVersion() { return 12; }
            public String clientId() { return "bench"; }
            public int correlationId() { return 0; }
        };
    }
}
