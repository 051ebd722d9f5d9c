package io.github.kraftacl.plugin;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.server.authorizer.AuthorizationResult;

/**
 * The decision API's answers (authorize, authorize-by-resource-type, status) and the change feed's, read with
 * jackson-core's streaming API; {@link WireJson} writes the requests.
 *
 * <p>Stateless and thread-safe.
 */
final class DecisionJson {
    private DecisionJson() {}

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
    record Changes(String instance, long aclOffset, long aclAppliedUs, long appliedOffset, long heldUs) {}

    /** A serve's readiness as GET /v1/status reports it. */
    record Status(boolean ready, long lastAppliedOffset, long aclCount) {}

    /**
     * A whole authorize answer; IOException unless it has exactly {@code expected} results and an offset, and, when
     * {@code rules} were asked, as many {@code rule_texts} (a string, or null for an action whose rule was not asked).
     */
    static Decided decided(byte[] body, int expected, boolean rules) throws IOException {
        List<AuthorizationResult> results = new ArrayList<>(expected);
        List<List<String>> texts = new ArrayList<>(1);
        long[] offset = {Long.MIN_VALUE};
        WireJson.fields(body, (name, value, p) -> {
            switch (name) {
                case "results" -> {
                    WireJson.expect(value, JsonToken.START_ARRAY, "results to be an array");
                    for (JsonToken t = p.nextToken(); t != JsonToken.END_ARRAY; t = p.nextToken()) {
                        WireJson.expect(t, JsonToken.VALUE_STRING, "a result");
                        results.add(result(p.getText()));
                    }
                }
                case "offset" -> offset[0] = longValue(p, value, name);
                case "rule_texts" -> texts.add(ruleTexts(p, value, expected));
                default -> p.skipChildren();
            }
        });
        if (results.size() != expected) {
            throw new IOException("expected " + expected + " results, got " + results.size());
        }
        if (offset[0] == Long.MIN_VALUE) {
            throw new IOException("the answer has no offset");
        }
        List<String> ruleTexts = texts.isEmpty() ? null : texts.get(texts.size() - 1);
        if (rules && (ruleTexts == null || ruleTexts.size() != expected)) {
            throw new IOException("expected " + expected + " rule_texts, got "
                    + (ruleTexts == null ? 0 : ruleTexts.size()));
        }
        return new Decided(results, offset[0], rules ? ruleTexts : null, -1);
    }

    /** The rule_texts array: a string or null per action. */
    private static List<String> ruleTexts(JsonParser p, JsonToken value, int expected) throws IOException {
        WireJson.expect(value, JsonToken.START_ARRAY, "rule_texts to be an array");
        List<String> out = new ArrayList<>(expected);
        for (JsonToken t = p.nextToken(); t != JsonToken.END_ARRAY; t = p.nextToken()) {
            if (t == JsonToken.VALUE_NULL) {
                out.add(null);
            } else {
                WireJson.expect(t, JsonToken.VALUE_STRING, "a rule text or null");
                out.add(p.getText());
            }
        }
        return out;
    }

    /** GET /v1/changes. */
    static Changes changes(byte[] body) throws IOException {
        String[] instance = {null};
        // acl_offset, acl_applied_us, applied_offset, held_us (-1 from a serve before API 1.5.0)
        long[] offsets = {Long.MIN_VALUE, 0, Long.MIN_VALUE, -1};
        WireJson.fields(body, (name, value, p) -> {
            switch (name) {
                case "instance" -> instance[0] = value == JsonToken.VALUE_STRING ? p.getText() : null;
                case "acl_offset" -> offsets[0] = longValue(p, value, name);
                case "acl_applied_us" -> offsets[1] = longValue(p, value, name);
                case "applied_offset" -> offsets[2] = longValue(p, value, name);
                case "held_us" -> offsets[3] = longValue(p, value, name);
                default -> p.skipChildren();
            }
        });
        if (instance[0] == null || instance[0].isEmpty() || offsets[0] == Long.MIN_VALUE
                || offsets[2] == Long.MIN_VALUE) {
            throw new IOException("a change-feed answer needs instance, acl_offset and applied_offset");
        }
        return new Changes(instance[0], offsets[0], offsets[1], offsets[2], offsets[3]);
    }

    private static long longValue(JsonParser p, JsonToken value, String name) throws IOException {
        WireJson.expect(value, JsonToken.VALUE_NUMBER_INT, name + " to be a whole number");
        return p.getLongValue();
    }

    /** The "result" of an authorize-by-resource-type answer (the whole answer read: one object, one result). */
    static AuthorizationResult result(byte[] body) throws IOException {
        AuthorizationResult[] result = {null};
        WireJson.fields(body, (name, value, p) -> {
            if (name.equals("result")) {
                WireJson.expect(value, JsonToken.VALUE_STRING, "a result");
                result[0] = result(p.getText());
            } else {
                p.skipChildren();
            }
        });
        if (result[0] == null) {
            throw new IOException("the answer has no result");
        }
        return result[0];
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

    /** GET /v1/status. */
    static Status status(byte[] body) throws IOException {
        boolean[] ready = {false};
        long[] figures = {-1, -1}; // last_applied_offset, acl_count
        WireJson.fields(body, (name, value, p) -> {
            switch (name) {
                case "ready" -> ready[0] = value == JsonToken.VALUE_TRUE;
                case "last_applied_offset" -> figures[0] = p.getLongValue();
                case "acl_count" -> figures[1] = p.getLongValue();
                default -> p.skipChildren();
            }
        });
        return new Status(ready[0], figures[0], figures[1]);
    }
}
