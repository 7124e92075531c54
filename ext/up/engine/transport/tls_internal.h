#ifndef UP_TLS_INTERNAL_H
#define UP_TLS_INTERNAL_H

/* What tls_context.c and transport_tls.c share, and nothing else includes. */

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
    unsigned char ticket_secret[UP_TLS_TICKET_SECRET_SIZE];
};

/* The BIO between OpenSSL and a connection's socket (transport_tls.c): reads the socket,
 * writes into the connection's buffer of ciphertext. */
int up_tls_bio_write(BIO *bio, const char *data, int len);
int up_tls_bio_read(BIO *bio, char *buf, int len);

#endif
