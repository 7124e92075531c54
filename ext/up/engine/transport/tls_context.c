/* TLS contexts: certificates and keys loaded from PEM files into OpenSSL contexts with UP!'s
 * fixed settings, the host name callback (SNI), ALPN and the session ticket keys. See tls.h. */

#include <openssl/err.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include "base/memory.h"
#include "core/conn.h"
#include "transport/tls_internal.h"

/* TLS 1.2: ECDHE key exchange and AEAD ciphers only, ECDSA certificates first (tls.h). */
#define TLS12_CIPHERS                                                                            \
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"                                 \
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"                                 \
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"
#define TLS13_CIPHERS "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"
#define GROUPS "X25519:P-256:P-384"
/* The ALPN protocol list UP! answers with (RFC 7301 §3.1: length-prefixed names). */
static const unsigned char alpn_http11[] = "\x08http/1.1";
/* The type our BIO says it is: a source/sink of its own kind (BIO_get_new_index would spend
 * one of OpenSSL's few process-wide indexes on every context, and reloads make contexts). */
#define BIO_TYPE_UP (0x7e | BIO_TYPE_SOURCE_SINK)

/* ---------------------------------------------------------------- errors */

static void fail(char *err, size_t err_size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_size, fmt, ap);
    va_end(ap);
}

/* OpenSSL's reason for the last failure: a system call's as strerror says it ("No such file
 * or directory"), else the first error queued, the cause of those after it. The queue is
 * cleared for the next call. */
static const char *reason(char *buf, size_t size)
{
    unsigned long first = ERR_peek_error(), e;
    const char *r = first != 0 ? ERR_reason_error_string(first) : NULL;
    while ((e = ERR_get_error()) != 0) {
        if (ERR_SYSTEM_ERROR(e)) {
            r = strerror(ERR_GET_REASON(e));
            break;
        }
    }
    snprintf(buf, size, "%s", r != NULL ? r : "unknown error");
    ERR_clear_error();
    return buf;
}

/* ---------------------------------------------------------------- callbacks */

/* RFC 6125 §6.4.3, the part a server needs: a name matches a pattern equal to it (host names
 * are case-insensitive), or "*.rest" when the name is one label followed by ".rest". */
static int host_matches(const char *pattern, const char *name)
{
    if (pattern[0] == '*' && pattern[1] == '.') {
        const char *dot = strchr(name, '.');
        return dot != NULL && dot != name && strcasecmp(dot + 1, pattern + 2) == 0;
    }
    return strcasecmp(pattern, name) == 0;
}

static SSL_CTX *ssl_ctx_for(const up_tls_context_t *ctx, const char *name)
{
    if (name == NULL || strlen(name) > UP_TLS_MAX_NAME)
        return NULL;
    for (size_t i = 0; i < ctx->num_hosts; i++) {
        if (host_matches(ctx->hosts[i].name, name))
            return ctx->hosts[i].ssl_ctx;
    }
    return NULL;
}

/* SNI (RFC 6066 §3): a host certificate when the name has one, else the default stays. */
static int on_server_name(SSL *ssl, int *alert, void *arg)
{
    (void)alert;
    SSL_CTX *host = ssl_ctx_for(arg, SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name));
    if (host != NULL && SSL_set_SSL_CTX(ssl, host) == NULL)
        return SSL_TLSEXT_ERR_ALERT_FATAL;
    return SSL_TLSEXT_ERR_OK;
}

static int on_alpn(SSL *ssl, const unsigned char **out, unsigned char *out_len,
                   const unsigned char *in, unsigned int in_len, void *arg)
{
    (void)arg;
    if (up_tls_acme_challenge(ssl)) {
        up_tls_acme_protocol(out, out_len);
        return SSL_TLSEXT_ERR_OK;
    }
    /* The listener's protocol names what it speaks (HTTP/2 beside HTTP/1.1 when on). */
    const up_conn_t *conn = BIO_get_data(SSL_get_rbio(ssl));
    const up_protocol_t *protocol = conn != NULL && conn->listener != NULL ? conn->listener->protocol
                                                                          : NULL;
    const unsigned char *list = alpn_http11;
    size_t list_len = sizeof(alpn_http11) - 1;
    if (protocol != NULL && protocol->alpn != NULL) {
        list = protocol->alpn;
        list_len = protocol->alpn_len;
    }
    unsigned char *selected;
    if (SSL_select_next_proto(&selected, out_len, list, (unsigned)list_len, in, in_len) !=
        OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_ALERT_FATAL; /* RFC 7301 §3.2: no_application_protocol */
    *out = selected;
    return SSL_TLSEXT_ERR_OK;
}

/* The keys of one ticket period, derived from the secret: HMAC-SHA256(secret, label, period,
 * n) for n = 1..3 gives the name's check bytes, the AES-256 key and the HMAC key. The name is
 * the period (8 bytes, big-endian), so a ticket says which keys it needs, then 8 check bytes. */
typedef struct ticket_keys_t {
    unsigned char name[16];
    unsigned char aes[32];
    unsigned char hmac[32];
} ticket_keys_t;

static int derive_ticket_keys(const up_tls_context_t *ctx, uint64_t period, ticket_keys_t *k)
{
    static const char label[] = "UP! session ticket keys";
    unsigned char in[sizeof(label) + 9], out[3][32];
    memcpy(in, label, sizeof(label));
    for (int i = 0; i < 8; i++)
        in[sizeof(label) + i] = (unsigned char)(period >> (56 - 8 * i));
    for (int n = 0; n < 3; n++) {
        unsigned int len = 0;
        in[sizeof(label) + 8] = (unsigned char)(n + 1);
        if (HMAC(EVP_sha256(), ctx->ticket_secret, sizeof(ctx->ticket_secret), in, sizeof(in),
                 out[n], &len) == NULL)
            return -1;
    }
    memcpy(k->name, in + sizeof(label), 8);
    memcpy(k->name + 8, out[0], 8);
    memcpy(k->aes, out[1], 32);
    memcpy(k->hmac, out[2], 32);
    OPENSSL_cleanse(out, sizeof(out));
    return 0;
}

static int set_ticket_mac(EVP_MAC_CTX *mac, unsigned char *key)
{
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, key, 32),
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
        OSSL_PARAM_construct_end(),
    };
    return EVP_MAC_CTX_set_params(mac, params) == 1 ? 0 : -1;
}

/* OpenSSL's ticket key callback: enc 1 to seal a new ticket under this period's keys; enc 0 to
 * open one, which works for this period's and the last one's (then 2: the client gets a fresh
 * ticket), and fails quietly for anything else (0: a full handshake instead). */
static int on_ticket_key(SSL *ssl, unsigned char name[16], unsigned char *iv,
                         EVP_CIPHER_CTX *cipher, EVP_MAC_CTX *mac, int enc)
{
    const up_tls_context_t *ctx = SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
    uint64_t now = (uint64_t)time(NULL) / UP_TLS_TICKET_PERIOD_S;
    ticket_keys_t k;
    int result;
    if (enc) {
        result = derive_ticket_keys(ctx, now, &k) == 0 && RAND_bytes(iv, 16) == 1 &&
                         EVP_EncryptInit_ex(cipher, EVP_aes_256_cbc(), NULL, k.aes, iv) == 1 &&
                         set_ticket_mac(mac, k.hmac) == 0
                     ? 1
                     : -1;
        if (result == 1)
            memcpy(name, k.name, 16);
    } else {
        uint64_t period = 0;
        for (int i = 0; i < 8; i++)
            period = period << 8 | name[i];
        if (period != now && period + 1 != now)
            return 0;
        if (derive_ticket_keys(ctx, period, &k) != 0)
            return -1;
        if (CRYPTO_memcmp(name + 8, k.name + 8, 8) != 0)
            result = 0;
        else if (EVP_DecryptInit_ex(cipher, EVP_aes_256_cbc(), NULL, k.aes, iv) != 1 ||
                 set_ticket_mac(mac, k.hmac) != 0)
            result = -1;
        else
            result = period == now ? 1 : 2;
    }
    OPENSSL_cleanse(&k, sizeof(k));
    return result;
}

/* ---------------------------------------------------------------- loading */

typedef struct password_t {
    const char *password;
    int asked;
} password_t;

static int on_password(char *buf, int size, int rwflag, void *arg)
{
    password_t *pw = arg;
    (void)rwflag;
    pw->asked = 1;
    if (pw->password == NULL)
        return -1;
    size_t len = strlen(pw->password);
    if (len >= (size_t)size)
        return -1;
    memcpy(buf, pw->password, len);
    return (int)len;
}

static int load_key(SSL_CTX *c, const up_tls_cert_t *cert, const char *password, char *err,
                    size_t err_size)
{
    char why[160];
    BIO *bio = BIO_new_file(cert->key_file, "r");
    if (bio == NULL) {
        fail(err, err_size, "cannot read the key %s: %s", cert->key_file, reason(why, sizeof(why)));
        return -1;
    }
    password_t pw = {password, 0};
    EVP_PKEY *key = PEM_read_bio_PrivateKey(bio, NULL, on_password, &pw);
    BIO_free(bio);
    if (key == NULL) {
        reason(why, sizeof(why));
        if (pw.asked && password == NULL)
            fail(err, err_size, "the key in %s is encrypted and no passphrase was given",
                 cert->key_file);
        else if (pw.asked)
            fail(err, err_size, "cannot decrypt the key in %s with the passphrase given (%s)",
                 cert->key_file, why);
        else
            fail(err, err_size, "no private key in %s (%s)", cert->key_file, why);
        return -1;
    }
    int ok = SSL_CTX_use_PrivateKey(c, key) == 1 && SSL_CTX_check_private_key(c) == 1;
    EVP_PKEY_free(key);
    if (!ok) {
        fail(err, err_size, "the key in %s does not match the certificate in %s (%s)",
             cert->key_file, cert->cert_file, reason(why, sizeof(why)));
        return -1;
    }
    return 0;
}

/* The certificates of a CA file, added to the chain sent after the certificate. */
static int load_chain(SSL_CTX *c, const char *ca_file, char *err, size_t err_size)
{
    char why[160];
    BIO *bio = BIO_new_file(ca_file, "r");
    if (bio == NULL) {
        fail(err, err_size, "cannot read the CA file %s: %s", ca_file, reason(why, sizeof(why)));
        return -1;
    }
    int added = 0;
    X509 *x;
    while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
        int ok = SSL_CTX_add0_chain_cert(c, x) == 1;
        if (!ok)
            X509_free(x);
        added += ok;
    }
    BIO_free(bio);
    ERR_clear_error(); /* the end of the file reads as a "no start line" error */
    if (added == 0) {
        fail(err, err_size, "no certificate in the CA file %s", ca_file);
        return -1;
    }
    return 0;
}

/* One OpenSSL context with UP!'s settings (tls.h) and one certificate. */
static SSL_CTX *new_ssl_ctx(up_tls_context_t *ctx, const up_tls_cert_t *cert,
                            const char *password, char *err, size_t err_size)
{
    char why[160];
    SSL_CTX *c = SSL_CTX_new(TLS_server_method());
    if (c == NULL) {
        fail(err, err_size, "cannot make a TLS context: %s", reason(why, sizeof(why)));
        return NULL;
    }
    /* Settings that only fail for a broken OpenSSL: checked all at once. */
    int ok = SSL_CTX_set_min_proto_version(c, TLS1_2_VERSION) == 1 &&
             SSL_CTX_set_max_proto_version(c, TLS1_3_VERSION) == 1 &&
             SSL_CTX_set_cipher_list(c, TLS12_CIPHERS) == 1 &&
             SSL_CTX_set_ciphersuites(c, TLS13_CIPHERS) == 1 &&
             SSL_CTX_set1_groups_list(c, GROUPS) == 1 &&
             SSL_CTX_set_session_id_context(c, (const unsigned char *)"up", 2) == 1 &&
             SSL_CTX_set_tlsext_ticket_key_evp_cb(c, on_ticket_key) == 1;
    if (!ok) {
        fail(err, err_size, "cannot set up a TLS context: %s", reason(why, sizeof(why)));
        SSL_CTX_free(c);
        return NULL;
    }
    /* Unexpected EOF: many clients close without a close_notify, and HTTP's own framing tells
     * a cut-off message (RFC 9112 §8). Read-ahead: one read takes every record there is, and
     * pending (transport_tls.c) hands them out. Released buffers: an idle connection holds no
     * OpenSSL buffer. No cache of sessions: tickets carry them. */
    SSL_CTX_set_options(c, SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_RENEGOTIATION |
                               SSL_OP_NO_COMPRESSION | SSL_OP_IGNORE_UNEXPECTED_EOF);
    SSL_CTX_set_mode(c, SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_read_ahead(c, 1);
    SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_timeout(c, UP_TLS_TICKET_PERIOD_S);
    SSL_CTX_set_app_data(c, ctx);
    SSL_CTX_set_alpn_select_cb(c, on_alpn, NULL);
    if (ctx->acme_dir != NULL) {
        SSL_CTX_set_client_hello_cb(c, up_tls_acme_on_client_hello, NULL);
        SSL_CTX_set_cert_cb(c, up_tls_acme_on_cert, ctx);
    }
    if (SSL_CTX_use_certificate_chain_file(c, cert->cert_file) != 1) {
        fail(err, err_size, "cannot load the certificate %s: %s", cert->cert_file,
             reason(why, sizeof(why)));
        SSL_CTX_free(c);
        return NULL;
    }
    if ((cert->ca_file != NULL && load_chain(c, cert->ca_file, err, err_size) != 0) ||
        load_key(c, cert, password, err, err_size) != 0) {
        SSL_CTX_free(c);
        return NULL;
    }
    return c;
}

/* ---------------------------------------------------------------- the BIO */

/* OpenSSL flushes its BIO after each handshake flight; ours has nothing to flush (the
 * transport sends what it buffered), and answers nothing else. */
static long bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    (void)b;
    (void)num;
    (void)ptr;
    return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static BIO_METHOD *new_bio_method(void)
{
    BIO_METHOD *m = BIO_meth_new(BIO_TYPE_UP, "up connection");
    if (m == NULL || BIO_meth_set_write(m, up_tls_bio_write) != 1 ||
        BIO_meth_set_read(m, up_tls_bio_read) != 1 || BIO_meth_set_ctrl(m, bio_ctrl) != 1) {
        BIO_meth_free(m);
        return NULL;
    }
    return m;
}

/* ---------------------------------------------------------------- contexts */

static void context_free(up_tls_context_t *ctx)
{
    SSL_CTX_free(ctx->ssl_ctx);
    for (size_t i = 0; i < ctx->num_hosts; i++) {
        SSL_CTX_free(ctx->hosts[i].ssl_ctx);
        free(ctx->hosts[i].name);
    }
    free(ctx->hosts);
    BIO_meth_free(ctx->bio_method);
    free(ctx->acme_dir);
    OPENSSL_cleanse(ctx->ticket_secret, sizeof(ctx->ticket_secret));
    free(ctx);
}

up_tls_context_t *up_tls_context_new(const up_tls_config_t *cfg, char *err, size_t err_size)
{
    if (cfg->num_hosts > UP_TLS_MAX_HOSTS) {
        fail(err, err_size, "at most %d host certificates", UP_TLS_MAX_HOSTS);
        return NULL;
    }
    up_tls_context_t *ctx = up_calloc(1, sizeof(*ctx));
    atomic_init(&ctx->refs, 1);
    memcpy(ctx->ticket_secret, cfg->ticket_secret, sizeof(ctx->ticket_secret));
    ctx->hosts = up_calloc(cfg->num_hosts > 0 ? cfg->num_hosts : 1, sizeof(*ctx->hosts));
    ctx->bio_method = new_bio_method();
    if (ctx->bio_method == NULL) {
        char why[160];
        fail(err, err_size, "cannot make a TLS connection type: %s", reason(why, sizeof(why)));
        context_free(ctx);
        return NULL;
    }
    if (cfg->acme_challenge_dir != NULL) {
        if (up_tls_acme_init() != 0) {
            fail(err, err_size, "cannot answer TLS-ALPN-01: OpenSSL has no room for its mark");
            context_free(ctx);
            return NULL;
        }
        ctx->acme_dir = strdup(cfg->acme_challenge_dir);
        if (ctx->acme_dir == NULL)
            up_fatal("strdup");
    }
    ctx->ssl_ctx = new_ssl_ctx(ctx, &cfg->cert, cfg->key_password, err, err_size);
    if (ctx->ssl_ctx == NULL) {
        context_free(ctx);
        return NULL;
    }
    for (size_t i = 0; i < cfg->num_hosts; i++) {
        const up_tls_cert_t *host = &cfg->hosts[i];
        if (host->host == NULL || host->host[0] == '\0' || strlen(host->host) > UP_TLS_MAX_NAME) {
            fail(err, err_size, "a host certificate (%s) needs a host name of 1 to %d bytes",
                 host->cert_file, UP_TLS_MAX_NAME);
            context_free(ctx);
            return NULL;
        }
        SSL_CTX *c = new_ssl_ctx(ctx, host, cfg->key_password, err, err_size);
        if (c == NULL) {
            context_free(ctx);
            return NULL;
        }
        ctx->hosts[i].ssl_ctx = c;
        ctx->hosts[i].name = strdup(host->host);
        if (ctx->hosts[i].name == NULL)
            up_fatal("strdup");
        ctx->num_hosts = i + 1;
    }
    SSL_CTX_set_tlsext_servername_callback(ctx->ssl_ctx, on_server_name);
    SSL_CTX_set_tlsext_servername_arg(ctx->ssl_ctx, ctx);
    return ctx;
}

void up_tls_context_retain(up_tls_context_t *ctx)
{
    atomic_fetch_add_explicit(&ctx->refs, 1, memory_order_relaxed);
}

void up_tls_context_release(up_tls_context_t *ctx)
{
    if (ctx != NULL && atomic_fetch_sub_explicit(&ctx->refs, 1, memory_order_acq_rel) == 1)
        context_free(ctx);
}

int up_tls_context_subject(const up_tls_context_t *ctx, const char *host, char *out,
                           size_t out_size)
{
    SSL_CTX *c = host != NULL ? ssl_ctx_for(ctx, host) : NULL;
    X509 *x = SSL_CTX_get0_certificate(c != NULL ? c : ctx->ssl_ctx);
    if (x == NULL || out_size == 0)
        return -1;
    BIO *bio = BIO_new(BIO_s_mem());
    if (bio == NULL)
        return -1;
    X509_NAME_print_ex(bio, X509_get_subject_name(x), 0, XN_FLAG_ONELINE);
    int n = BIO_read(bio, out, (int)out_size - 1);
    BIO_free(bio);
    out[n > 0 ? n : 0] = '\0';
    return n > 0 ? 0 : -1;
}
