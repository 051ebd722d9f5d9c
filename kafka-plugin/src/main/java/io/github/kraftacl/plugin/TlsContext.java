package io.github.kraftacl.plugin;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.InvalidKeySpecException;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.crypto.Cipher;
import javax.crypto.EncryptedPrivateKeyInfo;
import javax.crypto.SecretKeyFactory;
import javax.crypto.spec.PBEKeySpec;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.apache.kafka.common.config.SslConfigs;

/**
 * The plugin's TLS context for https serve URLs, built with the JDK alone from Kafka's client {@code ssl.*}
 * settings: the values parsed and defaulted by Kafka's public {@code ConfigDef.withClientSslSupport()}, the
 * passwords (which ConfigDef hides in a non-public type) as the operator wrote them.
 *
 * <p>Stateless. Key and trust stores are read as a Kafka client reads them: JKS or PKCS12 files, or PEM (a
 * {@code .location} file, or the inline {@code ssl.keystore.key} / {@code ssl.keystore.certificate.chain} /
 * {@code ssl.truststore.certificates}), the private key in PKCS#8, encrypted with {@code ssl.key.password} or
 * not. Kafka's own loader ({@code DefaultSslEngineFactory}) is an internal class a plugin must not use.
 */
final class TlsContext {
    private static final Pattern PEM = Pattern.compile(
            "-----BEGIN ([A-Z ]+)-----\\s*([A-Za-z0-9+/=\\s]+?)\\s*-----END \\1-----");
    private static final List<String> KEY_ALGORITHMS = List.of("RSA", "EC", "DSA", "EdDSA");
    private static final char[] NO_PASSWORD = new char[0];

    private TlsContext() {}

    /** The SSLContext of these settings; throws GeneralSecurityException or IOException naming what failed. */
    static SSLContext build(Map<String, Object> parsed, Map<String, ?> raw) throws GeneralSecurityException, IOException {
        Settings ssl = new Settings(parsed, raw);
        String provider = string(ssl, SslConfigs.SSL_PROVIDER_CONFIG);
        String protocol = string(ssl, SslConfigs.SSL_PROTOCOL_CONFIG);
        SSLContext context = provider == null ? SSLContext.getInstance(protocol)
                : SSLContext.getInstance(protocol, provider);
        KeyStore keys = keyStore(ssl);
        KeyManagerFactory kmf = null;
        if (keys != null) {
            kmf = KeyManagerFactory.getInstance(string(ssl, SslConfigs.SSL_KEYMANAGER_ALGORITHM_CONFIG));
            kmf.init(keys, keyPassword(ssl));
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(
                string(ssl, SslConfigs.SSL_TRUSTMANAGER_ALGORITHM_CONFIG));
        tmf.init(trustStore(ssl)); // null: the JDK's default trust store
        String random = string(ssl, SslConfigs.SSL_SECURE_RANDOM_IMPLEMENTATION_CONFIG);
        context.init(kmf == null ? null : kmf.getKeyManagers(), tmf.getTrustManagers(),
                random == null ? null : SecureRandom.getInstance(random));
        return context;
    }

    private static KeyStore keyStore(Settings ssl) throws GeneralSecurityException, IOException {
        String type = string(ssl, SslConfigs.SSL_KEYSTORE_TYPE_CONFIG);
        String location = string(ssl, SslConfigs.SSL_KEYSTORE_LOCATION_CONFIG);
        String inlineKey = password(ssl, SslConfigs.SSL_KEYSTORE_KEY_CONFIG);
        if ("PEM".equalsIgnoreCase(type)) {
            String text = location != null ? read(location) : inlineKey == null ? null
                    : inlineKey + "\n" + password(ssl, SslConfigs.SSL_KEYSTORE_CERTIFICATE_CHAIN_CONFIG);
            if (text == null) {
                return null;
            }
            KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
            store.load(null, null);
            store.setKeyEntry("kraft-acl", privateKey(text, password(ssl, SslConfigs.SSL_KEY_PASSWORD_CONFIG)),
                    keyPassword(ssl), certificates(text).toArray(new Certificate[0]));
            return store;
        }
        return location == null ? null
                : load(type, location, password(ssl, SslConfigs.SSL_KEYSTORE_PASSWORD_CONFIG));
    }

    private static KeyStore trustStore(Settings ssl) throws GeneralSecurityException, IOException {
        String type = string(ssl, SslConfigs.SSL_TRUSTSTORE_TYPE_CONFIG);
        String location = string(ssl, SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG);
        if ("PEM".equalsIgnoreCase(type)) {
            String text = location != null ? read(location)
                    : password(ssl, SslConfigs.SSL_TRUSTSTORE_CERTIFICATES_CONFIG);
            if (text == null) {
                return null;
            }
            KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
            store.load(null, null);
            int i = 0;
            for (Certificate c : certificates(text)) {
                store.setCertificateEntry("ca-" + i++, c);
            }
            return store;
        }
        return location == null ? null
                : load(type, location, password(ssl, SslConfigs.SSL_TRUSTSTORE_PASSWORD_CONFIG));
    }

    private static KeyStore load(String type, String location, String password)
            throws GeneralSecurityException, IOException {
        KeyStore store = KeyStore.getInstance(type);
        try (InputStream in = Files.newInputStream(Path.of(location))) {
            store.load(in, password == null ? null : password.toCharArray());
        }
        return store;
    }

    /** Kafka's rule: the key password, else the key store password. */
    private static char[] keyPassword(Settings ssl) {
        String key = password(ssl, SslConfigs.SSL_KEY_PASSWORD_CONFIG);
        String store = password(ssl, SslConfigs.SSL_KEYSTORE_PASSWORD_CONFIG);
        String chosen = key != null ? key : store;
        return chosen == null ? NO_PASSWORD : chosen.toCharArray();
    }

    /** The CERTIFICATE blocks of a PEM text, in order (a key store's text also holds its key). */
    private static List<Certificate> certificates(String pem) throws GeneralSecurityException {
        CertificateFactory factory = CertificateFactory.getInstance("X.509");
        List<Certificate> out = new ArrayList<>();
        Matcher m = PEM.matcher(pem);
        while (m.find()) {
            if (m.group(1).equals("CERTIFICATE")) {
                byte[] der = Base64.getMimeDecoder().decode(m.group(2));
                out.add(factory.generateCertificate(new ByteArrayInputStream(der)));
            }
        }
        if (out.isEmpty()) {
            throw new GeneralSecurityException("no CERTIFICATE in the PEM text");
        }
        return out;
    }

    /** The PKCS#8 private key of a PEM text (PRIVATE KEY, or ENCRYPTED PRIVATE KEY with the key password). */
    private static PrivateKey privateKey(String pem, String password) throws GeneralSecurityException, IOException {
        Matcher m = PEM.matcher(pem);
        while (m.find()) {
            String label = m.group(1);
            byte[] der = Base64.getMimeDecoder().decode(m.group(2));
            if (label.equals("PRIVATE KEY")) {
                return decode(new PKCS8EncodedKeySpec(der));
            }
            if (label.equals("ENCRYPTED PRIVATE KEY")) {
                if (password == null) {
                    throw new GeneralSecurityException("the PEM key is encrypted and ssl.key.password is not set");
                }
                EncryptedPrivateKeyInfo info = new EncryptedPrivateKeyInfo(der);
                // PBES2 (what openssl and Python's cryptography write) is named by its parameters in the JDK,
                // e.g. PBEWithHmacSHA256AndAES_256; PBES1 schemes by the algorithm id itself.
                String algorithm = info.getAlgName().equals("PBES2") && info.getAlgParameters() != null
                        ? info.getAlgParameters().toString() : info.getAlgName();
                SecretKeyFactory factory = SecretKeyFactory.getInstance(algorithm);
                Cipher cipher = Cipher.getInstance(algorithm);
                cipher.init(Cipher.DECRYPT_MODE, factory.generateSecret(new PBEKeySpec(password.toCharArray())),
                        info.getAlgParameters());
                return decode(info.getKeySpec(cipher));
            }
        }
        throw new GeneralSecurityException("no PKCS#8 PRIVATE KEY in the PEM key store (Kafka's PEM format)");
    }

    private static PrivateKey decode(PKCS8EncodedKeySpec spec) throws GeneralSecurityException {
        for (String algorithm : KEY_ALGORITHMS) {
            try {
                return KeyFactory.getInstance(algorithm).generatePrivate(spec);
            } catch (InvalidKeySpecException e) {
                // not this algorithm: try the next
            }
        }
        throw new GeneralSecurityException("the PEM private key is none of " + KEY_ALGORITHMS);
    }

    private static String read(String location) throws IOException {
        return Files.readString(Path.of(location), StandardCharsets.US_ASCII);
    }

    /** The parsed settings, and the raw ones for passwords. */
    private record Settings(Map<String, Object> parsed, Map<String, ?> raw) {}

    private static String string(Settings ssl, String key) {
        Object value = ssl.parsed().get(key);
        return value == null ? null : value.toString();
    }

    private static String password(Settings ssl, String key) {
        Object value = ssl.raw().get(key);
        return value == null ? null : value.toString();
    }
}
