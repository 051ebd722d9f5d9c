package io.github.kraftacl.plugin;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.SSLSocketFactory;

/** Opens the plugin's connections to a serve (TCP, then TLS for https), each connect ending by its call's deadline. */
final class ServeSockets {
    /** An opened connection: the socket to talk on (TLS or not) and the TCP socket under it (the one to reset). */
    record Opened(Socket socket, Socket tcp) {
    }

    private final int connectTimeoutMs;
    private final SSLSocketFactory sockets; // null without TLS
    private final boolean verifyHostname;

    ServeSockets(int connectTimeoutMs, SSLSocketFactory sockets, boolean verifyHostname) {
        this.connectTimeoutMs = connectTimeoutMs;
        this.sockets = sockets;
        this.verifyHostname = verifyHostname;
    }

    /**
     * Connect to {@code server} within the time left before {@code deadline} (and the connect timeout); the TCP
     * socket's read timeout set to {@code soTimeoutMs} when it is not negative. A TLS handshake runs at the first
     * write or read, under the caller's deadline.
     */
    Opened open(URI server, long deadline, int timeoutMs, int soTimeoutMs) throws IOException {
        long remainingMs = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
        if (remainingMs <= 0) {
            throw new SocketTimeoutException("no time left to connect to " + server + " within the call's "
                    + timeoutMs + " ms");
        }
        Socket tcp = new Socket();
        try {
            tcp.setTcpNoDelay(true);
            tcp.connect(new InetSocketAddress(server.getHost(), server.getPort()),
                    (int) Math.min(connectTimeoutMs, remainingMs)); // never 0, which waits for ever
            if (soTimeoutMs >= 0) {
                tcp.setSoTimeout(soTimeoutMs);
            }
            Socket socket = tcp;
            if (server.getScheme().equals("https")) {
                SSLSocket tls = (SSLSocket) sockets.createSocket(tcp, server.getHost(), server.getPort(), true);
                if (verifyHostname) {
                    SSLParameters parameters = tls.getSSLParameters();
                    parameters.setEndpointIdentificationAlgorithm("HTTPS");
                    tls.setSSLParameters(parameters);
                }
                socket = tls;
            }
            return new Opened(socket, tcp);
        } catch (IOException | RuntimeException e) {
            tcp.close();
            throw e;
        }
    }
}
