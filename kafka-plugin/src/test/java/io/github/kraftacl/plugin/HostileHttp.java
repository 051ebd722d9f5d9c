package io.github.kraftacl.plugin;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * A hostile or broken HTTP serve on a ServerSocket: it reads each request (head and Content-Length body) and hands
 * the connection's output to a behaviour that writes whatever it likes, as slowly as it likes, then closes it.
 */
final class HostileHttp implements AutoCloseable {
    /** What it does with one request's connection once the request is read. */
    interface Behaviour {
        void answer(OutputStream out) throws Exception;
    }

    /** The head of every request read, in order. */
    final java.util.Queue<String> heads = new java.util.concurrent.ConcurrentLinkedQueue<>();
    private final ServerSocket server;
    private final ExecutorService threads = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "hostile-http");
        t.setDaemon(true);
        return t;
    });

    HostileHttp(Behaviour behaviour) throws IOException {
        this(behaviour, true);
    }

    /** One that reads nothing first: the behaviour gets each connection as soon as it is accepted. */
    static HostileHttp raw(Behaviour behaviour) throws IOException {
        return new HostileHttp(behaviour, false);
    }

    private HostileHttp(Behaviour behaviour, boolean http) throws IOException {
        server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        threads.execute(() -> {
            while (!server.isClosed()) {
                try {
                    Socket s = server.accept();
                    threads.execute(() -> {
                        try (s) {
                            if (http) {
                                heads.add(readRequest(s.getInputStream()));
                            }
                            behaviour.answer(s.getOutputStream());
                        } catch (Exception e) {
                            // the plugin closed it, or the test ended
                        }
                    });
                } catch (IOException e) {
                    return;
                }
            }
        });
    }

    String url() {
        return "http://127.0.0.1:" + server.getLocalPort();
    }

    /** Write this text and flush it. */
    static void send(OutputStream out, String text) throws IOException {
        out.write(text.getBytes(StandardCharsets.ISO_8859_1));
        out.flush();
    }

    /** Read one request (its head and its Content-Length body); its head. */
    static String readRequest(InputStream in) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        int matched = 0;
        while (matched < 4) {
            int b = in.read();
            if (b < 0) {
                throw new IOException("closed");
            }
            head.write(b);
            matched = b == "\r\n\r\n".charAt(matched) ? matched + 1 : b == '\r' ? 1 : 0;
        }
        for (String line : head.toString(StandardCharsets.ISO_8859_1).split("\r\n")) {
            if (line.toLowerCase(Locale.ROOT).startsWith("content-length:")) {
                in.readNBytes(Integer.parseInt(line.substring(15).trim()));
            }
        }
        return head.toString(StandardCharsets.ISO_8859_1);
    }

    @Override
    public void close() throws IOException {
        server.close();
        threads.shutdownNow();
    }
}
