/* TLS-ALPN-01, the ACME challenge answered in the TLS handshake (RFC 8737): a client that
 * offers the acme-tls/1 protocol alone gets, instead of the served certificate, the challenge
 * certificate the ACME client left for the name it asked for (SNI), and acme-tls/1 as the
 * protocol. The certificates are files, "<dir>/<name>.pem" (the certificate, then its key),
 * read during that handshake only, so every worker answers as soon as the file is there. A
 * name without a file fails the handshake, as RFC 8737 §3 has a server without the
 * challenge do. See tls_internal.h for the hooks tls_context.c calls. */

#include <limits.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "transport/tls_internal.h"

/* RFC 8737 §6.2, as ALPN writes it (RFC 7301 §3.1: length-prefixed). */
static const unsigned char acme_alpn[] = "\012acme-tls/1";

/* The mark a challenge handshake carries from the client hello to the certificate and ALPN
 * callbacks: one ex_data index for the process, made at the first context with a directory. */
static pthread_once_t index_once = PTHREAD_ONCE_INIT;
static int challenge_index = -1;

static void make_index(void)
{
    challenge_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
}

int up_tls_acme_init(void)
{
    pthread_once(&index_once, make_index);
    return challenge_index >= 0 ? 0 : -1;
}

/* Whether a client hello's ALPN list is acme-tls/1 and nothing else. */
static int offers_only_acme(SSL *ssl)
{
    const unsigned char *ext;
    size_t len;
    if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_application_layer_protocol_negotiation, &ext,
                                  &len) != 1)
        return 0;
    size_t list = sizeof(acme_alpn) - 1;
    return len == 2 + list && ext[0] == 0 && ext[1] == list &&
           memcmp(ext + 2, acme_alpn, list) == 0;
}

int up_tls_acme_on_client_hello(SSL *ssl, int *alert, void *arg)
{
    (void)alert;
    (void)arg;
    if (challenge_index >= 0 && offers_only_acme(ssl))
        SSL_set_ex_data(ssl, challenge_index, (void *)acme_alpn);
    return SSL_CLIENT_HELLO_SUCCESS;
}

int up_tls_acme_challenge(SSL *ssl)
{
    return challenge_index >= 0 && SSL_get_ex_data(ssl, challenge_index) != NULL;
}

void up_tls_acme_protocol(const unsigned char **out, unsigned char *out_len)
{
    *out = acme_alpn + 1;
    *out_len = (unsigned char)(sizeof(acme_alpn) - 2);
}

/* A host name safe in a file name: letters, digits, '-' and '.', not starting with '.'. */
static int file_name_ok(const char *name)
{
    size_t n = name != NULL ? strlen(name) : 0;
    if (n == 0 || n > UP_TLS_MAX_NAME || name[0] == '.')
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '.'))
            return 0;
    }
    return 1;
}

int up_tls_acme_on_cert(SSL *ssl, void *arg)
{
    const up_tls_context_t *ctx = arg;
    if (!up_tls_acme_challenge(ssl))
        return 1;
    const char *name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    char path[PATH_MAX];
    if (ctx->acme_dir == NULL || !file_name_ok(name))
        return 0;
    int n = snprintf(path, sizeof(path), "%s/%s.pem", ctx->acme_dir, name);
    if (n < 0 || (size_t)n >= sizeof(path))
        return 0;
    BIO *bio = BIO_new_file(path, "r");
    X509 *cert = bio != NULL ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;
    EVP_PKEY *key = cert != NULL ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
    int ok = key != NULL && SSL_use_cert_and_key(ssl, cert, key, NULL, 1) == 1;
    EVP_PKEY_free(key);
    X509_free(cert);
    BIO_free(bio);
    ERR_clear_error();
    return ok;
}
