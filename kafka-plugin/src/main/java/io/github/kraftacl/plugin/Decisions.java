package io.github.kraftacl.plugin;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.errors.AuthorizerNotReadyException;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.server.authorizer.Action;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.authorizer.AuthorizationResult;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The decisions of non-super users: answered from the decisions serve made recently while the change feed proves
 * them current, else asked of serve (one call for all the actions not remembered); denied when no serve answers.
 *
 * <p>Thread-safe: Kafka calls it from all its request threads at once. A decision is remembered with the feed view
 * read <em>before</em> serve was asked and the offset serve decided it at, so one that raced an ACL change is stored
 * but never used: the view that reports the change requires a newer offset (offsets are compared, not arrival
 * order). While the change feed is connected, every decision is also written to the broker's
 * {@code kafka.authorizer.logger} as StandardAuthorizer writes it, with the rule serve reported (asked only for the
 * decisions the logger's level prints), so the broker's audit log is complete; serve logs the ones it decides.
 */
final class Decisions {
    private static final Logger LOG = LoggerFactory.getLogger(Decisions.class);
    private static final AuthorizationResult ALLOWED = AuthorizationResult.ALLOWED;
    private static final AuthorizationResult DENIED = AuthorizationResult.DENIED;
    static final String FAIL_CLOSED_RULE = "FailClosed(no kraft-acl serve answered)";
    private static final long WARN_EVERY_MS = 10_000;

    private final ServeClient client;
    private final int timeoutMs;
    private final DecisionCache cache; // null when kraft.acl.cache.enabled=false
    private final ChangeFeed feed; // null with the cache
    private final CacheMetrics cacheMetrics;
    private final RateLimitedLog failClosedLog = new RateLimitedLog(WARN_EVERY_MS);
    private volatile DecisionMetrics metrics;
    private volatile boolean failing;

    Decisions(ServeClient client, int timeoutMs, DecisionCache cache, ChangeFeed feed, CacheMetrics cacheMetrics) {
        this.client = client;
        this.timeoutMs = timeoutMs;
        this.cache = cache;
        this.feed = feed;
        this.cacheMetrics = cacheMetrics;
    }

    /** Count decisions in these metrics from now on. */
    void useMetrics(DecisionMetrics metrics) {
        this.metrics = metrics;
    }

    /** The decisions of one request's actions (LITERAL patterns, checked by the caller), in order. */
    List<AuthorizationResult> authorize(AuthorizableRequestContext ctx, KafkaPrincipal principal, List<Action> actions) {
        int n = actions.size();
        if (n == 0) {
            return List.of();
        }
        if (cache == null) {
            DecisionJson.Decided d = ask(ctx, principal, actions, null);
            if (d == null) {
                for (Action a : actions) {
                    AuditLog.log(principal, ctx, a, false, FAIL_CLOSED_RULE);
                }
                return Collections.nCopies(n, DENIED);
            }
            return d.results();
        }
        FeedView view = feed.view();
        // Rules are asked only of a serve whose change feed is connected (one new enough to report them), and only
        // those the audit logger's level will print: at Kafka's default (INFO), the denials'.
        AuditLog.Rules need = view.server() >= 0 ? AuditLog.rulesNeeded() : AuditLog.Rules.NONE;
        Object host = DecisionKey.host(ctx.clientAddress());
        // nothing remembered of a serve the calls skip (README): one that answered 503 STALE_STATE after a freeze
        // may hold the feed's poll until its heartbeat, and the view would still say usable until then
        boolean usable = view.usable(System.nanoTime()) && !client.routes().isOpen(view.server());
        AuthorizationResult[] results = new AuthorizationResult[n];
        String[] ruleOf = new String[n];
        DecisionKey[] keys = new DecisionKey[n];
        int[] missing = new int[n];
        int misses = 0;
        for (int i = 0; i < n; i++) {
            DecisionKey key = DecisionKey.of(principal, host, actions.get(i));
            keys[i] = key;
            Remembered r = usable ? cache.get(key) : null;
            if (r != null && view.current(r.generation(), r.offset()) && (r.rule() != null || !need.needs(r.result()))) {
                results[i] = r.result();
                ruleOf[i] = r.rule();
            } else {
                missing[misses++] = i;
            }
        }
        cacheMetrics.lookedUp(n - misses, misses);
        if (misses > 0) {
            fill(ctx, principal, actions, view, need, keys, missing, misses, results, ruleOf);
        }
        if (need != AuditLog.Rules.NONE) {
            for (int i = 0; i < n; i++) {
                AuditLog.log(principal, ctx, actions.get(i), results[i] == ALLOWED, ruleOf[i]);
            }
        }
        return Arrays.asList(results);
    }

    /** Ask serve for the actions not remembered; remember its answers when they came from the feed's serve. */
    private void fill(AuthorizableRequestContext ctx, KafkaPrincipal principal, List<Action> actions, FeedView view,
            AuditLog.Rules need, DecisionKey[] keys, int[] missing, int misses, AuthorizationResult[] results,
            String[] ruleOf) {
        List<Action> asked = actions;
        if (misses < actions.size()) {
            asked = new ArrayList<>(misses);
            for (int j = 0; j < misses; j++) {
                asked.add(actions.get(missing[j]));
            }
        }
        DecisionJson.Decided d = ask(ctx, principal, asked, need.wire);
        if (d == null) { // denied by the broker alone: audited here whatever serve could say
            for (int j = 0; j < misses; j++) {
                results[missing[j]] = DENIED;
                ruleOf[missing[j]] = FAIL_CLOSED_RULE;
                if (need == AuditLog.Rules.NONE) {
                    AuditLog.log(principal, ctx, actions.get(missing[j]), false, FAIL_CLOSED_RULE);
                }
            }
            return;
        }
        boolean remember = d.server() >= 0 && d.server() == view.server();
        for (int j = 0; j < misses; j++) {
            int i = missing[j];
            AuthorizationResult result = d.results().get(j);
            String rule = d.rules() == null ? null : d.rules().get(j);
            results[i] = result;
            ruleOf[i] = rule;
            if (remember) {
                cache.put(keys[i], new Remembered(result, d.offset(), view.generation(), rule));
            }
        }
    }

    /** serve's decisions of these actions, or null after denying them all (fail closed, logged). */
    private DecisionJson.Decided ask(AuthorizableRequestContext ctx, KafkaPrincipal principal, List<Action> actions,
            String rules) {
        int n = actions.size();
        ServeClient.Reply reply;
        try {
            reply = client.decide("/v1/authorize", WireJson.authorize(subject(ctx, principal), actions, rules),
                    timeoutMs);
        } catch (ServeClient.UnavailableException e) {
            return failClosed(principal, n, e.getMessage());
        }
        if (reply.status() == 200) {
            try {
                DecisionJson.Decided d = DecisionJson.decided(reply.body(), n, rules != null)
                        .from(client.routes().indexOf(reply.server()));
                answered();
                return d;
            } catch (IOException e) {
                return failClosed(principal, n, reply.server() + " answered a body the plugin cannot read: " + e);
            }
        }
        refused(reply, "/v1/authorize");
        return failClosed(principal, n, reply.server() + " answered /v1/authorize with HTTP " + reply.status() + " "
                + WireJson.error(reply.body()).code() + ": " + WireJson.error(reply.body()).message());
    }

    /** KIP-679's authorizeByResourceType, asked of serve (not remembered). */
    AuthorizationResult byResourceType(AuthorizableRequestContext ctx, KafkaPrincipal principal, AclOperation op,
            ResourceType type) {
        ServeClient.Reply reply;
        try {
            reply = client.decide("/v1/authorize-by-resource-type",
                    WireJson.byResourceType(subject(ctx, principal), op, type), timeoutMs);
        } catch (ServeClient.UnavailableException e) {
            failClosed(principal, 1, e.getMessage());
            return DENIED;
        }
        if (reply.status() == 200) {
            try {
                AuthorizationResult result = DecisionJson.result(reply.body());
                answered();
                return result;
            } catch (IOException e) {
                failClosed(principal, 1, reply.server() + " answered a body the plugin cannot read: " + e);
                return DENIED;
            }
        }
        refused(reply, "/v1/authorize-by-resource-type");
        failClosed(principal, 1, reply.server() + " answered /v1/authorize-by-resource-type with HTTP "
                + reply.status() + " " + WireJson.error(reply.body()).code());
        return DENIED;
    }

    /**
     * Before the broker's start-up completed, AUTHORIZER_NOT_READY is Kafka's exception (KIP-801: early-start
     * listeners answer it while serve loads); after, a loading serve is only one more serve that did not answer.
     */
    private void refused(ServeClient.Reply reply, String path) {
        WireJson.ErrorBody error = WireJson.error(reply.body());
        if (reply.status() == 503 && error.code().equals("AUTHORIZER_NOT_READY") && !client.isStarted()) {
            LOG.debug("kraft-acl: serve {} has not loaded its ACLs yet: {}", reply.server(), error.message());
            throw new AuthorizerNotReadyException();
        }
    }

    /** Every action DENIED, never ALLOWED: logged at once, then at most once per 10 s with the count in between. */
    private DecisionJson.Decided failClosed(KafkaPrincipal principal, int n, String why) {
        DecisionMetrics m = metrics;
        if (m != null) {
            m.unanswered(n);
        }
        failing = true;
        long skipped = failClosedLog.due(System.currentTimeMillis());
        if (skipped >= 0) {
            LOG.warn("kraft-acl: DENIED {} action(s) of {} without a decision (fail closed; {} call(s) denied "
                    + "this way since the last such message): {}", n, principal, skipped + 1, why);
        }
        return null;
    }

    private void answered() {
        if (failing) {
            failing = false;
            LOG.info("kraft-acl: serve answers again; decisions are serve's once more");
        }
    }

    static WireJson.Subject subject(AuthorizableRequestContext ctx, KafkaPrincipal principal) {
        return new WireJson.Subject(principal.getPrincipalType() + ":" + principal.getName(),
                ctx.clientAddress().getHostAddress(), ctx.listenerName(), RequestNames.of(ctx.requestType()));
    }
}
