package io.github.kraftacl.plugin;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import javax.net.ssl.SSLContext;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;

/**
 * The plugin's settings, read from the broker's properties (the map Kafka passes to {@code configure}).
 *
 * <p>Immutable once parsed. Every bad value throws Kafka's {@link ConfigException} naming the key and the
 * value, so the broker refuses to start with one clear line. TLS settings are Kafka's own {@code ssl.*}
 * keys under the {@code kraft.acl.} prefix, parsed by Kafka's public ConfigDef and loaded by {@link TlsContext}
 * (JKS, PKCS12 or PEM key and trust stores, as for a Kafka client).
 */
final class PluginConfig {
    static final String PREFIX = "kraft.acl.";
    static final String URLS = PREFIX + "urls";
    static final String TOKEN_FILE = PREFIX + "token.file";
    static final String CONNECT_TIMEOUT_MS = PREFIX + "connect.timeout.ms";
    static final String REQUEST_TIMEOUT_MS = PREFIX + "request.timeout.ms";
    static final String ADMIN_TIMEOUT_MS = PREFIX + "admin.timeout.ms";
    static final String READY_POLL_MS = PREFIX + "ready.poll.ms";
    static final String PROBE_INTERVAL_MS = PREFIX + "probe.interval.ms";
    static final String TRANSPORT = PREFIX + "serve.transport";
    static final String CACHE_ENABLED = PREFIX + "cache.enabled";
    static final String CACHE_MAX_ENTRIES = PREFIX + "cache.max.entries";
    static final String CACHE_MAX_BYTES = PREFIX + "cache.max.bytes";
    static final String HEARTBEAT_MS = PREFIX + "cache.heartbeat.ms";
    static final String HEARTBEAT_GRACE_MS = PREFIX + "cache.heartbeat.grace.ms";
    static final String SSL_PREFIX = PREFIX + "ssl.";
    static final String SUPER_USERS = "super.users";
    static final String HOSTNAME_CHECK = "ssl.endpoint.identification.algorithm";

    final List<URI> urls;
    final Optional<String> token;
    final String tokenFile; // as configured, for messages; null without a token
    final int connectTimeoutMs;
    final int requestTimeoutMs;
    final int adminTimeoutMs;
    final int readyPollMs;
    final int probeIntervalMs;
    final boolean frames; // kraft.acl.serve.transport=frames: decisions over serve's decision frames
    final boolean cacheEnabled;
    final int cacheMaxEntries;
    final long cacheMaxBytes;
    final int heartbeatMs;
    final int heartbeatGraceMs;
    final Set<String> superUsers;
    final SSLContext sslContext; // null when every URL is http
    final boolean verifyHostname;

    private PluginConfig(Map<String, ?> configs) {
        this.urls = urls(text(configs, URLS, null));
        String tokenPath = text(configs, TOKEN_FILE, null);
        this.token = token(tokenPath);
        this.tokenFile = token.isPresent() ? tokenPath : null;
        this.connectTimeoutMs = millis(configs, CONNECT_TIMEOUT_MS, 1000);
        this.requestTimeoutMs = millis(configs, REQUEST_TIMEOUT_MS, 2000);
        this.adminTimeoutMs = millis(configs, ADMIN_TIMEOUT_MS, 30000);
        this.readyPollMs = millis(configs, READY_POLL_MS, 200);
        this.probeIntervalMs = millis(configs, PROBE_INTERVAL_MS, 500);
        this.frames = frames(text(configs, TRANSPORT, ""));
        this.cacheEnabled = bool(configs, CACHE_ENABLED, true);
        this.cacheMaxEntries = (int) number(configs, CACHE_MAX_ENTRIES, 100_000, 1, Integer.MAX_VALUE, "entries");
        this.cacheMaxBytes = number(configs, CACHE_MAX_BYTES, 64L << 20, 1L << 16, Long.MAX_VALUE / 2,
                "bytes (at least 65536)");
        this.heartbeatMs = (int) number(configs, HEARTBEAT_MS, 500, 1, 60_000, "milliseconds (serve waits at most 60 s)");
        this.heartbeatGraceMs = (int) number(configs, HEARTBEAT_GRACE_MS, 500, 1, 60_000, "milliseconds");
        this.superUsers = superUsers(text(configs, SUPER_USERS, ""));
        boolean tls = urls.stream().anyMatch(u -> u.getScheme().equals("https"));
        Map<String, Object> rawSsl = rawSslSettings(configs);
        Map<String, Object> ssl = sslSettings(rawSsl);
        this.sslContext = tls ? sslContext(ssl, rawSsl) : null;
        Object check = ssl.get(HOSTNAME_CHECK);
        this.verifyHostname = check == null || !check.toString().isEmpty();
    }

    /** Parse and validate; throws ConfigException naming the first bad key. */
    static PluginConfig parse(Map<String, ?> configs) {
        return new PluginConfig(configs);
    }

    private static String text(Map<String, ?> configs, String key, String fallback) {
        Object value = configs.get(key);
        return value == null ? fallback : value.toString().trim();
    }

    private static List<URI> urls(String value) {
        if (value == null || value.isEmpty()) {
            throw new ConfigException(URLS, value, "required: the kraft-acl serve URLs, e.g. http://127.0.0.1:9190");
        }
        List<URI> out = new ArrayList<>();
        for (String piece : value.split(",")) {
            String text = piece.trim();
            if (text.isEmpty()) {
                continue;
            }
            URI uri;
            try {
                uri = new URI(text.endsWith("/") ? text.substring(0, text.length() - 1) : text);
            } catch (URISyntaxException e) {
                throw new ConfigException(URLS, value, "not a URL: " + text + " (" + e.getMessage() + ")");
            }
            String scheme = uri.getScheme();
            if (scheme == null || !(scheme.equals("http") || scheme.equals("https")) || uri.getHost() == null
                    || uri.getPort() < 0 || !(uri.getRawPath() == null || uri.getRawPath().isEmpty())) {
                throw new ConfigException(URLS, value, "expected http://host:port or https://host:port, got " + text);
            }
            out.add(uri);
        }
        if (out.isEmpty()) {
            throw new ConfigException(URLS, value, "no URL given");
        }
        return List.copyOf(out);
    }

    /** The bearer token: the first line of the file that is neither blank nor a # comment. */
    private static Optional<String> token(String file) {
        if (file == null || file.isEmpty()) {
            return Optional.empty();
        }
        Path path = Path.of(file);
        if (!path.isAbsolute() && !Files.exists(path)) {
            throw new ConfigException(TOKEN_FILE, file, "no such file: a relative path is resolved against the "
                    + "broker's working directory (" + Path.of("").toAbsolutePath() + "); give an absolute path");
        }
        List<String> lines;
        try {
            lines = Files.readAllLines(path, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new ConfigException(TOKEN_FILE, file, "cannot read the token file (" + path.toAbsolutePath()
                    + "): " + e + "; the broker's user must be able to read it");
        }
        for (String line : lines) {
            String text = line.trim();
            if (!text.isEmpty() && !text.startsWith("#")) {
                if (text.length() < 16 || text.chars().anyMatch(Character::isWhitespace)) {
                    throw new ConfigException(TOKEN_FILE, file,
                            "the token must be one word of at least 16 characters (as in serve's auth.token.file)");
                }
                return Optional.of(text);
            }
        }
        throw new ConfigException(TOKEN_FILE, file, "the file holds no token");
    }

    /**
     * How long a remembered decision may still be used after serve last proved it current: the heartbeat
     * interval plus one round trip's allowance (the staleness bound when serve stops answering).
     */
    long stalenessBoundMs() {
        return (long) heartbeatMs + heartbeatGraceMs;
    }

    private static boolean bool(Map<String, ?> configs, String key, boolean fallback) {
        String value = text(configs, key, null);
        if (value == null || value.isEmpty()) {
            return fallback;
        }
        if (value.equalsIgnoreCase("true") || value.equalsIgnoreCase("false")) {
            return Boolean.parseBoolean(value);
        }
        throw new ConfigException(key, value, "must be true or false");
    }

    private static long number(Map<String, ?> configs, String key, long fallback, long min, long max, String what) {
        String value = text(configs, key, null);
        if (value == null || value.isEmpty()) {
            return fallback;
        }
        try {
            long number = Long.parseLong(value);
            if (number >= min && number <= max) {
                return number;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new ConfigException(key, value, "must be a whole number of " + what + " from " + min + " to " + max);
    }

    private static int millis(Map<String, ?> configs, String key, int fallback) {
        String value = text(configs, key, null);
        if (value == null || value.isEmpty()) {
            return fallback;
        }
        try {
            int number = Integer.parseInt(value);
            if (number >= 1) {
                return number;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new ConfigException(key, value, "must be a whole number of milliseconds >= 1");
    }

    /** kraft.acl.serve.transport: frames (the default) or http. */
    private static boolean frames(String value) {
        if (value.isEmpty() || value.equalsIgnoreCase("frames")) {
            return true;
        }
        if (value.equalsIgnoreCase("http")) {
            return false;
        }
        throw new ConfigException(TRANSPORT, value, "must be frames (decisions over serve's decision frames, HTTP "
                + "for a serve without them) or http (every call over HTTP)");
    }

    /** Kafka's rules (StandardAuthorizer.getConfiguredSuperUsers): split on ';', trim, each Type:name. */
    static Set<String> superUsers(String value) {
        Set<String> out = new HashSet<>();
        for (String piece : value.split(";")) {
            String name = piece.trim();
            if (name.isEmpty()) {
                continue;
            }
            int colon = name.indexOf(':');
            if (colon <= 0) {
                throw new ConfigException(SUPER_USERS, value,
                        "expected a string in format principalType:principalName but got " + name);
            }
            out.add(name);
        }
        return Set.copyOf(out);
    }

    /** The kraft.acl.ssl.* keys as Kafka's ssl.* client keys, with their values as the operator wrote them. */
    private static Map<String, Object> rawSslSettings(Map<String, ?> configs) {
        Map<String, Object> raw = new HashMap<>();
        for (Map.Entry<String, ?> e : configs.entrySet()) {
            if (e.getKey().startsWith(SSL_PREFIX) && e.getValue() != null) {
                raw.put(e.getKey().substring(PREFIX.length()), e.getValue());
            }
        }
        return raw;
    }

    /** Those settings parsed and validated by Kafka's client SSL ConfigDef, with Kafka's defaults filled in. */
    private static Map<String, Object> sslSettings(Map<String, Object> raw) {
        try {
            return new HashMap<>(new ConfigDef().withClientSslSupport().parse(raw));
        } catch (ConfigException e) {
            throw new ConfigException("kraft.acl.ssl.* settings: " + e.getMessage());
        }
    }

    private static SSLContext sslContext(Map<String, Object> ssl, Map<String, Object> raw) {
        try {
            return TlsContext.build(ssl, raw);
        } catch (GeneralSecurityException | IOException | RuntimeException e) {
            throw new ConfigException(SSL_PREFIX + "*", null, "cannot build the TLS context: " + e);
        }
    }
}
