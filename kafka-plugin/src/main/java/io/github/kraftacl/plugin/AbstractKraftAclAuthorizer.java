package io.github.kraftacl.plugin;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.kafka.common.Endpoint;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.errors.AuthorizerNotReadyException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.server.authorizer.AclCreateResult;
import org.apache.kafka.server.authorizer.AclDeleteResult;
import org.apache.kafka.server.authorizer.Action;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.authorizer.AuthorizationResult;
import org.apache.kafka.server.authorizer.Authorizer;
import org.apache.kafka.server.authorizer.AuthorizerServerInfo;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The plugin's authorizer, whatever the Kafka release: every decision and every ACL change is asked of kraft-acl
 * serve over its HTTP API; nothing is cached, so a decision always reflects the ACLs serve has applied.
 *
 * <p>Thread-safe: Kafka calls {@code authorize} from all its request threads at once. Configured once
 * ({@code configure}, then {@code start}); the broker's {@code super.users} are decided here, as Kafka's
 * StandardAuthorizer decides them, so inter-broker and controller traffic never depends on serve. Only Kafka's
 * public API is used (the plugin's build fails otherwise: PublicApiTest). The two classes a broker names in
 * {@code authorizer.class.name} differ only in metrics: {@link KraftAclAuthorizer} (Kafka 4.1 and later) registers
 * them in the broker's plugin metrics (KIP-877's Monitorable, which Kafka 4.0 lacks), {@link
 * KraftAclAuthorizerKafka40} has none.
 */
abstract class AbstractKraftAclAuthorizer implements Authorizer {
    private static final Logger LOG = LoggerFactory.getLogger(AbstractKraftAclAuthorizer.class);
    private static final long WARN_EVERY_MS = 10_000;

    private PluginConfig config;
    private ServeClient client;
    private AclAdmin admin;
    private final List<ReadyWatcher> watchers = Collections.synchronizedList(new ArrayList<>());
    private final Object warnLock = new Object();
    private long lastWarnMs = -WARN_EVERY_MS;
    private long unansweredSinceWarn;
    private volatile boolean failing;
    private volatile DecisionMetrics metrics;

    @Override
    public void configure(Map<String, ?> configs) {
        config = PluginConfig.parse(configs);
        client = new ServeClient(config);
        admin = new AclAdmin(client, config.adminTimeoutMs);
        LOG.info("kraft-acl: decisions and ACL changes go to kraft-acl serve at {}; super.users {} are decided "
                + "in the broker", config.urls, config.superUsers);
    }

    /** Early-start listeners get completed futures; the others complete when serve reports ready (KIP-801). */
    @Override
    public Map<Endpoint, ? extends CompletionStage<Void>> start(AuthorizerServerInfo info) {
        Set<String> early = new HashSet<>(info.earlyStartListeners());
        List<String> waiting = new ArrayList<>();
        for (Endpoint e : info.endpoints()) {
            if (!early.contains(listener(e))) {
                waiting.add(listener(e));
            }
        }
        CompletableFuture<Void> ready = CompletableFuture.completedFuture(null);
        if (!waiting.isEmpty()) {
            ReadyWatcher watcher = new ReadyWatcher(client, config.readyPollMs, config.requestTimeoutMs, waiting);
            watchers.add(watcher);
            ready = watcher.start();
        }
        Map<Endpoint, CompletableFuture<Void>> out = new HashMap<>();
        for (Endpoint e : info.endpoints()) {
            out.put(e, early.contains(listener(e)) ? CompletableFuture.completedFuture(null) : ready);
        }
        return out;
    }

    @Override
    public List<AuthorizationResult> authorize(AuthorizableRequestContext ctx, List<Action> actions) {
        for (Action a : actions) {
            PatternType type = a.resourcePattern().patternType();
            if (type != PatternType.LITERAL) {
                throw new IllegalArgumentException("Only literal resources are supported. Got: " + type);
            }
        }
        String principal = principal(ctx.principal());
        List<AuthorizationResult> results = config.superUsers.contains(principal)
                ? Collections.nCopies(actions.size(), AuthorizationResult.ALLOWED)
                : ask(ctx, principal, actions);
        record(results);
        return results;
    }

    private List<AuthorizationResult> ask(AuthorizableRequestContext ctx, String principal, List<Action> actions) {
        int n = actions.size();
        if (n == 0) {
            return List.of();
        }
        ServeClient.Reply reply;
        try {
            reply = client.post("/v1/authorize", WireJson.authorize(subject(ctx, principal), actions),
                    config.requestTimeoutMs, false);
        } catch (ServeClient.UnavailableException e) {
            return failClosed(principal, n, e.getMessage());
        }
        if (reply.status() == 200) {
            try {
                List<AuthorizationResult> results = WireJson.results(reply.body(), n);
                answered();
                return results;
            } catch (IOException e) {
                return failClosed(principal, n, reply.server() + " answered a body the plugin cannot read: " + e);
            }
        }
        return refused(reply, principal, n, "/v1/authorize");
    }

    /** AUTHORIZER_NOT_READY becomes Kafka's exception; any other error denies every action (fail closed). */
    private List<AuthorizationResult> refused(ServeClient.Reply reply, String principal, int n, String path) {
        WireJson.ErrorBody error = WireJson.error(reply.body());
        if (reply.status() == 503 && error.code().equals("AUTHORIZER_NOT_READY")) {
            LOG.debug("kraft-acl: serve {} has not loaded its ACLs yet: {}", reply.server(), error.message());
            throw new AuthorizerNotReadyException();
        }
        return failClosed(principal, n, reply.server() + " answered " + path + " with HTTP " + reply.status() + " "
                + error.code() + ": " + error.message());
    }

    @Override
    public AuthorizationResult authorizeByResourceType(AuthorizableRequestContext ctx, AclOperation op,
            ResourceType type) {
        checkByResourceTypeArgs(op, type);
        String principal = principal(ctx.principal());
        if (config.superUsers.contains(principal)) {
            return AuthorizationResult.ALLOWED;
        }
        ServeClient.Reply reply;
        try {
            reply = client.post("/v1/authorize-by-resource-type",
                    WireJson.byResourceType(subject(ctx, principal), op, type), config.requestTimeoutMs, false);
        } catch (ServeClient.UnavailableException e) {
            return failClosed(principal, 1, e.getMessage()).get(0);
        }
        if (reply.status() == 200) {
            try {
                AuthorizationResult result = WireJson.result(reply.body());
                answered();
                return result;
            } catch (IOException e) {
                return failClosed(principal, 1, reply.server() + " answered a body the plugin cannot read: " + e)
                        .get(0);
            }
        }
        return refused(reply, principal, 1, "/v1/authorize-by-resource-type").get(0);
    }

    @Override
    public List<? extends CompletionStage<AclCreateResult>> createAcls(AuthorizableRequestContext ctx,
            List<AclBinding> acls) {
        return admin.create(acls);
    }

    @Override
    public List<? extends CompletionStage<AclDeleteResult>> deleteAcls(AuthorizableRequestContext ctx,
            List<AclBindingFilter> filters) {
        return admin.delete(filters);
    }

    @Override
    public Iterable<AclBinding> acls(AclBindingFilter filter) {
        return admin.describe(filter);
    }

    @Override
    public int aclCount() {
        return admin.count();
    }

    /** Decisions are counted in these metrics from now on. */
    final void useMetrics(DecisionMetrics metrics) {
        this.metrics = metrics;
    }

    private void record(List<AuthorizationResult> results) {
        DecisionMetrics m = metrics;
        if (m != null) {
            m.record(results);
        }
    }

    /** Every action DENIED, never ALLOWED: logged at once, then at most once per 10 s with the count in between. */
    private List<AuthorizationResult> failClosed(String principal, int n, String why) {
        DecisionMetrics m = metrics;
        if (m != null) {
            m.unanswered(n);
        }
        failing = true;
        long now = System.currentTimeMillis();
        synchronized (warnLock) {
            unansweredSinceWarn += 1;
            if (now - lastWarnMs >= WARN_EVERY_MS) {
                LOG.warn("kraft-acl: DENIED {} action(s) of {} without a decision (fail closed; {} call(s) denied "
                        + "this way since the last such message): {}", n, principal, unansweredSinceWarn, why);
                lastWarnMs = now;
                unansweredSinceWarn = 0;
            }
        }
        return Collections.nCopies(n, AuthorizationResult.DENIED);
    }

    private void answered() {
        if (failing) {
            failing = false;
            LOG.info("kraft-acl: serve answers again; decisions are serve's once more");
        }
    }

    /**
     * The endpoint's listener name. {@code Endpoint.listener()} arrived in Kafka 4.1 (a 4.0 broker fails on it with
     * NoSuchMethodError); {@code listenerName()}, deprecated since, is in every 4.x release.
     */
    @SuppressWarnings({"deprecation", "removal"})
    private static String listener(Endpoint e) {
        return e.listenerName().orElse("");
    }

    private static String principal(KafkaPrincipal p) {
        return p.getPrincipalType() + ":" + p.getName();
    }

    private static WireJson.Subject subject(AuthorizableRequestContext ctx, String principal) {
        return new WireJson.Subject(principal, ctx.clientAddress().getHostAddress(), ctx.listenerName(),
                requestName(ctx.requestType()));
    }

    private static String requestName(int apiKey) {
        return RequestNames.of(apiKey);
    }

    /** Kafka's argument checks of authorizeByResourceType (IllegalArgumentException, as the broker expects). */
    static void checkByResourceTypeArgs(AclOperation op, ResourceType type) {
        if (type == ResourceType.ANY) {
            throw new IllegalArgumentException("Must specify a non-filter resource type for authorizeByResourceType");
        }
        if (type == ResourceType.UNKNOWN) {
            throw new IllegalArgumentException("Unknown resource type");
        }
        if (op == AclOperation.ANY) {
            throw new IllegalArgumentException("Must specify a non-filter operation type for authorizeByResourceType");
        }
        if (op == AclOperation.UNKNOWN) {
            throw new IllegalArgumentException("Unknown operation type");
        }
    }

    @Override
    public void close() {
        synchronized (watchers) {
            watchers.forEach(ReadyWatcher::close);
        }
        if (admin != null) {
            admin.close();
        }
    }
}
