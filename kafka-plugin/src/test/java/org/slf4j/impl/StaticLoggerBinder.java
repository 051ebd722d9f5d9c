package org.slf4j.impl;

import io.github.kraftacl.plugin.CapturedLogs;
import org.slf4j.ILoggerFactory;
import org.slf4j.spi.LoggerFactoryBinder;

/** The tests' SLF4J 1.7 binding: every logger writes into {@link CapturedLogs}, so tests can read what was logged. */
public final class StaticLoggerBinder implements LoggerFactoryBinder {
    /** SLF4J's handshake: the API version this binding was written for. */
    public static String REQUESTED_API_VERSION = "1.7.36";
    private static final StaticLoggerBinder SINGLETON = new StaticLoggerBinder();

    private StaticLoggerBinder() {}

    /** SLF4J's entry point. */
    public static StaticLoggerBinder getSingleton() {
        return SINGLETON;
    }

    @Override
    public ILoggerFactory getLoggerFactory() {
        return CapturedLogs::logger;
    }

    @Override
    public String getLoggerFactoryClassStr() {
        return CapturedLogs.class.getName();
    }
}
