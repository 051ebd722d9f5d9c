package io.github.kraftacl.plugin;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLServerSocket;

/**
 * A stand-in for a serve with decision frames (kraft-acl-frames/1), on a ServerSocket: it upgrades
 * {@code GET /v1/frames} and answers each request frame with the {@link FakeServe.Answer} its decider computes (as
 * a {@link FakeServe.Received} POST of the frame kind's path, the upgrade's Authorization); any other request is
 * answered 404 and closed. Like serve it reads every frame already arrived at once and writes their answers in one
 * write, in reverse order when {@link #reverse} (answers out of order, matched by id). Knobs make it misbehave: close
 * each connection after answering, delay some answers (the others still answered meanwhile), stay mute, send an
 * answer nobody asked for, or a frame too short, or stop reading once upgraded. Over TLS when given a server
 * {@link SSLContext} ({@link #tls}).
 */
final class FakeFrames implements AutoCloseable {
    /** The password of {@link #tls}'s key store. */
    static final String TLS_PASSWORD = "frames-test";
    /** Every decision frame received, as the HTTP request it stands for. */
    final Queue<FakeServe.Received> received = new ConcurrentLinkedQueue<>();
    /** How many connections were upgraded. */
    final AtomicInteger upgrades = new AtomicInteger();
    /** How many upgraded connections the plugin closed between frames. */
    final AtomicInteger ended = new AtomicInteger();
    /** How many answers were written (a delayed one when it is). */
    final AtomicInteger answered = new AtomicInteger();
    /** How many answers were written before the answer of a frame that arrived earlier. */
    final AtomicInteger reordered = new AtomicInteger();
    /** Answer the frames read together in reverse order. */
    volatile boolean reverse;
    /** After a frame, wait up to this long for another to answer with it (pairs, for {@link #reverse}). */
    volatile long holdMicros;
    /** Close each connection once it has answered (serve's idle timeout, at once). */
    volatile boolean closeAfterAnswer;
    /** Read frames but answer none (until {@link #dropConnections()}). */
    volatile boolean mute;
    /** The next frames close their connection instead of being answered (one per decrement). */
    final AtomicInteger closeOnFrame = new AtomicInteger();
    /** The next answers come after an answer with an id nobody asked for (one per decrement). */
    final AtomicInteger strays = new AtomicInteger();
    /** The next answers are a frame of length 5, too short for an answer (one per decrement). */
    final AtomicInteger shortFrames = new AtomicInteger();
    /** The next upgraded connections read nothing more (a serve that stops reading), one per decrement. */
    final AtomicInteger deaf = new AtomicInteger();
    /** The next answers are written this long later (one per decrement of {@link #delayed}). */
    volatile long delayMs;
    final AtomicInteger delayed = new AtomicInteger();

    private final Function<FakeServe.Received, FakeServe.Answer> decider;
    private final ServerSocket server;
    private final ExecutorService threads = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "fake-frames");
        t.setDaemon(true);
        return t;
    });
    private final ScheduledExecutorService later = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "fake-frames-later");
        t.setDaemon(true);
        return t;
    });
    private final List<Socket> open = new CopyOnWriteArrayList<>();

    /** One request frame read. */
    private record Frame(int id, int kind, byte[] body) {}

    FakeFrames(Function<FakeServe.Received, FakeServe.Answer> decider) throws IOException {
        this(decider, null);
    }

    /** Over TLS with this server context (see {@link #tls}), or plain when null. */
    FakeFrames(Function<FakeServe.Received, FakeServe.Answer> decider, SSLContext tls) throws IOException {
        this.decider = decider;
        this.server = tls == null ? new ServerSocket(0, 50, InetAddress.getLoopbackAddress())
                : tls.getServerSocketFactory().createServerSocket(0, 50, InetAddress.getLoopbackAddress());
        threads.execute(this::accept);
    }

    String url() {
        return (server instanceof SSLServerSocket ? "https" : "http") + "://127.0.0.1:" + server.getLocalPort();
    }

    /**
     * A server SSLContext for 127.0.0.1 (a self-signed EC certificate made by the JDK's keytool), its key store also
     * the client's trust store: {@code dir/frames.p12}, PKCS12, password {@link #TLS_PASSWORD}.
     */
    static SSLContext tls(Path dir) throws Exception {
        Path store = dir.resolve("frames.p12");
        Process keytool = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "keytool").toString(),
                "-genkeypair", "-alias", "serve", "-keyalg", "EC", "-groupname", "secp256r1", "-dname",
                "CN=127.0.0.1", "-ext", "san=ip:127.0.0.1", "-validity", "2", "-storetype", "PKCS12", "-keystore",
                store.toString(), "-storepass", TLS_PASSWORD, "-keypass", TLS_PASSWORD).redirectErrorStream(true)
                .start();
        String output = new String(keytool.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (keytool.waitFor() != 0) {
            throw new IOException("keytool failed: " + output);
        }
        KeyStore keys = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(store)) {
            keys.load(in, TLS_PASSWORD.toCharArray());
        }
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(keys, TLS_PASSWORD.toCharArray());
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(kmf.getKeyManagers(), null, null);
        return context;
    }

    private void accept() {
        while (!server.isClosed()) {
            try {
                Socket s = server.accept();
                open.add(s);
                threads.execute(() -> serve(s));
            } catch (IOException e) {
                return;
            }
        }
    }

    private void serve(Socket s) {
        try (s) {
            DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream()));
            OutputStream out = s.getOutputStream();
            String[] head = head(in).split("\r\n");
            if (!head[0].equals("GET /v1/frames HTTP/1.1") || !head(head, "upgrade").equals("kraft-acl-frames/1")) {
                byte[] body = "{\"error\":{\"code\":\"NOT_FOUND\",\"message\":\"no such endpoint\"}}"
                        .getBytes(StandardCharsets.UTF_8);
                out.write(("HTTP/1.1 404 Not Found\r\ncontent-length: " + body.length + "\r\n\r\n")
                        .getBytes(StandardCharsets.US_ASCII));
                out.write(body);
                return;
            }
            String authorization = head(head, "authorization");
            out.write("HTTP/1.1 101 Switching Protocols\r\nconnection: upgrade\r\nupgrade: kraft-acl-frames/1\r\n\r\n"
                    .getBytes(StandardCharsets.US_ASCII));
            upgrades.incrementAndGet();
            if (deaf.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                while (!s.isClosed()) {
                    LockSupport.parkNanos(10_000_000); // reads nothing until close() or dropConnections()
                }
                return;
            }
            while (true) {
                List<Frame> batch = new ArrayList<>();
                batch.add(frame(in));
                long until = System.nanoTime() + holdMicros * 1000;
                while (in.available() < 4 && System.nanoTime() < until) {
                    LockSupport.parkNanos(20_000);
                }
                while (in.available() >= 4) {
                    batch.add(frame(in)); // every frame already arrived: several per read, as serve does
                }
                List<byte[]> answers = new ArrayList<>(); // per frame answered now: its bytes
                for (Frame f : batch) {
                    String path = f.kind == 1 ? "/v1/authorize" : f.kind == 2 ? "/v1/authorize-by-resource-type" : "?";
                    FakeServe.Received r = new FakeServe.Received("POST", path, null, authorization.isEmpty() ? null
                            : authorization, new String(f.body, StandardCharsets.UTF_8));
                    received.add(r);
                    if (closeOnFrame.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                        return;
                    }
                    if (mute) {
                        continue;
                    }
                    byte[] answer = answer(f.id, decider.apply(r));
                    if (delayed.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                        later.schedule(() -> write(out, answer, 1), delayMs, TimeUnit.MILLISECONDS);
                        continue;
                    }
                    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
                    if (strays.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                        bytes.writeBytes(answer(f.id + 1_000_000, new FakeServe.Answer(200, "{}", 0)));
                    }
                    if (shortFrames.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                        bytes.writeBytes(ByteBuffer.allocate(9).putInt(5).putInt(f.id).put((byte) 2).array());
                    }
                    bytes.writeBytes(answer);
                    answers.add(bytes.toByteArray());
                }
                if (reverse) {
                    Collections.reverse(answers);
                    reordered.addAndGet(Math.max(0, answers.size() - 1));
                }
                if (!answers.isEmpty()) {
                    ByteArrayOutputStream all = new ByteArrayOutputStream();
                    answers.forEach(all::writeBytes);
                    write(out, all.toByteArray(), answers.size());
                }
                if (closeAfterAnswer) {
                    return;
                }
            }
        } catch (EOFException e) {
            ended.incrementAndGet();
        } catch (IOException e) {
            // close() closed it under this thread, or the plugin reset it
        }
    }

    private static Frame frame(DataInputStream in) throws IOException {
        int length = in.readInt();
        int id = in.readInt();
        int kind = in.readUnsignedByte();
        byte[] body = new byte[length - 5];
        in.readFully(body);
        return new Frame(id, kind, body);
    }

    private static byte[] answer(int id, FakeServe.Answer a) {
        byte[] body = a.body().getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(10 + body.length).putInt(6 + body.length).putInt(id).putShort((short) a.status())
                .put(body).array();
    }

    /** One write of these answers (the connection thread and delayed answers share the stream). */
    private void write(OutputStream out, byte[] answers, int count) {
        synchronized (out) {
            try {
                out.write(answers);
                answered.addAndGet(count);
            } catch (IOException e) {
                // the connection closed before a delayed answer
            }
        }
    }

    private static String head(DataInputStream in) throws IOException {
        StringBuilder head = new StringBuilder();
        while (!head.toString().endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) {
                throw new EOFException();
            }
            head.append((char) b);
        }
        return head.toString();
    }

    /** A header's value ("" when absent). */
    private static String head(String[] lines, String name) {
        for (String line : lines) {
            int colon = line.indexOf(':');
            if (colon > 0 && line.substring(0, colon).equalsIgnoreCase(name)) {
                return line.substring(colon + 1).trim();
            }
        }
        return "";
    }

    /** The decision frames of this endpoint received so far. */
    List<FakeServe.Received> on(String path) {
        return received.stream().filter(r -> r.path().equals(path)).toList();
    }

    /** Close every upgraded connection now (serve restarting, or its idle timeout). */
    void dropConnections() throws IOException {
        for (Socket s : open) {
            open.remove(s);
            s.close();
        }
    }

    @Override
    public void close() throws IOException {
        server.close();
        dropConnections();
        threads.shutdownNow();
        later.shutdownNow();
    }
}
