package io.github.kraftacl.plugin;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.util.ByteArrayBuilder;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.server.authorizer.Action;
import org.apache.kafka.server.authorizer.AuthorizationResult;

/**
 * The JSON of serve's HTTP API v1 (server/openapi.json): request bodies written and answers read with
 * jackson-core's streaming API, which every Kafka 4 broker has on its classpath.
 *
 * <p>Stateless and thread-safe (one shared {@link JsonFactory}). Enum fields travel as Kafka's enum names
 * ({@code TOPIC}, {@code READ}, {@code LITERAL}, {@code ALLOW}); fields at their API default are left out.
 */
final class WireJson {
    private static final JsonFactory JSON = new JsonFactory();

    /** Who asks, from where: the fields every decision request starts with. */
    record Subject(String principal, String clientAddress, String listener, String request) {}

    /** One per-entry result of a create or delete: Kafka's error code (0 for none) and message. */
    record Outcome(int errorCode, String message, List<AclBinding> acls) {}

    /**
     * An authorize answer: the results in order, the log offset that decided them, the rules when asked, and the
     * index in {@code kraft.acl.urls} of the serve that answered (-1 until {@link #from} sets it).
     */
    record Decided(List<AuthorizationResult> results, long offset, List<String> rules, int server) {
        /** The same answer, from the serve at this index. */
        Decided from(int index) {
            return new Decided(results, offset, rules, index);
        }
    }

    /**
     * One answer of the change feed (GET /v1/changes): the serve process's identity, the offset of the newest state
     * it published that changed ACLs (and when, in its wall-clock microseconds), and the last offset it applied.
     */
    record Changes(String instance, long aclOffset, long aclAppliedUs, long appliedOffset) {}

    /** A serve's readiness as GET /v1/status reports it. */
    record Status(boolean ready, long lastAppliedOffset, long aclCount) {}

    /** serve's error body: {"error": {"code", "message"}}; the raw text when the body is not that. */
    record ErrorBody(String code, String message) {}

    private interface Writer {
        void write(JsonGenerator g) throws IOException;
    }

    private WireJson() {}

    private static byte[] write(Writer writer) {
        ByteArrayBuilder out = new ByteArrayBuilder(512);
        try (JsonGenerator g = JSON.createGenerator(out)) {
            writer.write(g);
        } catch (IOException e) {
            throw new UncheckedIOException(e); // writing to memory does not fail
        }
        return out.toByteArray();
    }

    private static void subject(JsonGenerator g, Subject s) throws IOException {
        g.writeStringField("principal", s.principal());
        g.writeStringField("client_address", s.clientAddress());
        g.writeStringField("listener", s.listener());
        g.writeStringField("request", s.request());
    }

    /** POST /v1/authorize: every action of one request context (LITERAL patterns only, checked by the caller). */
    static byte[] authorize(Subject subject, List<Action> actions) {
        return authorize(subject, actions, false);
    }

    /** POST /v1/authorize; {@code explain}: ask for each action's rule (Kafka's audit-log words) too. */
    static byte[] authorize(Subject subject, List<Action> actions, boolean explain) {
        return write(g -> {
            g.writeStartObject();
            subject(g, subject);
            if (explain) {
                g.writeBooleanField("explain", true);
            }
            g.writeArrayFieldStart("actions");
            for (Action a : actions) {
                ResourcePattern p = a.resourcePattern();
                g.writeStartObject();
                g.writeStringField("operation", a.operation().name());
                g.writeStringField("resource_type", p.resourceType().name());
                g.writeStringField("resource_name", p.name());
                if (a.resourceReferenceCount() != 1) {
                    g.writeNumberField("ref_count", a.resourceReferenceCount());
                }
                if (!a.logIfAllowed()) {
                    g.writeBooleanField("log_if_allowed", false);
                }
                if (!a.logIfDenied()) {
                    g.writeBooleanField("log_if_denied", false);
                }
                g.writeEndObject();
            }
            g.writeEndArray();
            g.writeEndObject();
        });
    }

    /** The "results" of an authorize answer, in order; IOException unless there are exactly {@code expected}. */
    static List<AuthorizationResult> results(byte[] body, int expected) throws IOException {
        List<AuthorizationResult> out = new ArrayList<>(expected);
        try (JsonParser p = JSON.createParser(body)) {
            expect(seek(p, "results"), JsonToken.START_ARRAY, "results to be an array");
            while (p.nextToken() == JsonToken.VALUE_STRING) {
                out.add(result(p.getText()));
            }
        }
        if (out.size() != expected) {
            throw new IOException("expected " + expected + " results, got " + out.size());
        }
        return out;
    }

    /**
     * A whole authorize answer; IOException unless it has exactly {@code expected} results, an offset, and (when
     * {@code rules} are expected) as many rules.
     */
    static Decided decided(byte[] body, int expected, boolean rules) throws IOException {
        List<AuthorizationResult> results = null;
        List<String> texts = null;
        long offset = Long.MIN_VALUE;
        try (JsonParser p = JSON.createParser(body)) {
            expect(p.nextToken(), JsonToken.START_OBJECT, "an object");
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken value = p.nextToken();
                switch (name) {
                    case "results" -> {
                        expect(value, JsonToken.START_ARRAY, "results to be an array");
                        results = new ArrayList<>(expected);
                        while (p.nextToken() == JsonToken.VALUE_STRING) {
                            results.add(result(p.getText()));
                        }
                    }
                    case "offset" -> {
                        expect(value, JsonToken.VALUE_NUMBER_INT, "offset to be a whole number");
                        offset = p.getLongValue();
                    }
                    case "rules" -> texts = rules(p, expected);
                    default -> p.skipChildren();
                }
            }
        }
        if (results == null || results.size() != expected) {
            throw new IOException("expected " + expected + " results, got " + (results == null ? 0 : results.size()));
        }
        if (offset == Long.MIN_VALUE) {
            throw new IOException("the answer has no offset");
        }
        if (rules && (texts == null || texts.size() != expected)) {
            throw new IOException("expected " + expected + " rules, got " + (texts == null ? 0 : texts.size()));
        }
        return new Decided(results, offset, rules ? texts : null, -1);
    }

    /** The "text" of each rule object (the parser is on the array's START_ARRAY, or on null). */
    private static List<String> rules(JsonParser p, int expected) throws IOException {
        if (p.currentToken() == JsonToken.VALUE_NULL) {
            return null;
        }
        expect(p.currentToken(), JsonToken.START_ARRAY, "rules to be an array");
        List<String> out = new ArrayList<>(expected);
        while (p.nextToken() == JsonToken.START_OBJECT) {
            String text = null;
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String field = p.currentName();
                JsonToken value = p.nextToken();
                if (field.equals("text") && value == JsonToken.VALUE_STRING) {
                    text = p.getText();
                } else {
                    p.skipChildren();
                }
            }
            if (text == null) {
                throw new IOException("a rule without its text");
            }
            out.add(text);
        }
        return out;
    }

    /** GET /v1/changes. */
    static Changes changes(byte[] body) throws IOException {
        String instance = null;
        long aclOffset = Long.MIN_VALUE;
        long appliedUs = 0;
        long applied = Long.MIN_VALUE;
        try (JsonParser p = JSON.createParser(body)) {
            expect(p.nextToken(), JsonToken.START_OBJECT, "an object");
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken value = p.nextToken();
                switch (name) {
                    case "instance" -> instance = value == JsonToken.VALUE_STRING ? p.getText() : null;
                    case "acl_offset" -> aclOffset = longValue(p, value, name);
                    case "acl_applied_us" -> appliedUs = longValue(p, value, name);
                    case "applied_offset" -> applied = longValue(p, value, name);
                    default -> p.skipChildren();
                }
            }
        }
        if (instance == null || instance.isEmpty() || aclOffset == Long.MIN_VALUE || applied == Long.MIN_VALUE) {
            throw new IOException("a change-feed answer needs instance, acl_offset and applied_offset");
        }
        return new Changes(instance, aclOffset, appliedUs, applied);
    }

    private static long longValue(JsonParser p, JsonToken value, String name) throws IOException {
        expect(value, JsonToken.VALUE_NUMBER_INT, name + " to be a whole number");
        return p.getLongValue();
    }

    /** POST /v1/authorize-by-resource-type. */
    static byte[] byResourceType(Subject subject, AclOperation op, ResourceType type) {
        return write(g -> {
            g.writeStartObject();
            subject(g, subject);
            g.writeStringField("operation", op.name());
            g.writeStringField("resource_type", type.name());
            g.writeEndObject();
        });
    }

    /** The "result" of an authorize-by-resource-type answer. */
    static AuthorizationResult result(byte[] body) throws IOException {
        try (JsonParser p = JSON.createParser(body)) {
            expect(seek(p, "result"), JsonToken.VALUE_STRING, "a result");
            return result(p.getText());
        }
    }

    private static AuthorizationResult result(String text) throws IOException {
        switch (text) {
            case "ALLOWED":
                return AuthorizationResult.ALLOWED;
            case "DENIED":
                return AuthorizationResult.DENIED;
            default:
                throw new IOException("unknown result " + text);
        }
    }

    /** POST /v1/acls/create. */
    static byte[] create(List<AclBinding> acls) {
        return write(g -> {
            g.writeStartObject();
            g.writeArrayFieldStart("acls");
            for (AclBinding b : acls) {
                g.writeStartObject();
                g.writeStringField("resource_type", b.pattern().resourceType().name());
                g.writeStringField("resource_name", b.pattern().name());
                g.writeStringField("pattern_type", b.pattern().patternType().name());
                g.writeStringField("principal", b.entry().principal());
                g.writeStringField("host", b.entry().host());
                g.writeStringField("operation", b.entry().operation().name());
                g.writeStringField("permission_type", b.entry().permissionType().name());
                g.writeEndObject();
            }
            g.writeEndArray();
            g.writeEndObject();
        });
    }

    /** POST /v1/acls/delete. */
    static byte[] delete(List<AclBindingFilter> filters) {
        return write(g -> {
            g.writeStartObject();
            g.writeArrayFieldStart("filters");
            for (AclBindingFilter f : filters) {
                filter(g, f);
            }
            g.writeEndArray();
            g.writeEndObject();
        });
    }

    /** POST /v1/acls/describe. */
    static byte[] describe(AclBindingFilter filter) {
        return write(g -> {
            g.writeStartObject();
            g.writeFieldName("filter");
            filter(g, filter);
            g.writeEndObject();
        });
    }

    private static void filter(JsonGenerator g, AclBindingFilter f) throws IOException {
        g.writeStartObject();
        g.writeStringField("resource_type", f.patternFilter().resourceType().name());
        g.writeStringField("resource_name", f.patternFilter().name());
        g.writeStringField("pattern_type", f.patternFilter().patternType().name());
        g.writeStringField("principal", f.entryFilter().principal());
        g.writeStringField("host", f.entryFilter().host());
        g.writeStringField("operation", f.entryFilter().operation().name());
        g.writeStringField("permission_type", f.entryFilter().permissionType().name());
        g.writeEndObject();
    }

    /** The per-entry "results" of a create or delete answer (a delete's carry the ACLs each filter matched). */
    static List<Outcome> outcomes(byte[] body) throws IOException {
        List<Outcome> out = new ArrayList<>();
        try (JsonParser p = JSON.createParser(body)) {
            expect(seek(p, "results"), JsonToken.START_ARRAY, "results to be an array");
            while (p.nextToken() == JsonToken.START_OBJECT) {
                out.add(outcome(p));
            }
        }
        return out;
    }

    private static Outcome outcome(JsonParser p) throws IOException {
        int code = 0;
        String message = null;
        List<AclBinding> acls = List.of();
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            JsonToken value = p.nextToken();
            if (name.equals("error_code")) {
                code = p.getIntValue();
            } else if (name.equals("message") && value == JsonToken.VALUE_STRING) {
                message = p.getText();
            } else if (name.equals("acls")) {
                acls = bindings(p);
            } else {
                p.skipChildren();
            }
        }
        return new Outcome(code, message, acls);
    }

    /** The "acls" of a describe answer. */
    static List<AclBinding> describedAcls(byte[] body) throws IOException {
        try (JsonParser p = JSON.createParser(body)) {
            seek(p, "acls");
            return bindings(p);
        }
    }

    /** An array of AclOut objects (the parser is on its START_ARRAY). */
    private static List<AclBinding> bindings(JsonParser p) throws IOException {
        expect(p.currentToken(), JsonToken.START_ARRAY, "acls to be an array");
        List<AclBinding> out = new ArrayList<>();
        while (p.nextToken() == JsonToken.START_OBJECT) {
            String type = null, name = null, pattern = null, principal = null, host = null, op = null, perm = null;
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String field = p.currentName();
                p.nextToken();
                String text = p.currentToken() == JsonToken.VALUE_STRING ? p.getText() : null;
                switch (field) {
                    case "resource_type" -> type = text;
                    case "resource_name" -> name = text;
                    case "pattern_type" -> pattern = text;
                    case "principal" -> principal = text;
                    case "host" -> host = text;
                    case "operation" -> op = text;
                    case "permission_type" -> perm = text;
                    default -> p.skipChildren();
                }
            }
            if (type == null || name == null || pattern == null || principal == null || host == null || op == null
                    || perm == null) {
                throw new IOException("an ACL in the answer lacks a field");
            }
            out.add(new AclBinding(
                    new ResourcePattern(ResourceType.fromString(type), name, PatternType.fromString(pattern)),
                    new AccessControlEntry(principal, host, AclOperation.fromString(op),
                            AclPermissionType.fromString(perm))));
        }
        return out;
    }

    /** GET /v1/status. */
    static Status status(byte[] body) throws IOException {
        boolean ready = false;
        long offset = -1;
        long count = -1;
        try (JsonParser p = JSON.createParser(body)) {
            expect(p.nextToken(), JsonToken.START_OBJECT, "an object");
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken value = p.nextToken();
                switch (name) {
                    case "ready" -> ready = value == JsonToken.VALUE_TRUE;
                    case "last_applied_offset" -> offset = p.getLongValue();
                    case "acl_count" -> count = p.getLongValue();
                    default -> p.skipChildren();
                }
            }
        }
        return new Status(ready, offset, count);
    }

    /** GET /v1/acls/count. */
    static int count(byte[] body) throws IOException {
        try (JsonParser p = JSON.createParser(body)) {
            expect(seek(p, "count"), JsonToken.VALUE_NUMBER_INT, "a count");
            return p.getIntValue();
        }
    }

    /** The error of a 4xx/5xx answer; a body that is not serve's error JSON becomes its text. */
    static ErrorBody error(byte[] body) {
        try (JsonParser p = JSON.createParser(body)) {
            if (p.nextToken() == JsonToken.START_OBJECT) {
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    String name = p.currentName();
                    if (p.nextToken() == JsonToken.START_OBJECT && name.equals("error")) {
                        return errorFields(p);
                    }
                    p.skipChildren();
                }
            }
        } catch (IOException e) {
            // not JSON: fall through to the raw text
        }
        String text = new String(body, java.nio.charset.StandardCharsets.UTF_8);
        return new ErrorBody("", text.length() > 200 ? text.substring(0, 200) : text);
    }

    private static ErrorBody errorFields(JsonParser p) throws IOException {
        String code = "";
        String message = "";
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            p.nextToken();
            if (name.equals("code")) {
                code = p.getText();
            } else if (name.equals("message")) {
                message = p.getText();
            } else {
                p.skipChildren();
            }
        }
        return new ErrorBody(code, message);
    }

    /** Into a top-level object, up to the value of {@code field}: its first token, or null when it is absent. */
    private static JsonToken seek(JsonParser p, String field) throws IOException {
        expect(p.nextToken(), JsonToken.START_OBJECT, "an object");
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            JsonToken value = p.nextToken();
            if (name.equals(field)) {
                return value;
            }
            p.skipChildren();
        }
        return null;
    }

    private static void expect(JsonToken got, JsonToken wanted, String what) throws IOException {
        if (got != wanted) {
            throw new IOException("expected " + what + ", got " + got);
        }
    }
}
