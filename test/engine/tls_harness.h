#ifndef UP_TLS_HARNESS_H
#define UP_TLS_HARNESS_H

/* TLS for the socketpair harness (engine_harness.h): throw-away certificates made with OpenSSL
 * when a test runs (no key is ever committed), server contexts and listeners of the TLS
 * transport, and clients that speak TLS through OpenSSL over their end of the socketpair, the
 * handshake pumped between loop turns like every other wait of the harness. A TLS client is a
 * client_t with ssl set: client_send, client_read_some and the waits go through it. */

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include "engine_harness.h"
#include "transport/tls.h"

typedef struct harness_cert_t {
    char cert_file[64], key_file[64];
    EVP_PKEY *key;
    X509 *cert;
} harness_cert_t;

typedef struct harness_cert_opts_t {
    const char *cn;               /* subject CN, also a DNS name in subjectAltName */
    const char *alt;              /* another DNS name, or NULL */
    int rsa;                      /* RSA 2048 instead of EC P-256 */
    size_t padding;               /* bytes of a comment extension: a bigger handshake flight */
    const harness_cert_t *issuer; /* NULL: self-signed */
    int ca;                       /* a CA certificate (basicConstraints CA:TRUE) */
    const char *password;         /* the key file is encrypted with it */
} harness_cert_opts_t;

/* Makes a key and a certificate and writes them to temporary PEM files. Exits on failure. */
void harness_cert_make(harness_cert_t *c, const harness_cert_opts_t *opts);
/* Removes the files and frees the objects. */
void harness_cert_free(harness_cert_t *c);

/* A context for cert with a random ticket secret (or secret, when not NULL), hosts by SNI.
 * Exits on failure. */
up_tls_context_t *harness_tls_context(const harness_cert_t *cert, const up_tls_cert_t *hosts,
                                      size_t num_hosts, const unsigned char *secret);
/* A listener of the TLS transport with ctx, for client_open_tls (it is not watched: the test
 * plays the accept). Its reference to ctx is the caller's. */
void harness_tls_listener(harness_t *h, up_listener_t *l, up_tls_context_t *ctx);

typedef struct client_tls_t {
    int min_version, max_version; /* TLS1_2_VERSION...; 0 for OpenSSL's defaults */
    const unsigned char *alpn;    /* wire format ("\x08http/1.1"), or NULL to offer none */
    unsigned alpn_len;
    const char *sni;              /* or NULL */
    const char *ca_file;          /* verify the server against it, or NULL not to */
    SSL_SESSION *session;         /* a session to resume, or NULL */
} client_tls_t;

/* Connects a TLS client to l over a socketpair (server_sndbuf as client_open's) and pumps the
 * loop until its handshake ends. opts NULL: TLS 1.3, ALPN http/1.1, no SNI. Returns 1 when the
 * handshake succeeded, 0 when it failed (or timed out); c->fd is open either way. */
int client_open_tls(harness_t *h, client_t *c, const up_listener_t *l, int server_sndbuf,
                    const client_tls_t *opts);
/* read(2) and send(2) for a TLS client: bytes, 0 at the end of the stream, or -1 with errno
 * (EAGAIN when OpenSSL needs the socket). */
ssize_t client_tls_read(client_t *c, void *buf, size_t len);
ssize_t client_tls_write(client_t *c, const void *buf, size_t len);
/* Sends close_notify (then the harness shuts the socket's sending side). */
void client_tls_shutdown(client_t *c);
void client_tls_free(client_t *c);

#endif
