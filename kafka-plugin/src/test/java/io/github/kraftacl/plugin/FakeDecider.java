package io.github.kraftacl.plugin;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The decisions of a {@link FakeServe}: ALLOWED for the resource names in {@link #allowed}, DENIED otherwise, at
 * {@link #offset}, with the rule texts the request asks for ({@code rules}: denied or all); only the decision
 * requests of non-probe principals are counted in {@link #asked}.
 */
final class FakeDecider implements Function<FakeServe.Received, FakeServe.Answer> {
    private static final Pattern NAME = Pattern.compile("\"resource_name\":\"([^\"]*)\"");

    final Set<String> allowed = ConcurrentHashMap.newKeySet();
    final AtomicLong offset = new AtomicLong(0);
    final AtomicLong asked = new AtomicLong();
    volatile long delayMs;
    volatile int status = 200;

    @Override
    public FakeServe.Answer apply(FakeServe.Received r) {
        if (r.body().contains("User:kraft-acl-probe")) {
            return status == 200
                    ? new FakeServe.Answer(200, "{\"results\":[],\"offset\":" + offset.get() + "}", delayMs)
                    : new FakeServe.Answer(status, "{\"error\":{\"code\":\"AUTHORIZER_NOT_READY\"}}", delayMs);
        }
        asked.incrementAndGet();
        if (status != 200) {
            return new FakeServe.Answer(status, "{\"error\":{\"code\":\"AUTHORIZER_NOT_READY\",\"message\":\"x\"}}",
                    delayMs);
        }
        long at = offset.get();
        List<String> results = new ArrayList<>();
        List<String> rules = new ArrayList<>();
        boolean all = r.body().contains("\"rules\":\"all\"");
        boolean denied = r.body().contains("\"rules\":\"denied\"");
        Matcher m = NAME.matcher(r.body());
        while (m.find()) {
            boolean ok = allowed.contains(m.group(1));
            results.add(ok ? "\"ALLOWED\"" : "\"DENIED\"");
            rules.add(ok ? (all ? "\"" + rule(m.group(1)) + "\"" : "null") : "\"DefaultDeny\"");
        }
        String body = "{\"results\":[" + String.join(",", results) + "],\"offset\":" + at
                + (all || denied ? ",\"rule_texts\":[" + String.join(",", rules) + "]" : "") + "}";
        return new FakeServe.Answer(200, body, delayMs);
    }

    /** The rule text this fake gives an allowed name. */
    static String rule(String name) {
        return "MatchingAcl(acl=StandardAcl(resourceType=TOPIC, resourceName=" + name + ", patternType=LITERAL, "
                + "principal=User:alice, host=*, operation=READ, permissionType=ALLOW))";
    }
}
