package io.github.kraftacl.plugin;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.ReentrantLock;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decisions over serve's decision frames (kraft-acl-frames/1: one HTTP upgrade per connection, then a 9-byte header
 * and the endpoint's JSON body per decision) on ONE {@link FrameConnection} per serve URL, opened when first needed and
 * again after it broke; thread-safe: every broker thread's frames share it at once, answers matched by id.
 */
final class FrameClient implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(FrameClient.class);
    static final String PATH = "/v1/frames";
    static final String PROTOCOL = "kraft-acl-frames/1";
    static final int KIND_AUTHORIZE = 1;
    static final int KIND_BY_RESOURCE_TYPE = 2;
    private static final int MAX_HEAD = 64 << 10;
    private static final int MAX_REFUSAL_BODY = 1 << 20;
    private static final byte[] END_OF_HEAD = {'\r', '\n', '\r', '\n'};

    /** serve refused the upgrade: its answer, or null when it has no frames (ask it over HTTP). */
    private static final class Refused extends Exception {
        private static final long serialVersionUID = 1L;
        final transient ServeClient.Reply reply;

        Refused(ServeClient.Reply reply) {
            super(null, null, false, false);
            this.reply = reply;
        }
    }

    private final ServeRoutes routes;
    private final String authorization; // null without a token
    private final ServeSockets serveSockets;
    private final AtomicReferenceArray<FrameConnection> connections; // per serve index, null until opened
    private final List<ReentrantLock> opening; // per serve index: one caller opens, the others wait for it
    private final AtomicIntegerArray httpOnly; // 1: that serve answered the upgrade as a serve without frames
    private volatile boolean closed;

    FrameClient(ServeRoutes routes, PluginConfig config) {
        this.routes = routes;
        this.authorization = config.token.map(t -> "Bearer " + t).orElse(null);
        this.serveSockets = new ServeSockets(config.connectTimeoutMs,
                config.sslContext == null ? null : config.sslContext.getSocketFactory(), config.verifyHostname);
        this.connections = new AtomicReferenceArray<>(routes.size());
        this.opening = Stream.generate(ReentrantLock::new).limit(routes.size()).toList();
        this.httpOnly = new AtomicIntegerArray(routes.size());
    }

    /** The frame kind of this decision endpoint. */
    static int kind(String path) {
        return switch (path) {
            case "/v1/authorize" -> KIND_AUTHORIZE;
            case "/v1/authorize-by-resource-type" -> KIND_BY_RESOURCE_TYPE;
            default -> throw new IllegalArgumentException("no decision frame carries " + path);
        };
    }

    /**
     * serve's answer to this decision (the JSON body of that endpoint) from the serve at this index, as the HTTP
     * endpoint would have answered it; a refused upgrade (401, 503...) is that answer, one answered with neither 101
     * nor an error status (a 200, a 3xx) an IOException. Null when this serve has no frames (it answered the upgrade
     * 404, 405 or 400): the caller asks it over HTTP, as every later call does. A
     * connection open before this call that serve closes or resets before this call's answer (idle for
     * {@code connections.max.idle.ms}, or after another frame's framing error: a 413, or a 400 naming {@code length})
     * gets the decision once more on a new connection (decisions are idempotent), never after a timeout. Any other 400
     * is that one call's answer and the connection stays in use, as serve keeps it.
     */
    ServeClient.Reply decide(int index, String path, byte[] body, int timeoutMs) throws IOException {
        if (httpOnly.get(index) == 1) {
            return null;
        }
        int kind = kind(path);
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        for (boolean resent = false; ; resent = true) {
            FrameConnection c = connections.get(index);
            if (c != null && c.isBroken()) {
                connections.compareAndSet(index, c, null);
                c = null;
            }
            boolean reused = c != null;
            try {
                c = reused ? c : open(index, deadline, timeoutMs);
            } catch (Refused r) {
                return r.reply;
            }
            try {
                return c.call(kind, body, deadline, timeoutMs);
            } catch (FrameConnection.Broken e) {
                connections.compareAndSet(index, c, null);
                if (!reused || !e.resendable || resent || closed) {
                    throw e;
                }
            }
        }
    }

    /** The connection to the serve at this index: the one another caller opened meanwhile, or a new one. */
    private FrameConnection open(int index, long deadline, int timeoutMs) throws IOException, Refused {
        URI server = routes.url(index);
        ReentrantLock lock = opening.get(index);
        try {
            if (!lock.tryLock(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                throw new SocketTimeoutException("timed out waiting for the decision-frames connection to " + server);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while connecting to " + server);
        }
        try {
            FrameConnection c = connections.get(index);
            if (c != null && !c.isBroken()) {
                return c;
            }
            if (httpOnly.get(index) == 1) {
                throw new Refused(null);
            }
            c = connect(server, deadline, timeoutMs);
            ServeClient.Reply refused;
            String late = server + ": the TLS handshake and upgrade to decision frames did not end within the call's "
                    + timeoutMs + " ms";
            AtomicBoolean fired = new AtomicBoolean();
            ScheduledFuture<?> watch = c.breakAt(deadline, late, fired);
            try {
                refused = upgrade(c);
            } catch (IOException e) {
                if (fired.get()) { // the watchdog broke the connection: say so, not "socket closed"
                    throw (SocketTimeoutException) new SocketTimeoutException(late).initCause(e);
                }
                throw e;
            } finally {
                watch.cancel(false);
            }
            if (refused != null) {
                c.fail(new IOException("the upgrade was refused"));
                if (refused.status() < 400) { // no decision's answer, though a 200 may look like one: a failure
                    throw new IOException(server + " answered the upgrade to decision frames with HTTP "
                            + refused.status() + ", neither 101 nor a refusal");
                }
                if (refused.status() == 404 || refused.status() == 405 || refused.status() == 400) {
                    if (httpOnly.compareAndSet(index, 0, 1)) {
                        LOG.info("kraft-acl: serve {} answered the upgrade to decision frames with HTTP {} (a serve "
                                + "without them): decisions go to it over HTTP until the plugin is reconfigured",
                                server, refused.status());
                    }
                    throw new Refused(null);
                }
                throw new Refused(refused);
            }
            connections.set(index, c);
            if (closed) {
                c.fail(new IOException("the authorizer is closed"));
            }
            return c;
        } finally {
            lock.unlock();
        }
    }

    /** A TCP (and TLS) connection to this serve: the connect ends by the call's deadline, or by the connect timeout. */
    private FrameConnection connect(URI server, long deadline, int timeoutMs) throws IOException {
        ServeSockets.Opened opened = serveSockets.open(server, deadline, timeoutMs, timeoutMs);
        try {
            return new FrameConnection(opened.socket(), opened.tcp(), server);
        } catch (IOException | RuntimeException e) {
            opened.tcp().close();
            throw e;
        }
    }

    /**
     * Send the upgrade and read its answer: null when the connection now carries frames, else serve's refusal. Any
     * failure is an IOException (a RuntimeException is wrapped in one), so the decision fails over, or is denied, and
     * that serve is skipped, as after any other failure to reach it.
     */
    private ServeClient.Reply upgrade(FrameConnection c) throws IOException {
        URI server = c.server;
        String head = "GET " + PATH + " HTTP/1.1\r\nHost: " + server.getHost() + ":" + server.getPort()
                + "\r\nConnection: Upgrade\r\nUpgrade: " + PROTOCOL + "\r\n"
                + (authorization == null ? "" : "Authorization: " + authorization + "\r\n") + "\r\n";
        try {
            c.out.write(head.getBytes(StandardCharsets.US_ASCII));
            String[] lines = readHead(c.in, server).split("\r\n"); // none for an empty head ("\r\n\r\n")
            String[] status = lines.length == 0 ? new String[0] : lines[0].split(" ", 3);
            if (status.length < 2 || !status[0].startsWith("HTTP/1.") || !status[1].matches("[0-9]{3}")) {
                throw new IOException(server + " answered the upgrade to decision frames with no HTTP status line: "
                        + (lines.length == 0 ? "(an empty head)" : lines[0]));
            }
            int code = Integer.parseInt(status[1]);
            if (code == 101) {
                if (!PROTOCOL.equalsIgnoreCase(header(lines, "upgrade"))) {
                    throw new IOException(server + " switched to protocol " + header(lines, "upgrade") + ", not "
                            + PROTOCOL);
                }
                return null;
            }
            return new ServeClient.Reply(code, body(c.in, header(lines, "content-length"), server), server);
        } catch (IOException e) {
            c.fail(e);
            throw e;
        } catch (RuntimeException e) { // never out of authorize(): Kafka would answer UNKNOWN_SERVER_ERROR, not DENIED
            IOException failure = new IOException(server + ": the upgrade to decision frames failed: " + e, e);
            c.fail(failure);
            throw failure;
        }
    }

    /** The response head up to (without) the blank line, at most 64 KiB. */
    private static String readHead(DataInputStream in, URI server) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream(128);
        int matched = 0;
        while (matched < END_OF_HEAD.length) {
            int b = in.read();
            if (b < 0) {
                throw new EOFException(server + " closed the connection during the upgrade to decision frames");
            }
            if (head.size() == MAX_HEAD) {
                throw new IOException(server + " answered the upgrade to decision frames with a head over "
                        + MAX_HEAD + " bytes");
            }
            head.write(b);
            matched = b == END_OF_HEAD[matched] ? matched + 1 : b == '\r' ? 1 : 0;
        }
        return head.toString(StandardCharsets.ISO_8859_1);
    }

    /** The value of this header (name in lower case), or null. */
    private static String header(String[] lines, String name) {
        for (int i = 1; i < lines.length; i++) {
            int colon = lines[i].indexOf(':');
            if (colon > 0 && lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT).equals(name)) {
                return lines[i].substring(colon + 1).trim();
            }
        }
        return null;
    }

    /** A refusal's body: its Content-Length bytes (none without one). */
    private static byte[] body(DataInputStream in, String contentLength, URI server) throws IOException {
        if (contentLength == null) {
            return new byte[0];
        }
        int length;
        try {
            length = Integer.parseInt(contentLength);
        } catch (NumberFormatException e) {
            length = -1;
        }
        if (length < 0 || length > MAX_REFUSAL_BODY) {
            throw new IOException(server + " refused the upgrade to decision frames with content-length "
                    + contentLength + " (expected 0 to " + MAX_REFUSAL_BODY + ")");
        }
        byte[] body = new byte[length];
        in.readFully(body);
        return body;
    }

    /** Close the connections; calls waiting on them fail. */
    @Override
    public void close() {
        closed = true;
        for (int i = 0; i < connections.length(); i++) {
            FrameConnection c = connections.getAndSet(i, null);
            if (c != null) {
                c.fail(new IOException("the authorizer is closed"));
            }
        }
    }
}
