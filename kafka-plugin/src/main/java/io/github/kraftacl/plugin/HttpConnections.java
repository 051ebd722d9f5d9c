package io.github.kraftacl.plugin;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Deque;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Pattern;
import javax.net.ssl.SSLSocketFactory;

/**
 * HTTP/1.1 exchanges with serve on the plugin's own sockets (as {@link FrameClient} opens them), each ended by its
 * deadline as a whole: connect, TLS handshake, request, response head and body. At the deadline the shared watchdog
 * resets the TCP socket under the exchange, which ends any read or write under way (no JDK stream whose close waits for
 * the read it should end: the JDK's chunked decoder loops inside one read() on endless trailers or a chunk-size line
 * trickled a byte at a time). Bodies are Content-Length, chunked (its size lines and trailers capped) or up to the end
 * of the connection, at most {@link #MAX_BODY} bytes; 1xx heads are skipped; redirects are answers, never followed.
 * Keep-alive: connections are reused per serve URL, the most recently used first; a request sent on a reused connection
 * that serve closed before a byte of its answer is sent once more on a new one, unless it is {@code once} (ACL writes,
 * which always go on a new connection and are never resent).
 */
final class HttpConnections implements AutoCloseable {
    static final int MAX_HEAD = 64 << 10;
    static final int MAX_LINE = 8 << 10;
    static final int MAX_BODY = 1 << 28;
    private static final int MAX_IDLE = 32; // idle connections kept per serve URL
    private static final long IDLE_NS = TimeUnit.SECONDS.toNanos(4); // one idle longer is closed, not reused
    private static final Pattern STATUS = Pattern.compile("[0-9]{3}");
    private static final Pattern LENGTH = Pattern.compile("[0-9]{1,10}");
    private static final Pattern CHUNK_SIZE = Pattern.compile("[0-9a-fA-F]{1,8}");

    /** One connection: the socket (TLS or not), the TCP socket under it, and when it went idle. */
    private static final class Connection {
        final Socket socket;
        final Socket tcp;
        final InputStream in;
        final OutputStream out;
        long idleSince;
        int soTimeoutMs = -1;

        Connection(Socket socket, Socket tcp) throws IOException {
            this.socket = socket;
            this.tcp = tcp;
            this.in = new BufferedInputStream(socket.getInputStream(), 8192);
            this.out = socket.getOutputStream();
        }

        /** Close it at once (a reset: unsent bytes of a blocked write dropped); never blocks. */
        void reset() {
            try {
                tcp.setSoLinger(true, 0);
            } catch (IOException e) {
                // closed anyway below
            }
            close();
        }

        void close() {
            try {
                tcp.close();
            } catch (IOException e) {
                // nothing more to release
            }
        }
    }

    /** A response: its status, its body, and whether its connection may carry the next request. */
    private record Response(int status, byte[] body, boolean keepAlive) {}

    private final String authorization; // null without a token
    private final ServeSockets serveSockets;
    private final Map<URI, Deque<Connection>> idle = new ConcurrentHashMap<>();
    private volatile boolean closed;

    HttpConnections(String authorization, int connectTimeoutMs, SSLSocketFactory sockets, boolean verifyHostname) {
        this.authorization = authorization;
        this.serveSockets = new ServeSockets(connectTimeoutMs, sockets, verifyHostname);
    }

    /** GET (body null) or POST this JSON body; serve's answer, or an IOException (a SocketTimeoutException at the deadline). */
    ServeClient.Reply exchange(URI server, String path, byte[] body, int timeoutMs, boolean once) throws IOException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        byte[] request = request(server, path, body);
        for (boolean resent = false; ; resent = true) {
            Connection c = once || resent ? null : pooled(server);
            boolean reused = c != null;
            if (c == null) {
                c = connect(server, deadline, timeoutMs);
            }
            Connection connection = c;
            AtomicBoolean over = new AtomicBoolean(); // the exchange ended, or the watchdog reset its connection
            long remaining = deadline - System.nanoTime();
            ScheduledFuture<?> watch = FrameConnection.WATCHDOG.schedule(() -> {
                if (over.compareAndSet(false, true)) {
                    connection.reset();
                }
            }, Math.max(0, remaining), TimeUnit.NANOSECONDS);
            boolean[] answering = new boolean[1]; // a byte of the answer arrived
            try {
                if (c.soTimeoutMs != timeoutMs) {
                    c.socket.setSoTimeout(timeoutMs); // a backstop: the watchdog ends the exchange at its deadline
                    c.soTimeoutMs = timeoutMs;
                }
                c.out.write(request);
                c.out.flush();
                Response r = response(c.in, server, answering);
                if (!over.compareAndSet(false, true)) {
                    throw new SocketTimeoutException("the deadline passed");
                }
                watch.cancel(false);
                if (r.keepAlive() && !closed) {
                    release(server, c);
                } else {
                    c.close();
                }
                return new ServeClient.Reply(r.status(), r.body(), server);
            } catch (IOException | RuntimeException e) {
                watch.cancel(false);
                boolean late = !over.compareAndSet(false, true);
                c.close();
                if (late) {
                    throw (SocketTimeoutException) new SocketTimeoutException(server + " did not answer " + path
                            + " within " + timeoutMs + " ms").initCause(e);
                }
                if (reused && !resent && !answering[0] && e instanceof IOException
                        && !(e instanceof SocketTimeoutException)) {
                    continue; // a keep-alive connection serve closed meanwhile: once more on a new one
                }
                throw e;
            }
        }
    }

    /** The request's bytes, head and body, sent in one write. */
    private byte[] request(URI server, String path, byte[] body) {
        StringBuilder head = new StringBuilder(256).append(body == null ? "GET " : "POST ").append(path)
                .append(" HTTP/1.1\r\nHost: ").append(server.getHost()).append(':').append(server.getPort())
                .append("\r\nAccept: application/json\r\n");
        if (authorization != null) {
            head.append("Authorization: ").append(authorization).append("\r\n");
        }
        if (body != null) {
            head.append("Content-Type: application/json\r\nContent-Length: ").append(body.length).append("\r\n");
        }
        byte[] h = head.append("\r\n").toString().getBytes(StandardCharsets.ISO_8859_1);
        if (body == null) {
            return h;
        }
        byte[] all = new byte[h.length + body.length];
        System.arraycopy(h, 0, all, 0, h.length);
        System.arraycopy(body, 0, all, h.length, body.length);
        return all;
    }

    /** An idle connection to this serve, the most recently used, or null. */
    private Connection pooled(URI server) {
        Deque<Connection> pool = idle.get(server);
        if (pool == null) {
            return null;
        }
        for (Connection c; (c = pool.pollFirst()) != null; ) {
            if (System.nanoTime() - c.idleSince < IDLE_NS) {
                return c;
            }
            c.close();
        }
        return null;
    }

    private void release(URI server, Connection c) {
        Deque<Connection> pool = idle.computeIfAbsent(server, s -> new ConcurrentLinkedDeque<>());
        long now = System.nanoTime();
        c.idleSince = now;
        pool.offerFirst(c);
        for (Connection old; (old = pool.peekLast()) != null && (now - old.idleSince >= IDLE_NS
                || pool.size() > MAX_IDLE); ) {
            if (pool.removeLastOccurrence(old)) {
                old.close();
            }
        }
        if (closed) {
            close();
        }
    }

    /** A TCP (and TLS) connection: the connect ends by the deadline, or by the connect timeout. */
    private Connection connect(URI server, long deadline, int timeoutMs) throws IOException {
        // the TLS handshake runs at the first write, under the exchange's watchdog
        ServeSockets.Opened opened = serveSockets.open(server, deadline, timeoutMs, -1);
        try {
            return new Connection(opened.socket(), opened.tcp());
        } catch (IOException | RuntimeException e) {
            opened.tcp().close();
            throw e;
        }
    }

    /** Read one response (after any 1xx heads). */
    private static Response response(InputStream in, URI server, boolean[] answering) throws IOException {
        while (true) {
            String[] lines = head(in, server, answering);
            String[] status = lines[0].split(" ", 3);
            if (status.length < 2 || !status[0].startsWith("HTTP/1.") || !STATUS.matcher(status[1]).matches()) {
                throw new IOException(server + " answered with no HTTP status line: " + lines[0]);
            }
            int code = Integer.parseInt(status[1]);
            if (code == 101) {
                throw new IOException(server + " switched protocols unasked");
            }
            if (code < 200) {
                continue; // 100 Continue, 102, 103: the answer follows
            }
            String connection = header(lines, "connection");
            boolean keepAlive = status[0].equals("HTTP/1.1") ? !token(connection, "close")
                    : token(connection, "keep-alive");
            if (code == 204 || code == 304) {
                return new Response(code, new byte[0], keepAlive);
            }
            String encoding = header(lines, "transfer-encoding");
            String length = header(lines, "content-length");
            if (encoding != null) {
                String[] codings = encoding.toLowerCase(Locale.ROOT).split(",");
                if (codings[codings.length - 1].trim().equals("chunked")) {
                    return new Response(code, chunked(in, server), keepAlive);
                }
                return new Response(code, untilClosed(in, server), false);
            }
            if (length != null) {
                if (!LENGTH.matcher(length).matches() || Long.parseLong(length) > MAX_BODY) {
                    throw new IOException(server + " answered with content-length " + length + " (expected 0 to "
                            + MAX_BODY + ")");
                }
                byte[] body = new byte[Integer.parseInt(length)];
                readFully(in, body, server);
                return new Response(code, body, keepAlive);
            }
            return new Response(code, untilClosed(in, server), false);
        }
    }

    /** The lines of a head, without the blank line; at most MAX_HEAD bytes. */
    private static String[] head(InputStream in, URI server, boolean[] answering) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream(256);
        int matched = 0;
        while (matched < 4) {
            int b = in.read();
            if (b < 0) {
                throw new EOFException(server + " closed the connection before answering");
            }
            answering[0] = true;
            if (head.size() == MAX_HEAD) {
                throw new IOException(server + " answered with a head over " + MAX_HEAD + " bytes");
            }
            head.write(b);
            matched = b == "\r\n\r\n".charAt(matched) ? matched + 1 : b == '\r' ? 1 : 0;
        }
        String text = head.toString(StandardCharsets.ISO_8859_1);
        String[] lines = text.substring(0, text.length() - 4).split("\r\n");
        if (lines.length == 0 || lines[0].isEmpty()) {
            throw new IOException(server + " answered with an empty head");
        }
        return lines;
    }

    /** A chunked body: its size lines and the trailers capped, the body at most MAX_BODY bytes. */
    private static byte[] chunked(InputStream in, URI server) throws IOException {
        ByteArrayOutputStream body = new ByteArrayOutputStream(1024);
        while (true) {
            String line = line(in, server);
            int semicolon = line.indexOf(';');
            String size = (semicolon < 0 ? line : line.substring(0, semicolon)).trim();
            if (!CHUNK_SIZE.matcher(size).matches()) {
                throw new IOException(server + " sent a malformed chunk size: " + size);
            }
            long n = Long.parseLong(size, 16);
            if (n == 0) {
                break;
            }
            if (body.size() + n > MAX_BODY) {
                throw new IOException(server + " sent a chunked body over " + MAX_BODY + " bytes");
            }
            byte[] chunk = new byte[(int) n];
            readFully(in, chunk, server);
            body.write(chunk);
            if (!line(in, server).isEmpty()) {
                throw new IOException(server + " sent a chunk longer than its size");
            }
        }
        int trailers = 0;
        for (String line; !(line = line(in, server)).isEmpty(); ) {
            trailers += line.length() + 2;
            if (trailers > MAX_HEAD) {
                throw new IOException(server + " sent trailers over " + MAX_HEAD + " bytes");
            }
        }
        return body.toByteArray();
    }

    /** One line, ended by LF (a CR before it dropped), at most MAX_LINE bytes. */
    private static String line(InputStream in, URI server) throws IOException {
        StringBuilder line = new StringBuilder(16);
        while (true) {
            int b = in.read();
            if (b < 0) {
                throw new EOFException(server + " closed the connection in a chunked body");
            }
            if (b == '\n') {
                int end = line.length();
                return end > 0 && line.charAt(end - 1) == '\r' ? line.substring(0, end - 1) : line.toString();
            }
            if (line.length() == MAX_LINE) {
                throw new IOException(server + " sent a chunk-size or trailer line over " + MAX_LINE + " bytes");
            }
            line.append((char) b);
        }
    }

    private static byte[] untilClosed(InputStream in, URI server) throws IOException {
        ByteArrayOutputStream body = new ByteArrayOutputStream(1024);
        byte[] buffer = new byte[8192];
        for (int n; (n = in.read(buffer)) >= 0; ) {
            if (body.size() + n > MAX_BODY) {
                throw new IOException(server + " sent a body over " + MAX_BODY + " bytes");
            }
            body.write(buffer, 0, n);
        }
        return body.toByteArray();
    }

    private static void readFully(InputStream in, byte[] bytes, URI server) throws IOException {
        for (int at = 0; at < bytes.length; ) {
            int n = in.read(bytes, at, bytes.length - at);
            if (n < 0) {
                throw new EOFException(server + " closed the connection before its answer's body ended");
            }
            at += n;
        }
    }

    /** The value of this header (name in lower case), or null; repeated ones joined with commas. */
    private static String header(String[] lines, String name) {
        String value = null;
        for (int i = 1; i < lines.length; i++) {
            int colon = lines[i].indexOf(':');
            if (colon > 0 && lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT).equals(name)) {
                String v = lines[i].substring(colon + 1).trim();
                value = value == null ? v : value + "," + v;
            }
        }
        return value;
    }

    private static boolean token(String value, String token) {
        if (value == null) {
            return false;
        }
        for (String t : value.split(",")) {
            if (t.trim().equalsIgnoreCase(token)) {
                return true;
            }
        }
        return false;
    }

    /** Close the idle connections; those in use close when their exchange ends. */
    @Override
    public void close() {
        closed = true;
        for (Deque<Connection> pool : idle.values()) {
            for (Connection c; (c = pool.pollFirst()) != null; ) {
                c.close();
            }
        }
    }
}
