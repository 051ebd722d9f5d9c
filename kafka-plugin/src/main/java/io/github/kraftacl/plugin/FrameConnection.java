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
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One upgraded decision-frames connection that any number of threads share at once (thread-safe): each call's frame
 * carries its own id and is written whole under a write lock, and whichever waiting caller holds the reader lock reads
 * answers for everyone (leader/follower: no reader thread), handing each to its caller by id, until its own arrives.
 * A write still blocked at its call's deadline (serve stopped reading and the socket buffers are full) breaks the
 * connection: a shared watchdog thread resets the socket, which ends the write and every call waiting on it.
 */
final class FrameConnection {
    private static final int MAX_ANSWER = 1 << 28;

    /**
     * Where the write deadlines of every connection (and the deadline of each upgrade, and of each HTTP exchange:
     * {@link ServeClient}) are checked: one daemon thread, only while frames are written, a connection is upgraded or
     * an HTTP exchange is under way. Nothing it runs may block.
     * A connection keeps at most one check scheduled (not one per frame), so a busy connection costs it one wake-up
     * per request timeout, not one per decision.
     */
    static final ScheduledThreadPoolExecutor WATCHDOG = watchdog();

    private static ScheduledThreadPoolExecutor watchdog() {
        ScheduledThreadPoolExecutor w = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "kraft-acl-deadline");
            t.setDaemon(true);
            return t;
        });
        w.setKeepAliveTime(60, TimeUnit.SECONDS);
        w.allowCoreThreadTimeOut(true); // no thread left while no frame is written
        w.setRemoveOnCancelPolicy(true); // an upgrade's check, cancelled when it ends, leaves nothing queued
        return w;
    }

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
        /** Its frame is sent and it waits in await (where it takes the reading when woken), not still in send. */
        volatile boolean awaiting;

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
    private final Socket tcp; // socket itself, or the TCP socket under its TLS (closed to break the connection)
    final DataInputStream in; // read by the holder of reader (and by the upgrade, before any frame)
    final OutputStream out; // written under writing
    private final AtomicInteger ids = new AtomicInteger();
    private final Map<Integer, Waiter> waiters = new ConcurrentHashMap<>();
    private final ReentrantLock writing = new ReentrantLock();
    private final ReentrantLock reader = new ReentrantLock();
    private final AtomicReference<Broken> broken = new AtomicReference<>();
    private int soTimeoutMs = -1; // under reader
    private volatile long writeDeadline; // of the frame being written (under writing), and its call's timeout
    private volatile int writeTimeoutMs;
    private volatile boolean writingFrame; // a frame's write is in progress (set after the two above)
    private final AtomicBoolean watched = new AtomicBoolean(); // a check of the write deadline is scheduled
    private volatile long checkAt; // when that check runs (System.nanoTime())

    /** {@code tcp}: the TCP socket under {@code socket} when it is TLS, else {@code socket}. */
    FrameConnection(Socket socket, Socket tcp, URI server) throws IOException {
        this.server = server;
        this.socket = socket;
        this.tcp = tcp;
        this.in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
        this.out = socket.getOutputStream();
    }

    /** True once it broke or was closed: no call uses it any more. */
    boolean isBroken() {
        return broken.get() != null;
    }

    /**
     * Send one request frame of this kind and wait for its answer until the deadline ({@link System#nanoTime()}).
     * {@code timeoutMs}: the request timeout (for messages). An answer frame this call began to read must arrive whole
     * by its deadline, else the connection breaks: no serve sending a byte now and then holds a thread past it.
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
            send(id, own, frame, deadline, timeoutMs);
        }
        return await(id, own, deadline, timeoutMs);
    }

    /**
     * Write this frame whole before the call's deadline. A write still blocked at the deadline breaks the connection
     * ({@link #checkWrite}); a call that cannot take the write lock before its deadline (another frame's write is
     * blocked) times out without having sent anything, as does one whose deadline passed before it could write.
     */
    private void send(int id, Waiter own, byte[] frame, long deadline, int timeoutMs) throws IOException {
        try {
            if (!writing.tryLock(deadline - System.nanoTime(), TimeUnit.NANOSECONDS)) {
                throw unsent(id, own, timeoutMs);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // await ends the call as interrupted
            return;
        }
        long now = System.nanoTime();
        boolean late = deadline - now <= 0;
        try {
            if (!late && broken.get() == null) { // broken: this call already failed with it
                writeDeadline = deadline;
                writeTimeoutMs = timeoutMs;
                writingFrame = true;
                if (!watched.get() && watched.compareAndSet(false, true)) {
                    checkAt = deadline;
                    WATCHDOG.schedule(this::checkWrite, deadline - now, TimeUnit.NANOSECONDS);
                } else {
                    long at = checkAt;
                    if (at - deadline > TimeUnit.MILLISECONDS.toNanos(timeoutMs) / 20 || at - now <= 0) {
                        // the check is set for a later deadline (a call that started after this one wrote first:
                        // this one would wait past its timeout, beyond a 5% allowance that spares the watchdog a task
                        // per frame of concurrent calls), or is due now and may move to one: one more check, once
                        WATCHDOG.schedule(this::checkLateWrite, deadline - now, TimeUnit.NANOSECONDS);
                    }
                }
                try {
                    out.write(frame);
                } finally {
                    writingFrame = false;
                }
            }
        } catch (IOException e) {
            fail(e);
        } finally {
            writing.unlock();
        }
        if (late) {
            throw unsent(id, own, timeoutMs);
        }
    }

    /** This call ends unsent at its timeout, unless the connection broke first (then that is its error). */
    private IOException unsent(int id, Waiter own, int timeoutMs) {
        if (!own.result.compareAndSet(null, TIMED_OUT) && own.result.get() instanceof Broken b) {
            return new Broken(b.getMessage(), (IOException) b.getCause(), b.resendable);
        }
        waiters.remove(id);
        return new SocketTimeoutException("could not send decision frame " + Integer.toUnsignedString(id) + " to "
                + server + " within " + timeoutMs + " ms");
    }

    /**
     * The watchdog: break the connection when the frame being written is still being written past its deadline,
     * else check again at the deadline of the write in progress, or stop watching until the next write. (Deadlines
     * run from each call's start, so a frame written later may have an earlier deadline than the one the check was
     * scheduled for: {@link #send} then schedules {@link #checkLateWrite} too.)
     */
    private void checkWrite() {
        do {
            long now = System.nanoTime(); // before reading writingFrame: the write was in progress at or after now
            if (writingFrame) {
                long late = now - writeDeadline;
                if (late >= 0) {
                    fail(new SocketTimeoutException("a decision frame's write did not end within " + writeTimeoutMs
                            + " ms (serve does not read)"));
                    return;
                }
                checkAt = now - late;
                WATCHDOG.schedule(this::checkWrite, -late, TimeUnit.NANOSECONDS);
                return;
            }
            watched.set(false);
        } while (writingFrame && watched.compareAndSet(false, true)); // a write began meanwhile and saw it watched
    }

    /** One more check, at the deadline of a frame written while the watchdog's was set for a later one. */
    private void checkLateWrite() {
        long now = System.nanoTime();
        if (writingFrame && now - writeDeadline >= 0) {
            fail(new SocketTimeoutException("a decision frame's write did not end within " + writeTimeoutMs
                    + " ms (serve does not read)"));
        }
    }

    private ServeClient.Reply await(int id, Waiter own, long deadline, int timeoutMs) throws IOException {
        own.awaiting = true; // before its first try of the reader lock: a reader leaving after that try wakes it
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
            // a frame begun must arrive whole by this call's deadline, not within a timeout per read (a serve sending
            // a byte now and then would hold this thread for ever): else the connection breaks
            byte[] head = new byte[9];
            readFully(head, 0, deadline, timeoutMs);
            ByteBuffer fields = ByteBuffer.wrap(head);
            int length = first << 24 | (fields.getShort() & 0xffff) << 8 | (fields.get() & 0xff);
            if (length < 6 || length > MAX_ANSWER) {
                throw new IOException(server + " sent a decision frame of length " + Integer.toUnsignedString(length)
                        + " (expected 6 to " + MAX_ANSWER + ")");
            }
            int id = fields.getInt();
            int status = fields.getShort() & 0xffff;
            // the heap it takes grows with what arrives, not with the length declared (up to 256 MiB)
            byte[] body = new byte[Math.min(length - 6, 1 << 16)];
            readFully(body, 0, deadline, timeoutMs);
            while (body.length < length - 6) {
                int from = body.length;
                body = Arrays.copyOf(body, (int) Math.min(length - 6, 2L * from));
                readFully(body, from, deadline, timeoutMs);
            }
            complete(id, new ServeClient.Reply(status, body, server)); // an id nobody waits for: dropped
            if (framingError(status, body)) {
                fail(new EOFException("serve closes the connection after an HTTP " + status + " answer about a "
                        + "frame's length"));
            }
        }
    }

    /**
     * Fill these bytes from {@code from}, waiting for them no later than the deadline: a SocketTimeoutException past
     * it (a frame too slow). Bytes already arrived are read whatever the time (a thread descheduled meanwhile).
     */
    private void readFully(byte[] bytes, int from, long deadline, int timeoutMs) throws IOException {
        for (int at = from; at < bytes.length; ) {
            long remaining = deadline - System.nanoTime();
            if (remaining <= 0 && in.available() == 0) {
                throw new SocketTimeoutException("a decision frame did not arrive whole within the call's " + timeoutMs
                        + " ms (serve sent it too slowly)");
            }
            long ms = TimeUnit.NANOSECONDS.toMillis(remaining + 999_999);
            soTimeout((int) Math.max(1, Math.min(Integer.MAX_VALUE, ms))); // never 0 (no timeout)
            int n = in.read(bytes, at, bytes.length - at);
            if (n < 0) {
                throw new EOFException("end of stream");
            }
            at += n;
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

    /**
     * Wake one other call still waiting, to read next (the reader left, or a call that was to read timed out): one in
     * await, never one still sending its frame, which may leave unsent without reading (the answers already arrived
     * would then wait unread until their calls time out); one that reaches await later tries the reader lock itself.
     */
    private void wakeNextReader() {
        Thread self = Thread.currentThread();
        for (Waiter w : waiters.values()) {
            if (w.thread != self && w.awaiting && w.result.get() == null) {
                LockSupport.unpark(w.thread);
                return;
            }
        }
    }

    /**
     * Break this connection at the deadline unless the returned task is cancelled first: bounds a step that no read
     * timeout bounds (the TLS handshake and the upgrade, which a peer sending a byte now and then keeps going).
     */
    ScheduledFuture<?> breakAt(long deadline, String what, AtomicBoolean fired) {
        return WATCHDOG.schedule(() -> {
            fired.set(true);
            fail(new SocketTimeoutException(what));
        }, Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
    }

    /**
     * Break the connection: close it, and every call waiting on it fails with this cause. It closes the TCP socket
     * (under TLS too: closing an SSLSocket waits for a blocked write to end), reset after a timeout.
     */
    void fail(IOException cause) {
        boolean closedByServe = cause instanceof EOFException || cause instanceof SocketException;
        Broken b = new Broken(server + (closedByServe ? " closed the decision-frames connection before answering: "
                : cause instanceof SocketTimeoutException ? " timed out on the decision-frames connection: "
                : " broke the decision-frames connection: ") + ServeClient.describe(cause), cause, closedByServe);
        if (broken.compareAndSet(null, b)) {
            try {
                if (cause instanceof SocketTimeoutException) {
                    tcp.setSoLinger(true, 0); // a reset: the unsent bytes of a blocked write are dropped at once
                }
            } catch (IOException e) {
                // closed anyway below
            }
            try {
                tcp.close();
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
