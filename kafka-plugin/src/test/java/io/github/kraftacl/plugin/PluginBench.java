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
 * </pre>
 * PROPS is a properties file of the broker keys the plugin reads (kraft.acl.*, super.users). Used by
 * {@code kraft-acl bench --suite plugin} and the TLS test; not part of the plugin jar.
 */
public final class PluginBench {
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
                time(plugin, ctx, actions, Integer.parseInt(args[7]));
            }
        } finally {
            plugin.close();
        }
    }

    private static void time(KraftAclAuthorizer plugin, AuthorizableRequestContext ctx, List<Action> actions,
            int iterations) {
        for (int i = 0; i < Math.max(200, iterations / 5); i++) {
            plugin.authorize(ctx, actions); // warm-up: JIT, connections
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
