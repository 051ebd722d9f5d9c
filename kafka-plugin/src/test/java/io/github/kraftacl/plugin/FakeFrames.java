package io.github.kraftacl.plugin;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/**
 * A stand-in for a serve with decision frames (kraft-acl-frames/1), on a plain ServerSocket: it upgrades
 * {@code GET /v1/frames} and answers each request frame with the {@link FakeServe.Answer} its decider computes (as
 * a {@link FakeServe.Received} POST of the frame kind's path, the upgrade's Authorization); any other request is
 * answered 404 and closed. Knobs make it misbehave: close each connection after one answer, delay or misnumber
 * one answer.
 */
final class FakeFrames implements AutoCloseable {
    /** Every decision frame received, as the HTTP request it stands for. */
    final List<FakeServe.Received> received = new CopyOnWriteArrayList<>();
    /** How many connections were upgraded. */
    final AtomicInteger upgrades = new AtomicInteger();
    /** How many upgraded connections the plugin closed between frames. */
    final AtomicInteger ended = new AtomicInteger();
    /** Close each connection once it has answered a frame (serve's idle timeout, at once). */
    volatile boolean closeAfterAnswer;
    /** The next answers echo a wrong id (one per decrement). */
    final AtomicInteger wrongIds = new AtomicInteger();
    /** The next answers wait this long first (one per decrement of {@link #delayed}). */
    volatile long delayMs;
    final AtomicInteger delayed = new AtomicInteger();

    private final Function<FakeServe.Received, FakeServe.Answer> decider;
    private final ServerSocket server;
    private final ExecutorService threads = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "fake-frames");
        t.setDaemon(true);
        return t;
    });
    private final List<Socket> open = new CopyOnWriteArrayList<>();

    FakeFrames(Function<FakeServe.Received, FakeServe.Answer> decider) throws IOException {
        this.decider = decider;
        this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        threads.execute(this::accept);
    }

    String url() {
        return "http://127.0.0.1:" + server.getLocalPort();
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
            while (true) {
                int length = in.readInt();
                int id = in.readInt();
                int kind = in.readUnsignedByte();
                byte[] body = new byte[length - 5];
                in.readFully(body);
                String path = kind == 1 ? "/v1/authorize" : kind == 2 ? "/v1/authorize-by-resource-type" : "?";
                FakeServe.Received r = new FakeServe.Received("POST", path, null, authorization.isEmpty() ? null
                        : authorization, new String(body, StandardCharsets.UTF_8));
                received.add(r);
                FakeServe.Answer a = decider.apply(r);
                if (delayed.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                    Thread.sleep(delayMs);
                }
                int echoed = wrongIds.getAndUpdate(n -> Math.max(0, n - 1)) > 0 ? id + 1 : id;
                byte[] answer = a.body().getBytes(StandardCharsets.UTF_8);
                out.write(ByteBuffer.allocate(10 + answer.length).putInt(6 + answer.length).putInt(echoed)
                        .putShort((short) a.status()).put(answer).array());
                if (closeAfterAnswer) {
                    return;
                }
            }
        } catch (EOFException e) {
            ended.incrementAndGet();
        } catch (IOException e) {
            // close() closed it under this thread, or the plugin reset it
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
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

    @Override
    public void close() throws IOException {
        server.close();
        for (Socket s : open) {
            s.close();
        }
        threads.shutdownNow();
    }
}
