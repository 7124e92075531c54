#ifndef UP_TLS_INTERNAL_H
#define UP_TLS_INTERNAL_H

/* What tls_context.c, tls_acme.c and transport_tls.c share, and nothing else includes. */

#include <openssl/bio.h>
#include <openssl/ssl.h>
#include <stdatomic.h>
#include "transport/tls.h"

typedef struct up_tls_host_t {
    char *name; /* a host name, or "*.domain" */
    SSL_CTX *ssl_ctx;
} up_tls_host_t;

/* Immutable once made, but for its reference count: a connection reads it from the loop
 * thread while another thread makes the next one (a reload). */
struct up_tls_context_t {
    atomic_uint refs;
    SSL_CTX *ssl_ctx; /* the default certificate; every handshake starts here */
    up_tls_host_t *hosts;
    size_t num_hosts;
    BIO_METHOD *bio_method; /* the connections' BIO (transport_tls.c) */
    char *acme_dir;         /* TLS-ALPN-01 certificates (tls_acme.c), or NULL */
    unsigned char ticket_secret[UP_TLS_TICKET_SECRET_SIZE];
};

/* The BIO between OpenSSL and a connection's socket (transport_tls.c): reads the socket,
 * writes into the connection's buffer of ciphertext. */
int up_tls_bio_write(BIO *bio, const char *data, int len);
int up_tls_bio_read(BIO *bio, char *buf, int len);

/* TLS-ALPN-01 (tls_acme.c), on contexts with an acme_dir. init: once before the callbacks are
 * set, -1 when OpenSSL has no room. The client hello callback marks a handshake that offers
 * acme-tls/1 alone; challenge says whether one is marked; the certificate callback (its arg
 * the up_tls_context_t) puts the challenge certificate of the SNI name on a marked one, and
 * fails it when there is none; protocol gives what ALPN selects for it. */
int up_tls_acme_init(void);
int up_tls_acme_on_client_hello(SSL *ssl, int *alert, void *arg);
int up_tls_acme_challenge(SSL *ssl);
int up_tls_acme_on_cert(SSL *ssl, void *arg);
void up_tls_acme_protocol(const unsigned char **out, unsigned char *out_len);

#endif
