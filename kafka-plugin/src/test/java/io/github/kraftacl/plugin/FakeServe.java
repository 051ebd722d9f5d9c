package io.github.kraftacl.plugin;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/** A stand-in for kraft-acl serve in unit tests: canned answers per path, and every request it received. */
final class FakeServe implements AutoCloseable {
    /** One canned answer. */
    record Answer(int status, String body, long delayMs) {}

    /** One request as received. */
    record Received(String method, String path, String authorization, String body) {}

    final List<Received> received = new CopyOnWriteArrayList<>();
    private final Map<String, Answer> answers = new ConcurrentHashMap<>();
    private final HttpServer server;

    FakeServe() throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/", exchange -> {
            String body = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
            String path = exchange.getRequestURI().getPath();
            received.add(new Received(exchange.getRequestMethod(), path,
                    exchange.getRequestHeaders().getFirst("Authorization"), body));
            Answer answer = answers.getOrDefault(path, new Answer(404, "{\"error\":{\"code\":\"NOT_FOUND\"}}", 0));
            try {
                Thread.sleep(answer.delayMs());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            byte[] bytes = answer.body().getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(answer.status(), bytes.length);
            exchange.getResponseBody().write(bytes);
            exchange.close();
        });
        server.setExecutor(java.util.concurrent.Executors.newCachedThreadPool());
        server.start();
    }

    FakeServe answer(String path, int status, String body) {
        return answer(path, status, body, 0);
    }

    FakeServe answer(String path, int status, String body, long delayMs) {
        answers.put(path, new Answer(status, body, delayMs));
        return this;
    }

    String url() {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    List<Received> on(String path) {
        return received.stream().filter(r -> r.path().equals(path)).toList();
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
