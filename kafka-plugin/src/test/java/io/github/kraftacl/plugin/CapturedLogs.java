package io.github.kraftacl.plugin;

import java.util.List;
import java.util.Deque;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.helpers.MarkerIgnoringBase;
import org.slf4j.helpers.MessageFormatter;

/**
 * The log lines of the tests, in memory (the tests' SLF4J binding writes here): level, logger and message, the last
 * 10,000 kept. {@link #level} sets the level of every logger; it starts at the system property
 * {@code capturedlogs.level} (TRACE, DEBUG, INFO, WARN, ERROR), else OFF, so PluginBench (whose classpath has these
 * classes) logs nothing unless told to.
 */
public final class CapturedLogs {
    /** One logged line. */
    public record Line(String level, String logger, String message) {}

    private static final int KEEP = 10_000;
    private static final List<String> LEVELS = List.of("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "OFF");
    private static final Deque<Line> LINES = new ConcurrentLinkedDeque<>();
    private static final AtomicInteger COUNT = new AtomicInteger();
    private static volatile int threshold = LEVELS.indexOf(System.getProperty("capturedlogs.level", "OFF"));

    private CapturedLogs() {}

    /** SLF4J's factory method. */
    public static Logger logger(String name) {
        return new Captured(name);
    }

    /** Lines logged so far by this logger (null: any) at this level (null: any). */
    public static List<Line> lines(String logger, String level) {
        return LINES.stream().filter(l -> (logger == null || l.logger().equals(logger))
                && (level == null || l.level().equals(level))).toList();
    }

    /** Forget every line. */
    public static void clear() {
        LINES.clear();
        COUNT.set(0);
    }

    /** Log only this level and above (TRACE, DEBUG, INFO, WARN, ERROR, or OFF). */
    public static void level(String level) {
        threshold = LEVELS.indexOf(level);
    }

    private static void keep(Line line) {
        LINES.addLast(line);
        if (COUNT.incrementAndGet() > KEEP && LINES.pollFirst() != null) {
            COUNT.decrementAndGet();
        }
    }

    /** A logger appending to LINES. */
    private static final class Captured extends MarkerIgnoringBase {
        private static final long serialVersionUID = 1L;

        Captured(String name) {
            this.name = name;
        }

        private boolean on(int level) {
            return level >= threshold;
        }

        private void add(int level, String format, Object... args) {
            if (on(level)) {
                keep(new Line(LEVELS.get(level), name, MessageFormatter.arrayFormat(format, args).getMessage()));
            }
        }

        public boolean isTraceEnabled() { return on(0); }
        public void trace(String msg) { add(0, msg); }
        public void trace(String format, Object arg) { add(0, format, arg); }
        public void trace(String format, Object a, Object b) { add(0, format, a, b); }
        public void trace(String format, Object... args) { add(0, format, args); }
        public void trace(String msg, Throwable t) { add(0, msg + " " + t); }
        public boolean isDebugEnabled() { return on(1); }
        public void debug(String msg) { add(1, msg); }
        public void debug(String format, Object arg) { add(1, format, arg); }
        public void debug(String format, Object a, Object b) { add(1, format, a, b); }
        public void debug(String format, Object... args) { add(1, format, args); }
        public void debug(String msg, Throwable t) { add(1, msg + " " + t); }
        public boolean isInfoEnabled() { return on(2); }
        public void info(String msg) { add(2, msg); }
        public void info(String format, Object arg) { add(2, format, arg); }
        public void info(String format, Object a, Object b) { add(2, format, a, b); }
        public void info(String format, Object... args) { add(2, format, args); }
        public void info(String msg, Throwable t) { add(2, msg + " " + t); }
        public boolean isWarnEnabled() { return on(3); }
        public void warn(String msg) { add(3, msg); }
        public void warn(String format, Object arg) { add(3, format, arg); }
        public void warn(String format, Object a, Object b) { add(3, format, a, b); }
        public void warn(String format, Object... args) { add(3, format, args); }
        public void warn(String msg, Throwable t) { add(3, msg + " " + t); }
        public boolean isErrorEnabled() { return on(4); }
        public void error(String msg) { add(4, msg); }
        public void error(String format, Object arg) { add(4, format, arg); }
        public void error(String format, Object a, Object b) { add(4, format, a, b); }
        public void error(String format, Object... args) { add(4, format, args); }
        public void error(String msg, Throwable t) { add(4, msg + " " + t); }
    }
}
