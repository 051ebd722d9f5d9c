package io.github.kraftacl.plugin;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.function.Supplier;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.errors.UnknownServerException;
import org.apache.kafka.server.authorizer.AclCreateResult;
import org.apache.kafka.server.authorizer.AclDeleteResult;
import org.apache.kafka.server.authorizer.AclDeleteResult.AclBindingDeleteResult;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The ACL management calls (KIP-140's CreateAcls / DescribeAcls / DeleteAcls and KIP-801's AclCount) forwarded to
 * serve, with Kafka's result types and error codes.
 *
 * <p>Thread-safe. Creates and deletes run on one daemon thread, so the controller's request thread only gets
 * futures (AclApis waits on them in its purgatory); each call is one atomic batch on serve.
 *
 * <p>DescribeAcls reads every write acknowledged before it ({@code consistent}): a CreateAcls through any broker,
 * then a DescribeAcls through any broker, sees the new ACL, though the serve asked may not have applied it yet when
 * the describe arrives (it waits the milliseconds it lags). Kafka's own brokers answer DescribeAcls from the metadata
 * they have applied, which may not hold a write the controller has just acknowledged.
 */
final class AclAdmin implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(AclAdmin.class);

    private final ServeClient client;
    private final int timeoutMs;
    private static final long CONSISTENT_RETRY_NANOS = TimeUnit.MINUTES.toNanos(10);
    // when a serve before API 1.6.0 last refused `consistent` (long ago: never)
    private volatile long consistentRefusedAt = System.nanoTime() - CONSISTENT_RETRY_NANOS;
    private final RateLimitedLog unreadLog = new RateLimitedLog(60_000);
    private final ExecutorService writer = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "kraft-acl-admin");
        t.setDaemon(true);
        return t;
    });

    /** How long a reading of the count metric waits for serve's answer before it gives the last count known. */
    static final long COUNT_METRIC_WAIT_MS = 500;
    private final ExecutorService counter = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "kraft-acl-count");
        t.setDaemon(true);
        return t;
    });
    private final Object counting = new Object();
    private CompletableFuture<Integer> countCall; // under counting: the count being asked, or null
    private volatile int lastCount = -1;

    AclAdmin(ServeClient client, int timeoutMs) {
        this.client = client;
        this.timeoutMs = timeoutMs;
    }

    /** One future per binding, in order; every entry fails with the same error when the call as a whole fails. */
    List<CompletableFuture<AclCreateResult>> create(List<AclBinding> acls) {
        return forward(acls.size(), () -> WireJson.create(acls), "/v1/acls/create", o -> o.errorCode() == 0
                ? AclCreateResult.SUCCESS
                : new AclCreateResult(KafkaErrors.byCode(o.errorCode(), o.message())),
                AclCreateResult::new);
    }

    /** One future per filter, in order, each with every ACL the filter matched (all removed in one batch). */
    List<CompletableFuture<AclDeleteResult>> delete(List<AclBindingFilter> filters) {
        return forward(filters.size(), () -> WireJson.delete(filters), "/v1/acls/delete", AclAdmin::deleted,
                AclDeleteResult::new);
    }

    private static AclDeleteResult deleted(WireJson.Outcome o) {
        if (o.errorCode() != 0) {
            return new AclDeleteResult(KafkaErrors.byCode(o.errorCode(), o.message()));
        }
        List<AclBindingDeleteResult> out = new ArrayList<>(o.acls().size());
        for (AclBinding b : o.acls()) {
            out.add(new AclBindingDeleteResult(b));
        }
        return new AclDeleteResult(out);
    }

    private <T> List<CompletableFuture<T>> forward(int n, Supplier<byte[]> body, String path,
            Function<WireJson.Outcome, T> each, Function<ApiException, T> failed) {
        List<CompletableFuture<T>> futures = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            futures.add(new CompletableFuture<>());
        }
        if (n == 0) {
            return futures;
        }
        Runnable work = () -> {
            List<T> results;
            try {
                results = results(n, body.get(), path, each);
            } catch (RuntimeException e) {
                ApiException error = e instanceof ApiException api ? api : new UnknownServerException(e.toString());
                LOG.warn("kraft-acl serve: {} failed: {}", path, error.getMessage());
                results = Collections.nCopies(n, failed.apply(error));
            }
            for (int i = 0; i < n; i++) {
                futures.get(i).complete(results.get(i));
            }
        };
        Runnable closed = () -> {
            T result = failed.apply(new UnknownServerException("the kraft-acl authorizer is closed"));
            futures.forEach(f -> f.complete(result));
        };
        try {
            writer.execute(new Queued(work, closed));
        } catch (RejectedExecutionException e) {
            closed.run();
        }
        return futures;
    }

    /** A create or delete waiting for the writer thread, and how to fail its futures if the authorizer closes first. */
    private record Queued(Runnable work, Runnable closed) implements Runnable {
        @Override
        public void run() {
            work.run();
        }
    }

    private <T> List<T> results(int n, byte[] body, String path, Function<WireJson.Outcome, T> each) {
        ServeClient.Reply reply = call(path, body);
        List<WireJson.Outcome> outcomes;
        try {
            outcomes = WireJson.outcomes(reply.body());
        } catch (IOException e) {
            throw new UnknownServerException("kraft-acl serve " + reply.server() + " answered " + path
                    + " with a body the plugin cannot read: " + e.getMessage());
        }
        if (outcomes.size() != n) {
            throw new UnknownServerException("kraft-acl serve " + reply.server() + " answered " + outcomes.size()
                    + " results for " + n + " entries");
        }
        List<T> out = new ArrayList<>(n);
        for (WireJson.Outcome o : outcomes) {
            out.add(each.apply(o));
        }
        return out;
    }

    /**
     * DescribeAcls: every ACL the filter matches, in a state holding every write acknowledged before the call (throws
     * an ApiException the broker turns into the error code). When no serve can read its log's end now (503
     * OFFSET_NOT_REACHED) the answer is the state serve has applied, with a WARN at most once a minute, as Kafka's
     * brokers answer. A serve before API 1.6.0 refuses {@code consistent} (400 naming it): the plugin asks again
     * without it, and so for ten minutes (a rolling upgrade of serve then turns it back on).
     */
    List<AclBinding> describe(AclBindingFilter filter) {
        long now = System.nanoTime();
        boolean asked = now - consistentRefusedAt >= CONSISTENT_RETRY_NANOS;
        ServeClient.Reply reply;
        try {
            reply = call("/v1/acls/describe", WireJson.describe(filter, asked));
        } catch (InvalidRequestException e) {
            if (!asked || !e.getMessage().contains("consistent")) {
                throw e;
            }
            LOG.info("kraft-acl serve: DescribeAcls from the state serve has applied for ten minutes (a serve before "
                    + "API 1.6.0): {}", e.getMessage());
            consistentRefusedAt = now;
            reply = call("/v1/acls/describe", WireJson.describe(filter, false));
        } catch (ApiException e) {
            if (!asked || e.getMessage() == null || !e.getMessage().contains("OFFSET_NOT_REACHED")) {
                throw e;
            }
            long skipped = unreadLog.due(System.currentTimeMillis());
            if (skipped >= 0) {
                LOG.warn("kraft-acl serve: DescribeAcls answered from the state serve has applied, which may miss an "
                        + "ACL write acknowledged just before ({} more since the last warning): {}", skipped,
                        e.getMessage());
            }
            reply = call("/v1/acls/describe", WireJson.describe(filter, false));
        }
        try {
            return WireJson.describedAcls(reply.body());
        } catch (IOException e) {
            throw new UnknownServerException("kraft-acl serve " + reply.server()
                    + " answered /v1/acls/describe with a body the plugin cannot read: " + e.getMessage());
        }
    }

    /** KIP-801's AclCount, or -1 (Kafka's "unknown") when serve does not answer. */
    int count() {
        try {
            ServeClient.Reply reply = client.get("/v1/acls/count", timeoutMs);
            if (reply.status() == 200) {
                return WireJson.count(reply.body());
            }
            LOG.debug("kraft-acl serve: /v1/acls/count answered HTTP {}", reply.status());
        } catch (ServeClient.UnavailableException | IOException e) {
            LOG.debug("kraft-acl serve: /v1/acls/count failed: {}", e.getMessage());
        }
        return -1;
    }

    /**
     * The {@code acls-total-count} metric: {@link #count()} asked on a thread of its own (one call at a time), waited
     * for at most {@code waitMs}, else the last count known (-1 before any, or after serve did not answer); a reading
     * while a call is under way waits for that call. A metrics reporter's thread never waits for a serve that does not
     * answer ({@link #count()} may take {@code kraft.acl.admin.timeout.ms} per URL).
     */
    int countForMetric(long waitMs) {
        CompletableFuture<Integer> call;
        synchronized (counting) {
            call = countCall;
            if (call == null) {
                try {
                    call = CompletableFuture.supplyAsync(this::count, counter);
                } catch (RejectedExecutionException e) {
                    return lastCount; // closed
                }
                countCall = call;
                call.whenComplete((count, e) -> {
                    synchronized (counting) {
                        lastCount = count == null ? -1 : count;
                        countCall = null;
                    }
                });
            }
        }
        try {
            return call.get(waitMs, TimeUnit.MILLISECONDS);
        } catch (TimeoutException | ExecutionException e) {
            return lastCount;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return lastCount;
        }
    }

    /** A 200 reply, or the ApiException that stands for serve's error (or for no serve answering). */
    private ServeClient.Reply call(String path, byte[] body) {
        ServeClient.Reply reply;
        try {
            reply = client.post(path, body, timeoutMs, true);
        } catch (ServeClient.UnavailableException e) {
            throw new UnknownServerException(e.getMessage());
        }
        if (reply.status() == 200) {
            return reply;
        }
        throw exception(reply, path);
    }

    /**
     * serve's error code as Kafka's exception when Kafka has that error (INVALID_REQUEST, ...), else
     * UNKNOWN_SERVER_ERROR with serve's message (Kafka has no code for AUTHORIZER_NOT_READY either). NOT_CONTROLLER
     * (every serve that answered has the broker role) is UNKNOWN_SERVER_ERROR too: in a CreateAcls or DeleteAcls
     * response Kafka's broker takes NOT_CONTROLLER to mean that its own controller moved, and resends the request
     * until the client gives up, so the client would see a timeout instead of the reason.
     */
    static ApiException exception(ServeClient.Reply reply, String path) {
        WireJson.ErrorBody error = WireJson.error(reply.body());
        String message = "kraft-acl serve " + reply.server() + " answered " + path + " with HTTP " + reply.status()
                + (error.code().isEmpty() ? "" : " " + error.code()) + ": " + error.message();
        if (error.code().equals("NOT_CONTROLLER")) {
            return new UnknownServerException(message);
        }
        ApiException known = KafkaErrors.byName(error.code(), message);
        return known != null ? known : new UnknownServerException(message);
    }

    /** Stop the threads; the creates and deletes still queued fail (their callers are not left waiting). */
    @Override
    public void close() {
        for (Runnable queued : writer.shutdownNow()) {
            ((Queued) queued).closed().run();
        }
        counter.shutdownNow();
    }
}
