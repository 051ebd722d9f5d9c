package io.github.kraftacl.plugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.networknt.schema.JsonSchema;
import com.networknt.schema.JsonSchemaFactory;
import com.networknt.schema.SpecVersion;
import com.networknt.schema.ValidationMessage;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.common.ClusterResource;
import org.apache.kafka.common.Endpoint;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.server.authorizer.Action;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.authorizer.AuthorizerServerInfo;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The plugin's requests against serve's API contract: every request the plugin sends to a fake serve, for each
 * endpoint it calls, must be an operation of kraftacl/api/openapi.json (generated from the Python contract package
 * kraftacl/api) with a body that validates against that operation's request schema; the fake's canned answers are
 * validated against the response schemas too, so the plugin is tested on answers serve can really give.
 */
class OpenApiContractTest {
    /** The committed document (Maven runs the tests in kafka-plugin/); -Dkraftacl.openapi=FILE names another. */
    private static final Path DOCUMENT = Path.of(System.getProperty("kraftacl.openapi", "../kraftacl/api/openapi.json"));
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final JsonSchemaFactory SCHEMAS = JsonSchemaFactory.getInstance(SpecVersion.VersionFlag.V202012);
    private static final String TOKEN = "contract-token-0123456789";
    private static JsonNode openapi;

    @TempDir
    Path dir;
    private FakeServe serve;
    private KraftAclAuthorizer plugin;

    @BeforeAll
    static void readDocument() throws IOException {
        openapi = JSON.readTree(DOCUMENT.toFile());
        assertEquals("kraft-acl serve", openapi.path("info").path("title").asText(), DOCUMENT + " is serve's document");
    }

    @BeforeEach
    void setUp() throws Exception {
        serve = new FakeServe();
    }

    @AfterEach
    void tearDown() {
        if (plugin != null) {
            plugin.close();
        }
        serve.close();
    }

    @Test
    void everyRequestThePluginSendsIsInTheContract() throws Exception {
        String acl = "{\"id\":\"AAAAAAAAAAAAAAAAAAAAAQ\",\"resource_type\":\"TOPIC\",\"resource_name\":\"t\","
                + "\"pattern_type\":\"LITERAL\",\"principal\":\"User:bob\",\"host\":\"*\",\"operation\":\"READ\","
                + "\"permission_type\":\"ALLOW\"}";
        answer("GET", "/v1/status", "{\"ready\":true,\"node_id\":1,\"roles\":[\"broker\",\"controller\"],"
                + "\"listener\":\"CLIENT\",\"last_applied_offset\":4,\"acl_count\":1,\"high_watermark\":5,\"lag\":0,"
                + "\"last_error\":null,\"snapshot\":null,\"following\":true,\"diverged\":null,\"failing_since\":null,"
                + "\"failures\":0}");
        answer("POST", "/v1/authorize", "{\"results\":[\"ALLOWED\",\"DENIED\"],\"offset\":4}");
        answer("POST", "/v1/authorize-by-resource-type", "{\"result\":\"ALLOWED\",\"offset\":4}");
        answer("POST", "/v1/acls/create", "{\"results\":[{\"error_code\":0,\"error\":\"NONE\",\"id\":\"x\"}],"
                + "\"offset\":5}");
        answer("POST", "/v1/acls/delete", "{\"results\":[{\"error_code\":0,\"error\":\"NONE\",\"acls\":[" + acl
                + "]},{\"error_code\":0,\"error\":\"NONE\",\"acls\":[]}],\"offset\":6}");
        answer("POST", "/v1/acls/describe", "{\"acls\":[" + acl + "],\"offset\":6}");
        answer("GET", "/v1/acls/count", "{\"count\":1,\"offset\":6}");

        KraftAclAuthorizer p = plugin();
        Endpoint client = new Endpoint("CLIENT", SecurityProtocol.SASL_PLAINTEXT, "127.0.0.1", 9092);
        p.start(info(List.of(client))).get(client).toCompletableFuture().get(10, TimeUnit.SECONDS);
        Action quiet = new Action(AclOperation.DESCRIBE, new ResourcePattern(ResourceType.GROUP, "g",
                PatternType.LITERAL), 3, false, false);
        Action read = new Action(AclOperation.READ, new ResourcePattern(ResourceType.TOPIC, "t", PatternType.LITERAL),
                1, true, true);
        p.authorize(ctx("alice"), List.of(read, quiet));
        p.authorizeByResourceType(ctx("alice"), AclOperation.WRITE, ResourceType.TOPIC);
        AclBinding binding = new AclBinding(new ResourcePattern(ResourceType.TOPIC, "t", PatternType.LITERAL),
                new AccessControlEntry("User:bob", "*", AclOperation.READ, AclPermissionType.ALLOW));
        p.createAcls(ctx("admin"), List.of(binding)).get(0).toCompletableFuture().get(10, TimeUnit.SECONDS);
        AclBindingFilter some = new AclBindingFilter(new ResourcePatternFilter(ResourceType.TOPIC, "t",
                PatternType.MATCH), new AccessControlEntryFilter("User:bob", null, AclOperation.ANY,
                AclPermissionType.ALLOW));
        p.deleteAcls(ctx("admin"), List.of(some, AclBindingFilter.ANY)).get(0).toCompletableFuture()
                .get(10, TimeUnit.SECONDS);
        p.acls(some);
        p.aclCount();

        Set<String> called = new TreeSet<>();
        for (FakeServe.Received r : serve.received) {
            assertConforms(r);
            called.add(r.method() + " " + r.path());
        }
        assertTrue(called.containsAll(Set.of("GET /v1/frames", "GET /v1/status", "POST /v1/authorize",
                "POST /v1/authorize-by-resource-type", "POST /v1/acls/create", "POST /v1/acls/delete",
                "POST /v1/acls/describe", "GET /v1/acls/count")), "the plugin called " + called);
    }

    @Test
    void theValidatorRefusesWhatServeRefuses() {
        JsonSchema authorize = schema("AuthorizeIn");
        assertTrue(errors(authorize, "{\"principal\":\"User:a\",\"client_address\":\"10.0.0.1\",\"actions\":[]}")
                .isEmpty());
        assertFalse(errors(authorize, "{\"principal\":\"User:a\",\"actions\":[]}").isEmpty(), "a missing field");
        assertFalse(errors(authorize, "{\"principal\":\"User:a\",\"client_address\":\"h\",\"actions\":[],"
                + "\"extra\":1}").isEmpty(), "an unknown field");
        assertFalse(errors(authorize, "{\"principal\":\"User:a\",\"client_address\":\"h\",\"actions\":"
                + "[{\"operation\":\"READ\",\"resource_type\":\"TOPIC\",\"resource_name\":\"t\",\"ref_count\":\"1\"}]}")
                .isEmpty(), "a string where the action's ref_count is an integer");
        assertTrue(operation("POST", "/v1/no-such-endpoint").isMissingNode());
    }

    /** One received request: a documented operation, and a body its request schema accepts (or none). */
    private static void assertConforms(FakeServe.Received r) {
        String call = r.method() + " " + r.path();
        JsonNode op = operation(r.method(), r.path());
        if (op.isMissingNode()) {
            fail(call + " is not an operation of " + DOCUMENT);
        }
        JsonNode body = op.path("requestBody").path("content").path("application/json").path("schema");
        if (body.isMissingNode()) {
            assertTrue(r.body().isEmpty(), call + " takes no body, the plugin sent " + r.body());
            return;
        }
        Set<String> errors = errors(schema(component(body)), r.body());
        assertTrue(errors.isEmpty(), call + " " + r.body() + " does not match " + component(body) + ": " + errors);
    }

    /** Answer a path with a body the operation's 200 schema accepts (a fake must answer as serve can). */
    private void answer(String method, String path, String body) {
        JsonNode ok = operation(method, path).path("responses").path("200").path("content").path("application/json")
                .path("schema");
        assertFalse(ok.isMissingNode(), method + " " + path + " has no JSON answer in " + DOCUMENT);
        Set<String> errors = errors(schema(component(ok)), body);
        assertTrue(errors.isEmpty(), "the canned answer of " + path + " is no " + component(ok) + ": " + errors);
        serve.answer(path, 200, body);
    }

    private static JsonNode operation(String method, String path) {
        return openapi.path("paths").path(path).path(method.toLowerCase());
    }

    private static String component(JsonNode schema) {
        String ref = schema.path("$ref").asText();
        assertTrue(ref.startsWith("#/components/schemas/"), "a component reference: " + schema);
        return ref.substring("#/components/schemas/".length());
    }

    /** The schema of one component, its references resolved inside the document's components. */
    private static JsonSchema schema(String component) {
        ObjectNode root = JSON.createObjectNode();
        root.put("$schema", "https://json-schema.org/draft/2020-12/schema");
        root.put("$ref", "#/components/schemas/" + component);
        root.set("components", openapi.path("components"));
        return SCHEMAS.getSchema(root);
    }

    private static Set<String> errors(JsonSchema schema, String json) {
        try {
            return schema.validate(JSON.readTree(json)).stream().map(ValidationMessage::getMessage)
                    .collect(Collectors.toCollection(TreeSet::new));
        } catch (IOException e) {
            return Set.of("not JSON: " + e.getMessage());
        }
    }

    private KraftAclAuthorizer plugin() throws IOException {
        Path token = Files.writeString(dir.resolve("token"), TOKEN + "\n");
        Map<String, Object> props = new HashMap<>(Map.of(PluginConfig.URLS, serve.url(), PluginConfig.TOKEN_FILE,
                token.toString(), PluginConfig.REQUEST_TIMEOUT_MS, "2000", PluginConfig.READY_POLL_MS, "20",
                "super.users", "User:admin"));
        plugin = new KraftAclAuthorizer();
        plugin.configure(props);
        return plugin;
    }

    private static AuthorizableRequestContext ctx(String user) throws IOException {
        InetAddress address = InetAddress.getByName("10.0.0.7");
        return new AuthorizableRequestContext() {
            public String listenerName() { return "CLIENT"; }
            public SecurityProtocol securityProtocol() { return SecurityProtocol.SASL_PLAINTEXT; }
            public KafkaPrincipal principal() { return new KafkaPrincipal("User", user); }
            public InetAddress clientAddress() { return address; }
            public int requestType() { return ApiKeys.METADATA.id; }
            public int requestVersion() { return 12; }
            public String clientId() { return "contract"; }
            public int correlationId() { return 1; }
        };
    }

    private static AuthorizerServerInfo info(Collection<Endpoint> endpoints) {
        return new AuthorizerServerInfo() {
            public ClusterResource clusterResource() { return new ClusterResource("c"); }
            public int brokerId() { return 1; }
            public Collection<Endpoint> endpoints() { return endpoints; }
            public Endpoint interBrokerEndpoint() { return endpoints.iterator().next(); }
            public Collection<String> earlyStartListeners() { return List.of(); }
        };
    }
}
