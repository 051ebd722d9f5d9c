package io.github.kraftacl.plugin;

import static io.github.kraftacl.plugin.TestPlugins.ctx;
import static io.github.kraftacl.plugin.TestPlugins.plugin;
import static io.github.kraftacl.plugin.TestPlugins.read;
import static io.github.kraftacl.plugin.TestPlugins.waitFor;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.utils.SecurityUtils;
import org.apache.kafka.server.authorizer.Action;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * With the cache on, every decision (from memory or from serve) is in the broker's kafka.authorizer.logger exactly
 * as Kafka's StandardAuthorizer writes it (spec §5.6): its levels, its words, and serve's rule.
 */
class AuditLogTest extends FakeServeTest {
    private static final String AUDIT = AuditLog.LOGGER;

    private final FakeDecider decider = new FakeDecider();

    @Override
    String logLevel() {
        return "TRACE";
    }

    @BeforeEach
    void setUp() throws Exception {
        serve.answer("/v1/authorize", decider);
        decider.allowed.add("ok");
        serve.aclChange(3);
        decider.offset.set(3);
        plugin = plugin(dir, serve.url());
        waitFor(() -> plugin.feed().view().usable(System.nanoTime()), "the change feed is connected");
    }

    private static List<String> audit(String level) {
        return CapturedLogs.lines(AUDIT, level).stream().map(CapturedLogs.Line::message).toList();
    }

    @Test
    void decisionsFromMemoryAreLoggedAsStandardAuthorizerLogsThem() throws Exception {
        Action quiet = new Action(AclOperation.WRITE, new ResourcePattern(ResourceType.TOPIC, "no",
                PatternType.LITERAL), 2, false, false);
        for (int i = 0; i < 2; i++) { // from serve, then from memory
            plugin.authorize(ctx("alice", ApiKeys.PRODUCE.id), List.of(read("no"), read("ok"), quiet));
        }
        assertEquals(1, decider.asked.get(), "the second time from memory");
        String denied = "Principal = User:alice is Denied operation = READ from host = 10.0.0.7 on resource = "
                + "Topic:LITERAL:no for request = Produce with resourceRefCount = 1 based on rule DefaultDeny";
        String allowed = "Principal = User:alice is Allowed operation = READ from host = 10.0.0.7 on resource = "
                + "Topic:LITERAL:ok for request = Produce with resourceRefCount = 1 based on rule "
                + FakeDecider.rule("ok");
        String trace = "Principal = User:alice is Denied operation = WRITE from host = 10.0.0.7 on resource = "
                + "Topic:LITERAL:no for request = Produce with resourceRefCount = 2 based on rule DefaultDeny";
        assertEquals(List.of(denied, denied), audit("INFO"));
        assertEquals(List.of(allowed, allowed), audit("DEBUG"));
        assertEquals(List.of(trace, trace), audit("TRACE"), "logIfDenied=false: TRACE");
    }

    @Test
    void superUsersAreLoggedWithTheSuperUserRule() throws Exception {
        plugin.authorize(ctx("admin"), List.of(read("x")));
        assertEquals(List.of("Principal = User:admin is Allowed operation = READ from host = 10.0.0.7 on resource = "
                + "Topic:LITERAL:x for request = Metadata with resourceRefCount = 1 based on rule SuperUser"),
                audit("DEBUG"));
    }

    @Test
    void onlyTheRulesTheLoggersLevelPrintsAreAsked() throws Exception {
        CapturedLogs.level("WARN");
        plugin.authorize(ctx("alice"), List.of(read("no"), read("ok")));
        assertTrue(!serve.on("/v1/authorize").get(0).body().contains("\"rules\""), "above INFO: no rule asked");
        CapturedLogs.level("INFO");
        plugin.authorize(ctx("alice"), List.of(read("no"), read("ok")));
        assertEquals(2, decider.asked.get(), "a denial remembered without its rule is asked again at INFO");
        String second = serve.on("/v1/authorize").get(1).body();
        assertTrue(second.contains("\"rules\":\"denied\"") && !second.contains("\"ok\""), "only the denial: " + second);
        plugin.authorize(ctx("alice"), List.of(read("no"), read("ok")));
        assertEquals(2, decider.asked.get(), "at INFO an allowed decision needs no rule");
        assertEquals(2, audit("INFO").size());
        CapturedLogs.level("DEBUG");
        plugin.authorize(ctx("alice"), List.of(read("no"), read("ok")));
        assertEquals(3, decider.asked.get());
        assertTrue(serve.on("/v1/authorize").get(2).body().contains("\"rules\":\"all\""));
        assertTrue(audit("DEBUG").get(0).endsWith("based on rule " + FakeDecider.rule("ok")), audit("DEBUG").get(0));
    }

    @Test
    void resourceTypeNamesAreKafkas() {
        for (ResourceType type : ResourceType.values()) {
            if (type != ResourceType.ANY && type != ResourceType.UNKNOWN) {
                assertEquals(SecurityUtils.resourceTypeName(type), AuditLog.typeName(type), type.name());
            }
        }
    }
}
