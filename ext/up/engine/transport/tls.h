#ifndef UP_TLS_H
#define UP_TLS_H

/* TLS for the engine's connections, on OpenSSL: a context (certificates and settings, shared by
 * the listeners that serve them, tls_context.c) and the TLS transport (transport_tls.c) that
 * opens every connection those listeners accept with it.
 *
 * The settings are fixed, not options: TLS 1.2 and 1.3 only (RFC 8996 retires 1.0 and 1.1);
 * for 1.2 the ECDHE suites with AES-GCM or ChaCha20-Poly1305 alone (forward secrecy and AEAD,
 * the "intermediate" list of Mozilla's guidelines without DHE), the server's order first; the
 * groups X25519, P-256, P-384; no renegotiation, no compression, no 0-RTT data; ALPN answers
 * what the listener's protocol speaks (h2 first when HTTP/2 is on, and http/1.1) and refuses a
 * client that offers only other protocols (RFC 7301 §3.2); SNI picks a certificate by host name; resumption by stateless session
 * tickets (RFC 5077, RFC 8446 §4.6.1) whose keys derive from a secret and the hour: each hour
 * has a key of its own and a ticket is taken for the hour it was made in and the next, so
 * every worker of a cluster that shares the secret takes every other's tickets, and a key stays
 * in use at most two hours. */

#include <stddef.h>
#include "core/transport.h"

/* Bytes of the secret session ticket keys derive from. */
#define UP_TLS_TICKET_SECRET_SIZE 32
/* Seconds a ticket key makes tickets: tickets made under the key of one such period are taken
 * until the end of the next. */
#define UP_TLS_TICKET_PERIOD_S 3600
/* Certificates picked by host name in one context. */
#define UP_TLS_MAX_HOSTS 256
/* A host name (SNI) longer than this matches no certificate (RFC 1035 §2.3.4: 255). */
#define UP_TLS_MAX_NAME 255

/* One certificate and its key, PEM files. */
typedef struct up_tls_cert_t {
    /* The host names it answers for, by SNI: "api.example.com", or "*.example.com" for one
     * label more (RFC 6125 §6.4.3); NULL for the context's default certificate. */
    const char *host;
    const char *cert_file; /* the certificate, then any chain certificates */
    const char *key_file;  /* its private key, encrypted or not */
    const char *ca_file;   /* more chain certificates, or NULL */
} up_tls_cert_t;

typedef struct up_tls_config_t {
    up_tls_cert_t cert;         /* the default: no SNI, or a name no host certificate has */
    const up_tls_cert_t *hosts; /* picked by SNI, first match first; num_hosts of them */
    size_t num_hosts;
    /* The passphrase of encrypted keys, or NULL: an encrypted key is then refused. */
    const char *key_password;
    unsigned char ticket_secret[UP_TLS_TICKET_SECRET_SIZE];
    /* Where the ACME client leaves TLS-ALPN-01 certificates (RFC 8737), "<name>.pem" each,
     * certificate then key; NULL answers no such challenge (tls_acme.c). */
    const char *acme_challenge_dir;
} up_tls_config_t;

typedef struct up_tls_context_t up_tls_context_t;

/* Loads every certificate and key of cfg (nothing of cfg is kept: the caller may free it).
 * Returns a context with one reference, the caller's, or NULL with a one-line message in err
 * that names the file and what is wrong with it ("cannot read /etc/up/key.pem: No such file",
 * "the key in FILE is encrypted and no passphrase was given", "the key in FILE does not match
 * the certificate in FILE"). Any thread; reads files. */
up_tls_context_t *up_tls_context_new(const up_tls_config_t *cfg, char *err, size_t err_size);
/* References; the last release frees the context, on whichever thread releases it.
 * Connections opened with a context hold a reference each until they close. Any thread. */
void up_tls_context_retain(up_tls_context_t *ctx);
void up_tls_context_release(up_tls_context_t *ctx);
/* The certificate (the subject's text, "CN = localhost") a name would get: the one SNI picks for
 * host, or the default for NULL. For tests and logs; the loop thread or before serving. */
int up_tls_context_subject(const up_tls_context_t *ctx, const char *host, char *out,
                           size_t out_size);

/* The TLS transport (transport.h): listeners of it have an up_tls_context_t as their context.
 * Its writes encrypt up to UP_TLS_WRITE_BATCH bytes into a buffer of ciphertext and send it,
 * taking no more plaintext until that buffer was sent; file ranges are read into memory and
 * encrypted (there is no kernel TLS here: see README, TLS). A connection that sends plain HTTP
 * where a handshake should begin gets a plain-text 400 and is closed. */
extern const up_transport_t up_transport_tls;

/* What a connection negotiated, for the env and logs: "TLSv1.3", "TLS_AES_128_GCM_SHA256",
 * the SNI host name ("" when none), and whether the session was resumed. Loop thread, or the
 * borrower of a lent exchange; conn must be a TLS connection past its handshake. */
const char *up_tls_conn_version(up_conn_t *conn);
const char *up_tls_conn_cipher(up_conn_t *conn);
const char *up_tls_conn_server_name(up_conn_t *conn);
int up_tls_conn_resumed(up_conn_t *conn);
/* Whether ALPN selected name ("h2") for the connection. */
int up_tls_conn_alpn_is(up_conn_t *conn, const char *name);

/* Plaintext a write encrypts before it sends: four records, their ciphertext within 64 KiB. */
#define UP_TLS_WRITE_BATCH (4 * 16384 - 1024)
/* Unsent ciphertext past which a connection stops reading (what a read makes it send, a
 * handshake or the answer to a key update, waits for the client to take what is queued), and
 * the most it may hold at all (past it the connection is broken off). */
#define UP_TLS_READ_HOLD (128 * 1024)
#define UP_TLS_MAX_UNSENT (1024 * 1024)

#endif
