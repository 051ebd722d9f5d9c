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
 * The JSON of serve's HTTP API v1 (the OpenAPI document serve publishes at /v1/openapi.json): request bodies written,
 * and the ACL API's answers and error bodies read, with jackson-core's streaming API, which every Kafka 4 broker has
 * on its classpath ({@link DecisionJson} reads the decision API's answers and the change feed's).
 *
 * <p>Stateless and thread-safe (one shared {@link JsonFactory}). Enum fields travel as Kafka's enum names
 * ({@code TOPIC}, {@code READ}, {@code LITERAL}, {@code ALLOW}); fields at their API default are left out.
 */
final class WireJson {
    /** A field twice in one object is an error, not the last (or first) one read: no answer is read two ways. */
    static final JsonFactory JSON = new JsonFactory().enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

    /** Who asks, from where: the fields every decision request starts with. */
    record Subject(String principal, String clientAddress, String listener, String request) {}

    /** One per-entry result of a create or delete: Kafka's error code (0 for none) and message. */
    record Outcome(int errorCode, String message, List<AclBinding> acls) {}

    /**
     * serve's error body: {"error": {"code", "message", "field"?}} ({@code field}: the request field it names, "" when
     * none); the raw text when the body is not that.
     */
    record ErrorBody(String code, String message, String field) {}

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
        return authorize(subject, actions, null);
    }

    /**
     * POST /v1/authorize; {@code rules} ("denied" or "all", or null for none): ask for the rule (Kafka's audit-log
     * words) of the denied actions, or of every action, too.
     */
    static byte[] authorize(Subject subject, List<Action> actions, String rules) {
        return write(g -> {
            g.writeStartObject();
            subject(g, subject);
            if (rules != null) {
                g.writeStringField("rules", rules);
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

    /**
     * POST /v1/acls/describe; {@code consistent}: from a state holding every ACL write acknowledged before the call
     * (API 1.6.0).
     */
    static byte[] describe(AclBindingFilter filter, boolean consistent) {
        return write(g -> {
            g.writeStartObject();
            g.writeFieldName("filter");
            filter(g, filter);
            if (consistent) {
                g.writeBooleanField("consistent", true);
            }
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
        return new ErrorBody("", text.length() > 200 ? text.substring(0, 200) : text, "");
    }

    private static ErrorBody errorFields(JsonParser p) throws IOException {
        String code = "";
        String message = "";
        String field = "";
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            p.nextToken();
            if (name.equals("code")) {
                code = p.getText();
            } else if (name.equals("message")) {
                message = p.getText();
            } else if (name.equals("field")) {
                field = p.getText();
            } else {
                p.skipChildren();
            }
        }
        return new ErrorBody(code, message, field);
    }

    /** Reads one top-level field of an object, the parser on the field's first token. */
    interface FieldReader {
        /** Read (or skip) the value of field {@code name}, whose first token is {@code value}. */
        void read(String name, JsonToken value, JsonParser p) throws IOException;
    }

    /**
     * Every top-level field of a JSON object body, in order, through {@code each}; an IOException unless the body is
     * that one object whole, with nothing after it (a reader that stopped inside a value ends it too).
     */
    static void fields(byte[] body, FieldReader each) throws IOException {
        try (JsonParser p = JSON.createParser(body)) {
            expect(p.nextToken(), JsonToken.START_OBJECT, "an object");
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                each.read(name, p.nextToken(), p);
            }
            expect(p.currentToken(), JsonToken.END_OBJECT, "a field or the end of the object");
            expect(p.nextToken(), null, "nothing after the object");
        }
    }

    /** Into a top-level object, up to the value of {@code field}: its first token, or null when it is absent. */
    static JsonToken seek(JsonParser p, String field) throws IOException {
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

    static void expect(JsonToken got, JsonToken wanted, String what) throws IOException {
        if (got != wanted) {
            throw new IOException("expected " + what + ", got " + got);
        }
    }
}
