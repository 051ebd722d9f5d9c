package io.github.kraftacl.plugin;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Function;

/**
 * A stand-in for kraft-acl serve in unit tests: canned (or computed) answers per path, every request it received,
 * and a change feed ({@code GET /v1/changes}) with serve's long-poll rule that a test moves, freezes or removes.
 */
final class FakeServe implements AutoCloseable {
    /** One canned answer. */
    record Answer(int status, String body, long delayMs) {}

    /** One request as received. */
    record Received(String method, String path, String query, String authorization, String body) {}

    final List<Received> received = new CopyOnWriteArrayList<>();
    private final Map<String, Function<Received, Answer>> answers = new ConcurrentHashMap<>();
    private final HttpServer server;
    private final ExecutorService threads = Executors.newCachedThreadPool();
    private final Object feedLock = new Object();
    private String instance = "fake-1";
    private long aclOffset = -1;
    private long appliedOffset = -1;
    private long aclAppliedUs;
    private boolean feedFrozen;
    private boolean feedAbsent;
    private volatile long feedDelayMs;
    private String[] rotating; // each feed answer from the next of these instances (a URL over several serves)
    private int turn;
    private boolean closed;
    private volatile boolean closeEach; // every answer says Connection: close

    FakeServe() throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/", this::handle);
        server.setExecutor(threads);
        server.start();
    }

    private void handle(HttpExchange exchange) throws IOException {
        String body = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
        String path = exchange.getRequestURI().getPath();
        Received r = new Received(exchange.getRequestMethod(), path, exchange.getRequestURI().getQuery(),
                exchange.getRequestHeaders().getFirst("Authorization"), body);
        received.add(r);
        Function<Received, Answer> answer = answers.get(path);
        Answer a = answer != null ? answer.apply(r)
                : path.equals(ChangeFeed.PATH) ? feed(r)
                : new Answer(404, "{\"error\":{\"code\":\"NOT_FOUND\"}}", 0);
        if (a == null) {
            exchange.close(); // frozen, then closed: no answer at all
            return;
        }
        try {
            Thread.sleep(a.delayMs());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        byte[] bytes = a.body().getBytes(StandardCharsets.UTF_8);
        if (closeEach) {
            exchange.getResponseHeaders().set("Connection", "close");
        }
        exchange.sendResponseHeaders(a.status(), bytes.length);
        exchange.getResponseBody().write(bytes);
        exchange.close();
    }

    /**
     * serve's long poll: at once when the ACL offset is past `after`, when the caller names another `instance`, or
     * when wait_ms is 0, else after wait_ms; the answer says how long it was held, and is sent {@link #delayFeed}
     * ms after it was made (a slow network).
     */
    private Answer feed(Received r) {
        Map<String, String> q = query(r.query());
        long after = Long.parseLong(q.getOrDefault("after", "-1"));
        long waitMs = Long.parseLong(q.getOrDefault("wait_ms", "0"));
        String known = q.get("instance");
        long started = System.nanoTime();
        long deadline = System.currentTimeMillis() + waitMs;
        synchronized (feedLock) {
            if (rotating != null) { // this poll reached the next serve behind the URL
                instance = rotating[turn++ % rotating.length];
            }
            try {
                while (!closed && !feedAbsent && (feedFrozen || (aclOffset <= after
                        && (known == null || known.equals(instance)) && System.currentTimeMillis() < deadline))) {
                    feedLock.wait(feedFrozen ? 0 : Math.max(1, deadline - System.currentTimeMillis()));
                }
            } catch (InterruptedException e) {
                return null;
            }
            if (closed) {
                return null;
            }
            if (feedAbsent) {
                return new Answer(404, "{\"error\":{\"code\":\"NOT_FOUND\",\"message\":\"no such endpoint\"}}", 0);
            }
            long heldUs = (System.nanoTime() - started) / 1_000;
            return new Answer(200, "{\"instance\":\"" + instance + "\",\"acl_offset\":" + aclOffset
                    + ",\"acl_applied_us\":" + aclAppliedUs + ",\"applied_offset\":" + appliedOffset
                    + ",\"held_us\":" + heldUs + "}", feedDelayMs);
        }
    }

    private static Map<String, String> query(String query) {
        Map<String, String> out = new HashMap<>();
        if (query != null) {
            for (String part : query.split("&")) {
                String[] kv = part.split("=", 2);
                out.put(kv[0], kv.length > 1 ? kv[1] : "");
            }
        }
        return out;
    }

    FakeServe answer(String path, int status, String body) {
        return answer(path, status, body, 0);
    }

    FakeServe answer(String path, int status, String body, long delayMs) {
        Answer a = new Answer(status, body, delayMs);
        answers.put(path, r -> a);
        return this;
    }

    /** Answer this path with whatever the function computes from the request (null: close without answering). */
    FakeServe answer(String path, Function<Received, Answer> answer) {
        answers.put(path, answer);
        return this;
    }

    /** serve applied a batch with ACL records at this offset: the feed reports it at once. */
    void aclChange(long offset) {
        synchronized (feedLock) {
            aclOffset = offset;
            appliedOffset = Math.max(appliedOffset, offset);
            aclAppliedUs = ChangeFeed.wallMicros();
            feedLock.notifyAll();
        }
    }

    /** serve restarted as another process (another instance id) with these offsets. */
    void restart(String newInstance, long offset) {
        synchronized (feedLock) {
            instance = newInstance;
            aclOffset = offset;
            appliedOffset = offset;
            feedLock.notifyAll();
        }
    }

    /** While frozen the feed answers no poll (a SIGSTOPped serve), then answers them all. */
    void freezeFeed(boolean frozen) {
        synchronized (feedLock) {
            feedFrozen = frozen;
            feedLock.notifyAll();
        }
    }

    /** Send every feed answer this long after it is made (a slow network, or a broker JVM that reads it late). */
    void delayFeed(long ms) {
        feedDelayMs = ms;
    }

    /** Answer each feed poll as the next of these instances, in turn (a round-robin proxy over several serves). */
    void rotateInstances(String... instances) {
        synchronized (feedLock) {
            rotating = instances;
            feedLock.notifyAll();
        }
    }

    /** Answer the feed with 404 (a serve without it). */
    void removeFeed() {
        synchronized (feedLock) {
            feedAbsent = true;
            feedLock.notifyAll();
        }
    }

    /** From now on every answer says {@code Connection: close}: each request of the plugin opens a new connection. */
    FakeServe closeEachConnection() {
        closeEach = true;
        return this;
    }

    String url() {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    List<Received> on(String path) {
        return received.stream().filter(r -> r.path().equals(path)).toList();
    }

    @Override
    public void close() {
        synchronized (feedLock) {
            closed = true;
            feedLock.notifyAll();
        }
        server.stop(0);
        threads.shutdownNow();
    }
}
