/* TLS for the socketpair harness; see tls_harness.h. */

#define _GNU_SOURCE
#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "tls_harness.h"

static void die(const char *what)
{
    fprintf(stderr, "tls harness: %s\n", what);
    ERR_print_errors_fp(stderr);
    exit(2);
}

/* ---------------------------------------------------------------- certificates */

static void add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX v3;
    X509V3_set_ctx(&v3, issuer, cert, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &v3, nid, value);
    if (ext == NULL || X509_add_ext(cert, ext, -1) != 1)
        die("adding an extension");
    X509_EXTENSION_free(ext);
}

static void temp_path(char *buf, size_t size, const char *suffix)
{
    snprintf(buf, size, "/tmp/up-tls-test-XXXXXX%s", suffix);
    int fd = mkstemps(buf, (int)strlen(suffix));
    if (fd < 0)
        die("mkstemps");
    close(fd);
}

void harness_cert_make(harness_cert_t *c, const harness_cert_opts_t *o)
{
    memset(c, 0, sizeof(*c));
    c->key = o->rsa ? EVP_RSA_gen(2048) : EVP_EC_gen("P-256");
    c->cert = X509_new();
    if (c->key == NULL || c->cert == NULL)
        die("making a key");
    X509 *cert = c->cert;
    X509_set_version(cert, 2);
    unsigned char serial[8];
    RAND_bytes(serial, sizeof(serial));
    serial[0] &= 0x7f;
    BIGNUM *bn = BN_bin2bn(serial, sizeof(serial), NULL);
    BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert));
    BN_free(bn);
    X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
    X509_gmtime_adj(X509_getm_notAfter(cert), 86400);
    X509_set_pubkey(cert, c->key);
    X509_NAME *name = X509_get_subject_name(cert);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)o->cn, -1, -1, 0);
    X509 *issuer = o->issuer != NULL ? o->issuer->cert : cert;
    X509_set_issuer_name(cert, X509_get_subject_name(issuer));
    if (o->ca) {
        add_ext(cert, issuer, NID_basic_constraints, "critical,CA:TRUE");
        add_ext(cert, issuer, NID_key_usage, "critical,keyCertSign,cRLSign");
    } else {
        char san[512];
        snprintf(san, sizeof(san), "DNS:%s%s%s", o->cn, o->alt ? ",DNS:" : "",
                 o->alt ? o->alt : "");
        add_ext(cert, issuer, NID_subject_alt_name, san);
    }
    if (o->padding > 0) {
        char *pad = malloc(o->padding + 1);
        memset(pad, 'p', o->padding);
        pad[o->padding] = '\0';
        add_ext(cert, issuer, NID_netscape_comment, pad);
        free(pad);
    }
    EVP_PKEY *signer = o->issuer != NULL ? o->issuer->key : c->key;
    if (X509_sign(cert, signer, EVP_sha256()) == 0)
        die("signing");

    temp_path(c->cert_file, sizeof(c->cert_file), ".crt");
    temp_path(c->key_file, sizeof(c->key_file), ".key");
    FILE *f = fopen(c->cert_file, "w");
    if (f == NULL || PEM_write_X509(f, cert) != 1)
        die("writing a certificate");
    fclose(f);
    f = fopen(c->key_file, "w");
    const EVP_CIPHER *cipher = o->password != NULL ? EVP_aes_256_cbc() : NULL;
    if (f == NULL ||
        PEM_write_PrivateKey(f, c->key, cipher, (unsigned char *)o->password,
                             o->password != NULL ? (int)strlen(o->password) : 0, NULL,
                             NULL) != 1)
        die("writing a key");
    fclose(f);
}

void harness_cert_free(harness_cert_t *c)
{
    unlink(c->cert_file);
    unlink(c->key_file);
    EVP_PKEY_free(c->key);
    X509_free(c->cert);
    memset(c, 0, sizeof(*c));
}

up_tls_context_t *harness_tls_context(const harness_cert_t *cert, const up_tls_cert_t *hosts,
                                      size_t num_hosts, const unsigned char *secret)
{
    up_tls_config_t cfg = {
        .cert = {.cert_file = cert->cert_file, .key_file = cert->key_file},
        .hosts = hosts,
        .num_hosts = num_hosts,
    };
    if (secret != NULL)
        memcpy(cfg.ticket_secret, secret, sizeof(cfg.ticket_secret));
    else
        RAND_bytes(cfg.ticket_secret, sizeof(cfg.ticket_secret));
    char err[256];
    up_tls_context_t *ctx = up_tls_context_new(&cfg, err, sizeof(err));
    if (ctx == NULL) {
        fprintf(stderr, "tls harness: %s\n", err);
        exit(2);
    }
    return ctx;
}

void harness_tls_listener(harness_t *h, up_listener_t *l, up_tls_context_t *ctx)
{
    memset(l, 0, sizeof(*l));
    l->watcher.fd = -1;
    l->server = h->server;
    l->transport = &up_transport_tls;
    l->transport_ctx = ctx;
    snprintf(l->host, sizeof(l->host), "127.0.0.1");
    snprintf(l->port, sizeof(l->port), "443");
}

/* ---------------------------------------------------------------- clients */

ssize_t client_tls_read(client_t *c, void *buf, size_t len)
{
    size_t n = 0;
    ERR_clear_error();
    if (SSL_read_ex(c->ssl, buf, len, &n) == 1)
        return (ssize_t)n;
    switch (SSL_get_error(c->ssl, 0)) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_ZERO_RETURN:
        return 0;
    default:
        ERR_clear_error();
        errno = ECONNRESET;
        return -1;
    }
}

ssize_t client_tls_write(client_t *c, const void *buf, size_t len)
{
    size_t n = 0;
    ERR_clear_error();
    if (SSL_write_ex(c->ssl, buf, len, &n) == 1)
        return (ssize_t)n;
    int e = SSL_get_error(c->ssl, 0);
    ERR_clear_error();
    errno = e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? EAGAIN : EPIPE;
    return -1;
}

void client_tls_shutdown(client_t *c)
{
    ERR_clear_error();
    SSL_shutdown(c->ssl);
    ERR_clear_error();
}

void client_tls_free(client_t *c)
{
    SSL_free(c->ssl);
    SSL_CTX_free(c->ssl_ctx);
    c->ssl = NULL;
    c->ssl_ctx = NULL;
}

int client_open_tls(harness_t *h, client_t *c, const up_listener_t *l, int server_sndbuf,
                    const client_tls_t *opts)
{
    static const client_tls_t defaults = {.alpn = (const unsigned char *)"\x08http/1.1",
                                          .alpn_len = 9};
    if (opts == NULL)
        opts = &defaults;
    int sv[2];
    memset(c, 0, sizeof(*c));
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0)
        die("socketpair");
    if (server_sndbuf > 0 &&
        setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &server_sndbuf, sizeof(server_sndbuf)) != 0)
        die("setsockopt SO_SNDBUF");
    c->fd = sv[1];
    c->ssl_ctx = SSL_CTX_new(TLS_client_method());
    if (c->ssl_ctx == NULL)
        die("SSL_CTX_new");
    if (opts->min_version != 0)
        SSL_CTX_set_min_proto_version(c->ssl_ctx, opts->min_version);
    if (opts->max_version != 0)
        SSL_CTX_set_max_proto_version(c->ssl_ctx, opts->max_version);
    if (opts->min_version != 0 && opts->min_version < TLS1_2_VERSION)
        SSL_CTX_set_security_level(c->ssl_ctx, 0); /* OpenSSL 3 refuses TLS 1.0 by default */
    if (opts->ca_file != NULL) {
        if (SSL_CTX_load_verify_locations(c->ssl_ctx, opts->ca_file, NULL) != 1)
            die("loading a CA file");
        SSL_CTX_set_verify(c->ssl_ctx, SSL_VERIFY_PEER, NULL);
    }
    c->ssl = SSL_new(c->ssl_ctx);
    if (c->ssl == NULL)
        die("SSL_new");
    SSL_set_fd(c->ssl, c->fd);
    if (opts->alpn != NULL)
        SSL_set_alpn_protos(c->ssl, opts->alpn, opts->alpn_len);
    if (opts->sni != NULL) {
        SSL_set_tlsext_host_name(c->ssl, opts->sni);
        if (opts->ca_file != NULL)
            SSL_set1_host(c->ssl, opts->sni);
    }
    if (opts->session != NULL)
        SSL_set_session(c->ssl, opts->session);
    c->conn = up_conn_loop_accept(h->server, l, &up_http1_protocol, sv[0], NULL);
    uint64_t deadline = harness_now_ms() + HARNESS_TIMEOUT_MS;
    for (;;) {
        ERR_clear_error();
        int r = SSL_connect(c->ssl);
        if (r == 1)
            return 1;
        int e = SSL_get_error(c->ssl, r);
        if ((e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) ||
            harness_now_ms() >= deadline) {
            ERR_clear_error();
            return 0;
        }
        harness_turn(h, 1);
    }
}
