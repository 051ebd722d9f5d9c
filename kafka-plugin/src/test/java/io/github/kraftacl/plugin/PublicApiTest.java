package io.github.kraftacl.plugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.spi.ToolProvider;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.resource.ResourceType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The plugin uses only Kafka's public API (the packages of Kafka's published javadoc), checked on the compiled
 * classes with the JDK's jdeps, so the build fails on any internal Kafka class; and the plugin's own tables of
 * Kafka's protocol facts agree with Kafka's internal classes (which tests may read, the plugin may not).
 */
class PublicApiTest {
    /** Kafka's public packages that a broker plugin may need (kafka-clients' javadoc). */
    static final Set<String> PUBLIC = Set.of(
            "org.apache.kafka.common",
            "org.apache.kafka.common.acl",
            "org.apache.kafka.common.config",
            "org.apache.kafka.common.errors",
            "org.apache.kafka.common.metrics",
            "org.apache.kafka.common.metrics.stats",
            "org.apache.kafka.common.resource",
            "org.apache.kafka.common.security.auth",
            "org.apache.kafka.server.authorizer");
    private static final Pattern DEPENDENCY = Pattern.compile("->\\s+(org\\.apache\\.kafka\\.[\\w.$]+)");

    @Test
    void everyKafkaClassThePluginUsesIsPublicApi() {
        Path classes = Path.of("target", "classes");
        assertTrue(Files.isDirectory(classes.resolve("io/github/kraftacl/plugin")), "compiled classes in " + classes);
        ToolProvider jdeps = ToolProvider.findFirst("jdeps").orElseThrow();
        StringWriter out = new StringWriter();
        int rc = jdeps.run(new PrintWriter(out), new PrintWriter(out), "-verbose:class", "-filter:none",
                classes.toString());
        assertEquals(0, rc, out.toString());
        Set<String> used = new TreeSet<>();
        Set<String> internal = new TreeSet<>();
        Matcher m = DEPENDENCY.matcher(out.toString());
        while (m.find()) {
            String cls = m.group(1);
            String pkg = cls.substring(0, cls.lastIndexOf('.'));
            used.add(cls);
            if (!PUBLIC.contains(pkg)) {
                internal.add(cls);
            }
        }
        assertTrue(used.contains("org.apache.kafka.server.authorizer.Authorizer"), "jdeps saw the plugin: " + used);
        assertTrue(internal.isEmpty(), "the plugin uses Kafka classes outside its public API: " + internal);
    }

    @Test
    void requestNamesAreKafkasApiKeyNames() {
        for (ApiKeys key : ApiKeys.values()) {
            assertEquals(key.name, RequestNames.of(key.id), "API key " + key.id);
        }
        assertEquals("ApiKey9999", RequestNames.of(9999));
        assertEquals("ApiKey-1", RequestNames.of(-1));
    }

    @Test
    void kafkaErrorsAgreeWithKafkasTable() {
        for (KafkaErrors.Known known : KafkaErrors.KNOWN) {
            Errors kafka = Errors.valueOf(known.name());
            assertEquals(kafka.code(), known.code(), known.name());
            ApiException ours = KafkaErrors.byName(known.name(), "m");
            assertEquals(kafka.exception().getClass(), ours.getClass(), known.name());
            assertEquals(kafka.exception().getClass(), KafkaErrors.byCode(known.code(), "m").getClass());
            assertEquals("m", ours.getMessage());
        }
        assertEquals(null, KafkaErrors.byName("NOT_AN_ERROR", "m"));
        assertEquals("Kafka error code 9999: m", KafkaErrors.byCode(9999, "m").getMessage());
    }

    @ParameterizedTest
    @CsvSource({"READ,ANY,Must specify a non-filter resource type for authorizeByResourceType",
        "READ,UNKNOWN,Unknown resource type",
        "ANY,TOPIC,Must specify a non-filter operation type for authorizeByResourceType",
        "UNKNOWN,TOPIC,Unknown operation type"})
    void byResourceTypeArgumentsAreCheckedAsKafkaChecksThem(AclOperation op, ResourceType type, String message) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> AbstractKraftAclAuthorizer.checkByResourceTypeArgs(op, type));
        assertEquals(message, e.getMessage());
    }
}
