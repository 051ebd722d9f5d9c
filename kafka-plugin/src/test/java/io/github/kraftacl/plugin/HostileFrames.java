package io.github.kraftacl.plugin;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * A hostile or broken serve with decision frames on a ServerSocket: it upgrades each connection, then hands it to a
 * behaviour that reads request frames and writes whatever it likes, as slowly as it likes, then closes it.
 */
final class HostileFrames implements AutoCloseable {
    /** What it does with one upgraded connection. */
    interface Behaviour {
        void serve(DataInputStream in, OutputStream out) throws Exception;
    }

    private final ServerSocket server;
    private final ExecutorService threads = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "hostile-frames");
        t.setDaemon(true);
        return t;
    });

    HostileFrames(Behaviour behaviour) throws IOException {
        server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        threads.execute(() -> {
            while (!server.isClosed()) {
                try {
                    Socket s = server.accept();
                    threads.execute(() -> {
                        try (s) {
                            DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream()));
                            HostileHttp.readRequest(in);
                            OutputStream out = s.getOutputStream();
                            out.write(("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: "
                                    + FrameClient.PROTOCOL + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                            out.flush();
                            behaviour.serve(in, out);
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

    /** Read one request frame; its id. */
    static int frameId(DataInputStream in) throws IOException {
        int length = in.readInt();
        int id = in.readInt();
        in.readFully(new byte[length - 4]);
        return id;
    }

    /** An answer frame: this id, status and JSON body. */
    static byte[] answer(int id, int status, String body) {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(10 + bytes.length).putInt(6 + bytes.length).putInt(id).putShort((short) status)
                .put(bytes).array();
    }

    @Override
    public void close() throws IOException {
        server.close();
        threads.shutdownNow();
    }
}
