package io.github.kraftacl.plugin;

import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the plugin's unit tests against a {@link FakeServe} share: a fake serve per test, the plugin a test configures
 * (closed after it), and the captured logs at {@link #logLevel()} during the test (OFF after it).
 */
abstract class FakeServeTest {
    @TempDir
    Path dir;
    FakeServe serve;
    KraftAclAuthorizer plugin;

    /** The level the tests' loggers capture at (INFO unless a test class says otherwise). */
    String logLevel() {
        return "INFO";
    }

    @BeforeEach
    void startFakeServe() throws Exception {
        CapturedLogs.level(logLevel());
        CapturedLogs.clear();
        serve = new FakeServe();
    }

    @AfterEach
    void stopFakeServe() {
        if (plugin != null) {
            plugin.close();
        }
        serve.close();
        CapturedLogs.level("OFF");
    }
}
