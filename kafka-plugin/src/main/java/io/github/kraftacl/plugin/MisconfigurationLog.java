package io.github.kraftacl.plugin;

import java.net.URI;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import javax.net.ssl.SSLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Permanent misconfigurations between the plugin and serve (serve refuses the plugin's token or principal, the TLS
 * handshake fails): an ERROR naming the cause and the fix at the first occurrence, then at most one per minute
 * per serve and cause, with the count in between.
 *
 * <p>Thread-safe. Waiting does not cure these, so they are never only INFO: without this a broker with a wrong
 * token waits for serve forever with nothing but a status line every 10 s. The rate limit is per JVM: a combined
 * broker and controller has two authorizer instances, and says it once.
 */
final class MisconfigurationLog {
    private static final Logger LOG = LoggerFactory.getLogger(MisconfigurationLog.class);
    static final long REPEAT_EVERY_MS = 60_000;

    /** The last time one cause at one serve was logged, and how often it happened since. */
    private static final class Seen {
        long loggedAtMs;
        long since;
    }

    private final String tokenFile; // null without a token
    private static final Map<String, Seen> SEEN = new ConcurrentHashMap<>();

    MisconfigurationLog(String tokenFile) {
        this.tokenFile = tokenFile;
    }

    /**
     * True (and logged) when this answer shows a misconfiguration: 401 from serve, or 403 refusing the plugin's
     * principal the decision API.
     */
    boolean answered(URI server, String path, int status, WireJson.ErrorBody error) {
        String what = server + " answered " + path + " with HTTP " + status
                + (error.code().isEmpty() ? "" : " " + error.code()) + ": " + error.message();
        if (status == 401) {
            report(server, "401", what + ": " + (tokenFile == null
                    ? "the plugin sends no token (kraft.acl.token.file is not set); set it to a file holding a "
                    + "token that serve's auth.token.file lists for a principal in serve's broker.principals"
                    : "the token in kraft.acl.token.file=" + tokenFile + " is not in serve's auth.token.file; "
                    + "add it there (\"<principal> <token>\", the principal listed in serve's broker.principals) "
                    + "or fix the token file"));
            return true;
        }
        if (status == 403 && "AUTHORIZATION_FAILED".equals(error.code())) {
            report(server, "403", what + ": the plugin's principal may not ask decisions on behalf of clients; "
                    + "add it to broker.principals in serve's configuration");
            return true;
        }
        return false;
    }

    /** True (and logged) when this failure is a TLS handshake or protocol failure. */
    boolean failed(URI server, Exception e) {
        if (!(e instanceof SSLException)) {
            return false;
        }
        report(server, "tls", "the TLS handshake with " + server + " failed: " + e.getMessage() + ": check that "
                + "kraft.acl.ssl.truststore.* trusts serve's certificate (and its name matches the URL's host, or "
                + "kraft.acl.ssl.endpoint.identification.algorithm is empty), that kraft.acl.ssl.keystore.* holds a "
                + "client certificate serve's ssl.cafile accepts, and that the URL is serve's SSL listener");
        return true;
    }

    private void report(URI server, String cause, String message) {
        Seen s = SEEN.computeIfAbsent(server + " " + cause, k -> new Seen());
        long now = System.currentTimeMillis();
        long count;
        synchronized (s) {
            s.since++;
            if (s.loggedAtMs != 0 && now - s.loggedAtMs < REPEAT_EVERY_MS) {
                return;
            }
            count = s.since;
            s.since = 0;
            s.loggedAtMs = now;
        }
        LOG.error("kraft-acl: serve {} cannot be used until this is fixed ({} time(s) since the last such "
                + "message): {}", server, count, message);
    }
}
