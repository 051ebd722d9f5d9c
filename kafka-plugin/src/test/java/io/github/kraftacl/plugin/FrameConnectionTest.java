package io.github.kraftacl.plugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.DataInputStream;
import java.io.OutputStream;
import java.lang.reflect.Field;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** White-box interleavings of one {@link FrameConnection} shared by several calls (the leader/follower reading). */
class FrameConnectionTest {
    private static final byte[] BODY = "{}".getBytes(StandardCharsets.UTF_8);

    /**
     * The reader whose own answer arrived hands the reading on to a call still waiting for its answer, never to a
     * call that has not sent its frame yet: that one may leave without reading (its frame could not be written
     * before its deadline), and the answer already arrived for the waiting call would then stay unread until that
     * call timed out.
     */
    @Test
    @Timeout(value = 20, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void anAnswerThatArrivedIsReadWhenTheCallHandedTheReadingLeavesUnsent() throws Exception {
        ExecutorService pool = Executors.newCachedThreadPool();
        try (Linked linked = Linked.open()) {
            FrameConnection c = linked.connection();
            Socket serve = linked.serve();
            // ids 14 (A), 15 (B, the map's last bin) and 16 (C, its first bin): C is the first waiter iterated
            field(c, "ids", AtomicInteger.class).set(14);
            ReentrantLock reader = field(c, "reader", ReentrantLock.class);
            ReentrantLock writing = field(c, "writing", ReentrantLock.class);
            Map<?, ?> waiters = field(c, "waiters", Map.class);
            DataInputStream in = new DataInputStream(serve.getInputStream());

            Future<ServeClient.Reply> a = pool.submit(() -> c.call(1, BODY, deadline(10_000), 10_000));
            assertEquals(14, frameId(in));
            waitFor(reader::isLocked); // A reads for everyone
            Future<ServeClient.Reply> b = pool.submit(() -> c.call(1, BODY, deadline(4_000), 4_000));
            assertEquals(15, frameId(in)); // B sent its frame and waits (parked: A holds the reader lock)
            writing.lock(); // a frame being written (a write that takes long): C cannot send its own
            Future<ServeClient.Reply> callC = pool.submit(() -> c.call(1, BODY, deadline(1_500), 1_500));
            waitFor(() -> waiters.size() == 3);
            Thread.sleep(100); // C waits for the write lock

            OutputStream out = serve.getOutputStream();
            out.write(answer(14));
            out.write(answer(15)); // B's answer arrives with A's
            out.flush();
            assertEquals(200, a.get(5, TimeUnit.SECONDS).status());
            ExecutionException unsent = assertThrows(ExecutionException.class, () -> callC.get(5, TimeUnit.SECONDS));
            assertInstanceOf(SocketTimeoutException.class, unsent.getCause(), "C could not send before its deadline");
            writing.unlock();
            assertEquals(200, b.get(10, TimeUnit.SECONDS).status(), "B's answer arrived 4 s before its deadline");
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * A frame's write still blocked at its own call's deadline breaks the connection then, even when a frame written
     * before it by a call that started later (a later deadline) had the watchdog's check scheduled for that later
     * deadline: the call must not wait past its timeout for it.
     */
    @Test
    @Timeout(value = 20, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void aBlockedWriteIsCutAtItsOwnDeadlineNotAtTheDeadlineOfAnEarlierWrite() throws Exception {
        ExecutorService pool = Executors.newCachedThreadPool();
        try (ServerSocket listener = new ServerSocket()) {
            listener.setReceiveBufferSize(16 << 10);
            listener.bind(new java.net.InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 1);
            Socket socket = new Socket();
            socket.setSendBufferSize(16 << 10);
            socket.connect(listener.getLocalSocketAddress());
            try (socket; Socket serve = listener.accept()) { // serve reads nothing: a serve that stopped reading
                serve.setReceiveBufferSize(16 << 10);
                FrameConnection c = new FrameConnection(socket, socket, URI.create("http://127.0.0.1:"
                        + listener.getLocalPort()));
                // B started later than A (its deadline is later) but wrote first: its small frame is sent whole
                Future<ServeClient.Reply> b = pool.submit(() -> c.call(1, BODY, deadline(3_000), 3_000));
                waitFor(() -> field(c, "watched", java.util.concurrent.atomic.AtomicBoolean.class).get());
                Thread.sleep(50);
                long start = System.nanoTime();
                // A, with the same timeout, started 2.5 s before B (it waited for the connection to open)
                Future<ServeClient.Reply> a = pool.submit(() -> c.call(1, new byte[8 << 20], deadline(500), 3_000));
                ExecutionException e = assertThrows(ExecutionException.class, () -> a.get(10, TimeUnit.SECONDS));
                long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
                org.junit.jupiter.api.Assertions.assertTrue(ms < 1_500, "A's write (deadline in 500 ms) was cut after "
                        + ms + " ms: " + e.getCause());
                assertThrows(ExecutionException.class, () -> b.get(10, TimeUnit.SECONDS));
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * A serve that trickles an answer frame (one byte just before each read would time out) cannot hold the call
     * reading it past that call's deadline: the frame must arrive whole by then, else the connection is reset. Before,
     * each read had the whole request timeout, so a 40-byte frame could hold a broker thread 40 timeouts.
     */
    @Test
    @Timeout(value = 30, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void aTrickledAnswerFrameEndsTheCallAtItsDeadline() throws Exception {
        ExecutorService pool = Executors.newCachedThreadPool();
        try (Linked linked = Linked.open()) {
            FrameConnection c = linked.connection();
            Socket serve = linked.serve();
            long start = System.nanoTime();
            Future<ServeClient.Reply> call = pool.submit(() -> c.call(1, BODY, deadline(1_000), 1_000));
            int id = frameId(new DataInputStream(serve.getInputStream()));
            Future<?> trickle = pool.submit(() -> {
                OutputStream out = serve.getOutputStream();
                for (byte b : answer(id)) {
                    out.write(b);
                    out.flush();
                    Thread.sleep(300); // well within each read's timeout
                }
                return null;
            });
            ExecutionException e = assertThrows(ExecutionException.class, () -> call.get(20, TimeUnit.SECONDS));
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            org.junit.jupiter.api.Assertions.assertTrue(ms < 1_500, "the call ended after " + ms + " ms: "
                    + e.getCause());
            assertInstanceOf(FrameConnection.Broken.class, e.getCause());
            org.junit.jupiter.api.Assertions.assertTrue(c.isBroken(), "a frame begun and not whole breaks it");
            trickle.cancel(true);
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * An answer frame that declares a huge length (200 MB, under the 256 MiB limit) and then sends little costs the
     * broker's heap only what arrived, not the length declared: before, the reading call allocated it all at once.
     */
    @Test
    @Timeout(value = 30, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void aHugeDeclaredLengthAllocatesOnlyWhatArrives() throws Exception {
        ExecutorService pool = Executors.newCachedThreadPool();
        try (Linked linked = Linked.open()) {
            FrameConnection c = linked.connection();
            Socket serve = linked.serve();
            com.sun.management.ThreadMXBean threads =
                    (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
            Future<Long> call = pool.submit(() -> {
                long before = threads.getCurrentThreadAllocatedBytes();
                try {
                    c.call(1, BODY, deadline(1_000), 1_000);
                } catch (java.io.IOException e) {
                    // expected: the frame never arrives whole
                }
                return threads.getCurrentThreadAllocatedBytes() - before;
            });
            int id = frameId(new DataInputStream(serve.getInputStream()));
            OutputStream out = serve.getOutputStream();
            out.write(ByteBuffer.allocate(10 + 1000).putInt(200_000_000).putInt(id).putShort((short) 200).array());
            out.flush();
            long allocated = call.get(10, TimeUnit.SECONDS);
            org.junit.jupiter.api.Assertions.assertTrue(allocated < 16 << 20, "the reading call allocated "
                    + allocated + " bytes for 1,000 that arrived");
            org.junit.jupiter.api.Assertions.assertTrue(c.isBroken());
        } finally {
            pool.shutdownNow();
        }
    }

    /** An answer frame larger than the first buffer (64 KiB) is read whole, byte for byte. */
    @Test
    @Timeout(value = 30, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void aLargeAnswerFrameIsReadWhole() throws Exception {
        ExecutorService pool = Executors.newCachedThreadPool();
        try (Linked linked = Linked.open()) {
            FrameConnection c = linked.connection();
            Socket serve = linked.serve();
            Future<ServeClient.Reply> call = pool.submit(() -> c.call(1, BODY, deadline(5_000), 5_000));
            int id = frameId(new DataInputStream(serve.getInputStream()));
            byte[] body = new byte[300_001];
            new java.util.Random(7).nextBytes(body);
            OutputStream out = serve.getOutputStream();
            out.write(ByteBuffer.allocate(10 + body.length).putInt(6 + body.length).putInt(id).putShort((short) 200)
                    .put(body).array());
            out.flush();
            org.junit.jupiter.api.Assertions.assertArrayEquals(body, call.get(10, TimeUnit.SECONDS).body());
        } finally {
            pool.shutdownNow();
        }
    }

    /** A FrameConnection to a fake serve on loopback: the connection under test and serve's end of its socket. */
    private record Linked(ServerSocket listener, Socket socket, Socket serve, FrameConnection connection)
            implements AutoCloseable {
        static Linked open() throws java.io.IOException {
            ServerSocket listener = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
            Socket socket = new Socket(InetAddress.getLoopbackAddress(), listener.getLocalPort());
            return new Linked(listener, socket, listener.accept(), new FrameConnection(socket, socket,
                    URI.create("http://127.0.0.1:" + listener.getLocalPort())));
        }

        @Override
        public void close() throws java.io.IOException {
            serve.close();
            socket.close();
            listener.close();
        }
    }

    private static long deadline(int ms) {
        return System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
    }

    /** Read one request frame; its id. */
    private static int frameId(DataInputStream in) throws Exception {
        int length = in.readInt();
        int id = in.readInt();
        in.readFully(new byte[length - 4]);
        return id;
    }

    private static byte[] answer(int id) {
        byte[] body = "{\"results\":[\"ALLOWED\"],\"offset\":1}".getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(10 + body.length).putInt(6 + body.length).putInt(id).putShort((short) 200)
                .put(body).array();
    }

    private static <T> T field(Object o, String name, Class<T> type) {
        try {
            Field f = o.getClass().getDeclaredField(name);
            f.setAccessible(true);
            return type.cast(f.get(o));
        } catch (ReflectiveOperationException e) {
            throw new AssertionError(e);
        }
    }

    private static void waitFor(java.util.function.BooleanSupplier condition) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > end) {
                throw new AssertionError("timed out waiting");
            }
            Thread.sleep(5);
        }
    }
}
