package io.github.kraftacl.plugin;

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
 * The plugin's authorizer, whatever the Kafka release: decisions come from kraft-acl serve (remembered in the JVM
 * while serve's change feed proves them current: {@link Decisions}), and every ACL change is asked of serve.
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
    static final String SUPER_USER_RULE = "SuperUser";

    private PluginConfig config;
    private ServeClient client;
    private AclAdmin admin;
    private HealthProbe probe;
    private DecisionCache cache;
    private ChangeFeed feed;
    private final CacheMetrics cacheMetrics = new CacheMetrics();
    private Decisions decisions;
    private final List<ReadyWatcher> watchers = Collections.synchronizedList(new ArrayList<>());
    private volatile DecisionMetrics metrics;

    @Override
    public void configure(Map<String, ?> configs) {
        config = PluginConfig.parse(configs);
        client = new ServeClient(config);
        admin = new AclAdmin(client, config.adminTimeoutMs);
        probe = new HealthProbe(client, config.probeIntervalMs, config.requestTimeoutMs).start();
        client.routes().onOpen(probe::wake);
        if (config.cacheEnabled) {
            cache = new DecisionCache(config.cacheMaxEntries, config.cacheMaxBytes);
            feed = new ChangeFeed(client, cache, config.heartbeatMs, config.heartbeatGraceMs);
            feed.listen(cacheMetrics);
            feed.start();
        }
        decisions = new Decisions(client, config.requestTimeoutMs, cache, feed, cacheMetrics);
        LOG.info("kraft-acl: decisions and ACL changes go to kraft-acl serve at {} (in this order, a serve that "
                + "fails skipped until it answers again); super.users {} are decided in the broker; {}", config.urls,
                config.superUsers, config.cacheEnabled
                        ? "decisions are remembered while serve's change feed proves them current (at most "
                        + config.stalenessBoundMs() + " ms after serve stops answering; " + cache.bounds() + ")"
                        : "no decision is remembered (kraft.acl.cache.enabled=false)");
    }

    /**
     * Early-start listeners get completed futures; the others complete when serve reports ready (KIP-801). Once
     * serve has been ready, a serve that is loading again is skipped, never answered with
     * AuthorizerNotReadyException.
     */
    @Override
    public Map<Endpoint, ? extends CompletionStage<Void>> start(AuthorizerServerInfo info) {
        Set<String> early = new HashSet<>(info.earlyStartListeners());
        List<String> waiting = new ArrayList<>();
        for (Endpoint e : info.endpoints()) {
            if (!early.contains(listener(e))) {
                waiting.add(listener(e));
            }
        }
        ReadyWatcher watcher = new ReadyWatcher(client, config.readyPollMs, config.requestTimeoutMs, waiting);
        watchers.add(watcher);
        CompletableFuture<Void> ready = watcher.start();
        ready.thenRun(client::started);
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
        KafkaPrincipal principal = ctx.principal();
        List<AuthorizationResult> results;
        if (isSuperUser(principal)) {
            results = Collections.nCopies(actions.size(), AuthorizationResult.ALLOWED);
            for (Action a : actions) {
                AuditLog.log(principal, ctx, a, true, SUPER_USER_RULE);
            }
        } else {
            results = decisions.authorize(ctx, principal, actions);
        }
        record(results);
        return results;
    }

    @Override
    public AuthorizationResult authorizeByResourceType(AuthorizableRequestContext ctx, AclOperation op,
            ResourceType type) {
        checkByResourceTypeArgs(op, type);
        KafkaPrincipal principal = ctx.principal();
        if (isSuperUser(principal)) {
            return AuthorizationResult.ALLOWED;
        }
        return decisions.byResourceType(ctx, principal, op, type);
    }

    private boolean isSuperUser(KafkaPrincipal p) {
        return !config.superUsers.isEmpty() && config.superUsers.contains(p.getPrincipalType() + ":" + p.getName());
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

    /** The acls-total-count metric: serve's count, never waiting long for it ({@link AclAdmin#countForMetric}). */
    final int aclCountForMetric() {
        return admin.countForMetric(AclAdmin.COUNT_METRIC_WAIT_MS);
    }

    /** Decisions are counted in these metrics from now on. */
    final void useMetrics(DecisionMetrics metrics) {
        this.metrics = metrics;
        decisions.useMetrics(metrics);
    }

    /** The decision cache's figures (kept whether or not the broker offers metrics). */
    final CacheMetrics cacheMetrics() {
        return cacheMetrics;
    }

    /** The decision cache, or null when it is off. */
    final DecisionCache cache() {
        return cache;
    }

    /** The change feed, or null when the cache is off. */
    final ChangeFeed feed() {
        return feed;
    }

    /** The serve URLs and which of them are skipped. */
    final ServeRoutes routes() {
        return client.routes();
    }

    private void record(List<AuthorizationResult> results) {
        DecisionMetrics m = metrics;
        if (m != null) {
            m.record(results);
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
        if (feed != null) {
            feed.close();
        }
        if (probe != null) {
            probe.close();
        }
        if (admin != null) {
            admin.close();
        }
        if (client != null) {
            client.close();
        }
    }
}
