package io.github.kraftacl.plugin;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One upgraded decision-frames connection that any number of threads share at once (thread-safe): each call's frame
 * carries its own id and is written whole under a write lock, and whichever waiting caller holds the reader lock reads
 * answers for everyone (leader/follower: no reader thread), handing each to its caller by id, until its own arrives.
 */
final class FrameConnection {
    private static final int MAX_ANSWER = 1 << 28;

    /**
     * The connection broke before this call's answer arrived (every call waiting on it gets one). {@code resendable}:
     * serve closed or reset it (an idle connection it timed out, or one it closes after a framing error: a 413, or a
     * 400 naming {@code length}), so the decision may be sent once more on a new connection; never after a timeout or
     * a malformed frame.
     */
    static final class Broken extends IOException {
        private static final long serialVersionUID = 1L;
        final boolean resendable;

        Broken(String message, IOException cause, boolean resendable) {
            super(message, cause);
            this.resendable = resendable;
        }
    }

    /** One call waiting for its answer: a {@link ServeClient.Reply}, a {@link Broken}, or {@link #TIMED_OUT}. */
    private static final class Waiter {
        final Thread thread = Thread.currentThread();
        final AtomicReference<Object> result = new AtomicReference<>();

        /** Set the result unless the call already ended (timed out); wake its thread. */
        void complete(Object value) {
            if (result.compareAndSet(null, value)) {
                LockSupport.unpark(thread);
            }
        }
    }

    private static final Object TIMED_OUT = new Object();

    final URI server;
    final Socket socket;
    final DataInputStream in; // read by the holder of reader (and by the upgrade, before any frame)
    final OutputStream out; // written under writing
    private final AtomicInteger ids = new AtomicInteger();
    private final Map<Integer, Waiter> waiters = new ConcurrentHashMap<>();
    private final ReentrantLock writing = new ReentrantLock();
    private final ReentrantLock reader = new ReentrantLock();
    private final AtomicReference<Broken> broken = new AtomicReference<>();
    private int soTimeoutMs = -1; // under reader

    FrameConnection(Socket socket, URI server) throws IOException {
        this.server = server;
        this.socket = socket;
        this.in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
        this.out = socket.getOutputStream();
    }

    /** True once it broke or was closed: no call uses it any more. */
    boolean isBroken() {
        return broken.get() != null;
    }

    /**
     * Send one request frame of this kind and wait for its answer until the deadline ({@link System#nanoTime()}).
     * {@code timeoutMs}: the request timeout, within which a frame whose first byte arrived must arrive whole.
     */
    ServeClient.Reply call(int kind, byte[] body, long deadline, int timeoutMs) throws IOException {
        int id = ids.getAndIncrement();
        Waiter own = new Waiter();
        waiters.put(id, own);
        Broken failure = broken.get();
        if (failure != null) {
            complete(id, failure); // broke before this call registered: the breaker may have missed it
        } else {
            byte[] frame = ByteBuffer.allocate(9 + body.length).putInt(5 + body.length).putInt(id).put((byte) kind)
                    .put(body).array();
            writing.lock();
            try {
                out.write(frame);
            } catch (IOException e) {
                fail(e);
            } finally {
                writing.unlock();
            }
        }
        return await(id, own, deadline, timeoutMs);
    }

    private ServeClient.Reply await(int id, Waiter own, long deadline, int timeoutMs) throws IOException {
        while (true) {
            Object result = own.result.get();
            if (result instanceof ServeClient.Reply reply) {
                return reply;
            }
            if (result instanceof Broken b) {
                throw new Broken(b.getMessage(), (IOException) b.getCause(), b.resendable); // this thread's trace
            }
            long remaining = deadline - System.nanoTime();
            boolean interrupted = Thread.currentThread().isInterrupted(); // parkNanos would not wait
            if ((remaining <= 0 || interrupted) && own.result.compareAndSet(null, TIMED_OUT)) {
                waiters.remove(id);
                wakeNextReader();
                if (interrupted) {
                    throw new InterruptedIOException("interrupted while waiting for " + server);
                }
                throw new SocketTimeoutException(server + " did not answer decision frame "
                        + Integer.toUnsignedString(id) + " within " + timeoutMs + " ms");
            }
            if (remaining <= 0 || interrupted) {
                continue; // its answer or failure arrived just now
            }
            if (reader.tryLock()) {
                try {
                    readUntil(own, deadline, timeoutMs);
                } catch (IOException e) {
                    fail(e);
                } finally {
                    reader.unlock();
                    wakeNextReader();
                }
            } else {
                LockSupport.parkNanos(this, remaining);
            }
        }
    }

    /** Holding reader: read answers, each to its caller, until this call's arrives or its deadline passes. */
    private void readUntil(Waiter own, long deadline, int timeoutMs) throws IOException {
        while (own.result.get() == null) {
            long remaining = deadline - System.nanoTime();
            if (remaining <= 0) {
                return;
            }
            soTimeout((int) Math.min(Integer.MAX_VALUE, TimeUnit.NANOSECONDS.toMillis(remaining + 999_999))); // >= 1
            int first;
            try {
                first = in.read();
            } catch (SocketTimeoutException e) {
                return; // between frames: the connection stays usable
            }
            if (first < 0) {
                throw new EOFException("end of stream");
            }
            soTimeout(timeoutMs); // a frame begun must arrive whole within the request timeout
            int length = first << 24 | in.readUnsignedByte() << 16 | in.readUnsignedShort();
            if (length < 6 || length > MAX_ANSWER) {
                throw new IOException(server + " sent a decision frame of length " + Integer.toUnsignedString(length)
                        + " (expected 6 to " + MAX_ANSWER + ")");
            }
            int id = in.readInt();
            int status = in.readUnsignedShort();
            byte[] body = new byte[length - 6];
            in.readFully(body);
            complete(id, new ServeClient.Reply(status, body, server)); // an id nobody waits for: dropped
            if (framingError(status, body)) {
                fail(new EOFException("serve closes the connection after an HTTP " + status + " answer about a "
                        + "frame's length"));
            }
        }
    }

    /**
     * True for the answers after which serve closes the connection: a frame it cannot read (a 413 for a body over its
     * limit, a 400 naming {@code length} for a length below 5). Any other 400 (an unknown kind, a bad field) ends only
     * its own frame: serve reads on, and so does the connection.
     */
    private static boolean framingError(int status, byte[] body) {
        return status == 413 || (status == 400 && WireJson.error(body).field().equals("length"));
    }

    private void soTimeout(int ms) throws SocketException {
        if (ms != soTimeoutMs) {
            socket.setSoTimeout(ms);
            soTimeoutMs = ms;
        }
    }

    private void complete(int id, Object result) {
        Waiter w = waiters.remove(id);
        if (w != null) {
            w.complete(result);
        }
    }

    /** Wake one other call still waiting, to read next (the reader left, or a call that was to read timed out). */
    private void wakeNextReader() {
        Thread self = Thread.currentThread();
        for (Waiter w : waiters.values()) {
            if (w.thread != self && w.result.get() == null) {
                LockSupport.unpark(w.thread);
                return;
            }
        }
    }

    /** Break the connection: close it, and every call waiting on it fails with this cause. */
    void fail(IOException cause) {
        boolean closedByServe = cause instanceof EOFException || cause instanceof SocketException;
        Broken b = new Broken(server + (closedByServe ? " closed the decision-frames connection before answering: "
                : " broke the decision-frames connection: ") + ServeClient.describe(cause), cause, closedByServe);
        if (broken.compareAndSet(null, b)) {
            try {
                socket.close();
            } catch (IOException e) {
                // nothing more to release
            }
        }
        Broken first = broken.get();
        for (Integer id : waiters.keySet()) {
            complete(id, first);
        }
    }
}
