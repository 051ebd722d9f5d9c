package io.github.kraftacl.plugin;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Deque;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.stream.Stream;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.SSLSocketFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decisions over serve's decision frames (kraft-acl-frames/1: one HTTP upgrade per connection, then a 9-byte header
 * and the endpoint's JSON body per decision) with a pool of idle upgraded connections per serve URL; thread-safe:
 * each call has a connection to itself for its one frame, and one that timed out or failed is closed, never pooled
 * (its late answer would be read as the next call's).
 */
final class FrameClient implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(FrameClient.class);
    static final String PATH = "/v1/frames";
    static final String PROTOCOL = "kraft-acl-frames/1";
    static final int KIND_AUTHORIZE = 1;
    static final int KIND_BY_RESOURCE_TYPE = 2;
    private static final int MAX_HEAD = 64 << 10;
    private static final int MAX_REFUSAL_BODY = 1 << 20;
    private static final int MAX_ANSWER = 1 << 28;
    private static final byte[] END_OF_HEAD = {'\r', '\n', '\r', '\n'};

    /** Serve closed the connection (EOF or reset) before the first byte of its answer. */
    private static final class ClosedBeforeAnswer extends IOException {
        private static final long serialVersionUID = 1L;

        ClosedBeforeAnswer(URI server, IOException cause) {
            super(server + " closed the decision-frames connection before answering: " + ServeClient.describe(cause),
                    cause);
        }
    }

    /** One upgraded connection; used by one call at a time. */
    private static final class Connection {
        final Socket socket;
        final DataInputStream in;
        final OutputStream out;
        int nextId;

        Connection(Socket socket) throws IOException {
            this.socket = socket;
            this.in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
            this.out = socket.getOutputStream();
        }

        void close() {
            try {
                socket.close();
            } catch (IOException e) {
                // nothing more to release
            }
        }
    }

    private final ServeRoutes routes;
    private final String authorization; // null without a token
    private final int connectTimeoutMs;
    private final SSLSocketFactory sockets; // null without TLS
    private final boolean verifyHostname;
    private final List<Deque<Connection>> idle;
    private final AtomicIntegerArray httpOnly; // 1: that serve answered the upgrade as a serve without frames
    private volatile boolean closed;

    FrameClient(ServeRoutes routes, PluginConfig config) {
        this.routes = routes;
        this.authorization = config.token.map(t -> "Bearer " + t).orElse(null);
        this.connectTimeoutMs = config.connectTimeoutMs;
        this.sockets = config.sslContext == null ? null : config.sslContext.getSocketFactory();
        this.verifyHostname = config.verifyHostname;
        this.idle = Stream.<Deque<Connection>>generate(ConcurrentLinkedDeque::new).limit(routes.size()).toList();
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
     * endpoint would have answered it; a refused upgrade (401, 503...) is that answer. Null when this serve has no
     * frames (it answered the upgrade 404, 405 or 400): the caller asks it over HTTP, as every later call does. A
     * pooled connection serve closed while idle ({@code connections.max.idle.ms}) fails before any answer byte: the
     * decision is sent once more on a new connection (decisions are idempotent), never after a read timeout.
     */
    ServeClient.Reply decide(int index, String path, byte[] body, int timeoutMs) throws IOException {
        if (httpOnly.get(index) == 1) {
            return null;
        }
        byte[] request = request(kind(path), body);
        Connection pooled = idle.get(index).pollFirst();
        if (pooled != null) {
            try {
                return exchange(index, pooled, request, timeoutMs);
            } catch (ClosedBeforeAnswer e) {
                // closed by serve while idle: once more on a new connection
            }
        }
        Connection fresh = connect(routes.url(index), timeoutMs);
        ServeClient.Reply refused = upgrade(fresh, routes.url(index));
        if (refused == null) {
            return exchange(index, fresh, request, timeoutMs);
        }
        fresh.close();
        if (refused.status() == 404 || refused.status() == 405 || refused.status() == 400) {
            if (httpOnly.compareAndSet(index, 0, 1)) {
                LOG.info("kraft-acl: serve {} answered the upgrade to decision frames with HTTP {} (a serve without "
                        + "them): decisions go to it over HTTP until the plugin is reconfigured", routes.url(index),
                        refused.status());
            }
            return null;
        }
        return refused;
    }

    /** The request frame: length, id (0 here, set per call), kind, body. */
    private static byte[] request(int kind, byte[] body) {
        return ByteBuffer.allocate(9 + body.length).putInt(5 + body.length).putInt(0).put((byte) kind).put(body)
                .array();
    }

    private Connection connect(URI server, int timeoutMs) throws IOException {
        Socket socket = new Socket();
        try {
            socket.setTcpNoDelay(true);
            socket.connect(new InetSocketAddress(server.getHost(), server.getPort()), connectTimeoutMs);
            socket.setSoTimeout(timeoutMs);
            if (server.getScheme().equals("https")) {
                SSLSocket tls = (SSLSocket) sockets.createSocket(socket, server.getHost(), server.getPort(), true);
                if (verifyHostname) {
                    SSLParameters parameters = tls.getSSLParameters();
                    parameters.setEndpointIdentificationAlgorithm("HTTPS");
                    tls.setSSLParameters(parameters);
                }
                socket = tls;
            }
            return new Connection(socket);
        } catch (IOException | RuntimeException e) {
            socket.close();
            throw e;
        }
    }

    /** Send the upgrade and read its answer: null when the connection now carries frames, else serve's refusal. */
    private ServeClient.Reply upgrade(Connection c, URI server) throws IOException {
        String head = "GET " + PATH + " HTTP/1.1\r\nHost: " + server.getHost() + ":" + server.getPort()
                + "\r\nConnection: Upgrade\r\nUpgrade: " + PROTOCOL + "\r\n"
                + (authorization == null ? "" : "Authorization: " + authorization + "\r\n") + "\r\n";
        try {
            c.out.write(head.getBytes(StandardCharsets.US_ASCII));
            String[] lines = readHead(c.in, server).split("\r\n");
            String[] status = lines[0].split(" ", 3);
            if (status.length < 2 || !status[0].startsWith("HTTP/1.") || !status[1].matches("[0-9]{3}")) {
                throw new IOException(server + " answered the upgrade to decision frames with no HTTP status line: "
                        + lines[0]);
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
        } catch (IOException | RuntimeException e) {
            c.close();
            throw e;
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

    /** One request frame and its answer; the connection is pooled again after it, or closed when it failed. */
    private ServeClient.Reply exchange(int index, Connection c, byte[] request, int timeoutMs) throws IOException {
        URI server = routes.url(index);
        try {
            int id = c.nextId++;
            ByteBuffer.wrap(request).putInt(4, id);
            c.socket.setSoTimeout(timeoutMs);
            int first;
            try {
                c.out.write(request);
                first = c.in.read();
            } catch (SocketTimeoutException e) {
                throw e;
            } catch (IOException e) {
                throw new ClosedBeforeAnswer(server, e);
            }
            if (first < 0) {
                throw new ClosedBeforeAnswer(server, new EOFException("end of stream"));
            }
            int length = first << 24 | c.in.readUnsignedByte() << 16 | c.in.readUnsignedShort();
            if (length < 6 || length > MAX_ANSWER) {
                throw new IOException(server + " sent a decision frame of length " + Integer.toUnsignedString(length)
                        + " (expected 6 to " + MAX_ANSWER + ")");
            }
            int answered = c.in.readInt();
            if (answered != id) {
                throw new IOException(server + " answered decision frame " + Integer.toUnsignedString(answered)
                        + " on a connection waiting for frame " + Integer.toUnsignedString(id));
            }
            int status = c.in.readUnsignedShort();
            byte[] body = new byte[length - 6];
            c.in.readFully(body);
            release(index, c, status);
            return new ServeClient.Reply(status, body, server);
        } catch (IOException | RuntimeException e) {
            c.close();
            throw e;
        }
    }

    /** Pool the connection again, unless serve closes it after this answer (413, 400) or the client is closed. */
    private void release(int index, Connection c, int status) {
        if (status == 413 || status == 400 || closed) {
            c.close();
            return;
        }
        idle.get(index).offerFirst(c);
        if (closed) {
            drain(index);
        }
    }

    private void drain(int index) {
        for (Connection c; (c = idle.get(index).pollFirst()) != null; ) {
            c.close();
        }
    }

    /** Close every idle connection; a call still running closes its own when it ends. */
    @Override
    public void close() {
        closed = true;
        for (int i = 0; i < idle.size(); i++) {
            drain(i);
        }
    }
}
