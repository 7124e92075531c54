/* The TLS transport (transport.h, tls.h): OpenSSL over a connection's socket through a BIO of
 * our own, which reads the socket directly and writes into a buffer of ciphertext that flush
 * sends. So a read never waits for the socket to be writable (the handshake flight it makes
 * waits in the buffer), a write encrypts a batch of plaintext and sends it in one call, and
 * the connection learns what to watch from events(). The handshake is driven by the first read
 * or write. */

#include <errno.h>
#include <openssl/err.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "base/memory.h"
#include "core/conn.h"
#include "transport/tls_internal.h"

/* The plaintext OpenSSL puts in one record (RFC 8446 §5.1), and what a record adds to it at
 * most with our ciphers (header, tag, content type byte). */
#define RECORD_SIZE 16384
#define RECORD_OVERHEAD 64

/* The answer to plain HTTP on a TLS port: in plain text, as it is all the client can read. */
static const char plain_http_answer[] = "HTTP/1.1 400 Bad Request\r\n"
                                        "content-type: text/plain\r\n"
                                        "content-length: 33\r\n"
                                        "connection: close\r\n"
                                        "\r\n"
                                        "This port speaks HTTPS, not HTTP\n";

typedef struct tls_conn_t {
    SSL *ssl;
    up_tls_context_t *ctx; /* a reference, for the BIO method and the ticket keys */
    up_buffer_t out;       /* ciphertext, sent up to out_pos */
    size_t out_pos;
    unsigned char first[4]; /* the first bytes the client sent: plain HTTP? */
    unsigned first_len : 3;
    unsigned handshaken : 1;
    unsigned read_blocked : 1; /* the last read needed the socket: nothing pending until it
                                * gives more (transport.h) */
    unsigned shut : 1;         /* close_notify queued: end the TCP stream once it is sent */
    unsigned shut_sent : 1;
    unsigned failed : 1; /* a fatal error: OpenSSL forbids SSL_shutdown after one */
} tls_conn_t;

static tls_conn_t *tls_of(up_conn_t *conn)
{
    return conn->transport_data;
}

static size_t unsent(const tls_conn_t *t)
{
    return t->out.len - t->out_pos;
}

/* ---------------------------------------------------------------- the BIO */

int up_tls_bio_write(BIO *bio, const char *data, int len)
{
    up_conn_t *conn = BIO_get_data(bio);
    tls_conn_t *t = tls_of(conn);
    BIO_clear_retry_flags(bio);
    if (len <= 0)
        return 0;
    if (unsent(t) + (size_t)len > UP_TLS_MAX_UNSENT) {
        errno = ENOBUFS; /* a client that makes us answer and never reads */
        return -1;
    }
    up_buffer_append(&t->out, &conn->server->pool, data, (size_t)len);
    return len;
}

int up_tls_bio_read(BIO *bio, char *buf, int len)
{
    up_conn_t *conn = BIO_get_data(bio);
    tls_conn_t *t = tls_of(conn);
    BIO_clear_retry_flags(bio);
    if (len <= 0)
        return 0;
    for (;;) {
        ssize_t n = read(conn->_watcher.fd, buf, (size_t)len);
        if (n > 0) {
            for (ssize_t i = 0; i < n && t->first_len < sizeof(t->first); i++)
                t->first[t->first_len++] = (unsigned char)buf[i];
            return (int)n;
        }
        if (n == 0)
            return 0;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            BIO_set_retry_read(bio);
        return -1;
    }
}

/* ---------------------------------------------------------------- sending */

/* Sends the buffered ciphertext. Returns 0 once all of it went, UP_IO_AGAIN or UP_IO_ERROR. */
static ssize_t send_out(up_conn_t *conn, tls_conn_t *t)
{
    while (unsent(t) > 0) {
        ssize_t n = send(conn->_watcher.fd, t->out.base + t->out_pos, unsent(t), MSG_NOSIGNAL);
        if (n > 0) {
            t->out_pos += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? UP_IO_AGAIN : UP_IO_ERROR;
    }
    /* Sent: an idle connection holds no buffer. */
    up_buffer_release(&t->out, &conn->server->pool);
    t->out_pos = 0;
    return 0;
}

/* A client that spoke plain HTTP where its TLS hello belonged (an upper-case method's first
 * letters) gets a 400 it can read, instead of a TLS alert it cannot. */
static void answer_plain_http(up_conn_t *conn, tls_conn_t *t)
{
    if (t->first_len < 4 || t->first[0] < 'A' || t->first[0] > 'Z')
        return;
    for (unsigned i = 1; i < t->first_len; i++) {
        if ((t->first[i] < 'A' || t->first[i] > 'Z') && t->first[i] != ' ')
            return;
    }
    t->out.len = t->out_pos = 0; /* an alert OpenSSL may have queued */
    up_buffer_append(&t->out, &conn->server->pool, plain_http_answer,
                     sizeof(plain_http_answer) - 1);
    send_out(conn, t);
}

/* What an OpenSSL call that did not succeed means for the connection (a fatal error is
 * remembered: no close_notify follows it). */
static ssize_t failure(tls_conn_t *t, int ret)
{
    int error = SSL_get_error(t->ssl, ret);
    if (error == SSL_ERROR_SYSCALL || error == SSL_ERROR_SSL)
        t->failed = 1;
    switch (error) {
    case SSL_ERROR_WANT_READ:
        t->read_blocked = 1;
        return UP_IO_AGAIN;
    case SSL_ERROR_WANT_WRITE: /* our BIO takes every write: not expected, harmless */
        return UP_IO_AGAIN;
    case SSL_ERROR_ZERO_RETURN:
        return 0; /* close_notify, or the end of the stream (SSL_OP_IGNORE_UNEXPECTED_EOF) */
    case SSL_ERROR_SYSCALL:
        if (errno == 0)
            errno = EPIPE;
        return UP_IO_ERROR;
    default:
        errno = EPROTO;
        return UP_IO_ERROR;
    }
}

/* Drives the handshake. Returns 0 once it is done, else what failure says; a failed handshake
 * sends what it has for the client (its alert) before the connection closes. */
static ssize_t handshake(up_conn_t *conn, tls_conn_t *t)
{
    ERR_clear_error();
    int r = SSL_do_handshake(t->ssl);
    if (r == 1) {
        t->handshaken = 1;
        t->read_blocked = 0;
        return 0;
    }
    ssize_t f = failure(t, r);
    if (f == UP_IO_AGAIN)
        return f;
    answer_plain_http(conn, t);
    send_out(conn, t);
    ERR_clear_error();
    return f == 0 ? UP_IO_ERROR : f; /* the client left during its handshake */
}

/* Encrypts len bytes into the buffer. Returns 0, or UP_IO_ERROR. */
static int seal(tls_conn_t *t, const void *data, size_t len)
{
    size_t done = 0;
    ERR_clear_error();
    if (SSL_write_ex(t->ssl, data, len, &done) != 1 || done != len) {
        failure(t, 0);
        ERR_clear_error();
        errno = EPROTO;
        return UP_IO_ERROR;
    }
    return 0;
}

/* Whether a write may encrypt now: the buffer sent, the handshake done. Returns 0 when it may,
 * else UP_IO_AGAIN or UP_IO_ERROR. */
static ssize_t ready_to_write(up_conn_t *conn, tls_conn_t *t)
{
    ssize_t r = send_out(conn, t);
    if (r == 0 && !t->handshaken)
        r = handshake(conn, t);
    if (r == 0 && t->shut) {
        errno = EPIPE; /* nothing follows a close_notify */
        r = UP_IO_ERROR;
    }
    return r;
}

/* Room for len bytes of plaintext as ciphertext, so a batch costs one allocation at most. */
static void reserve_for(up_conn_t *conn, tls_conn_t *t, size_t len)
{
    size_t records = (len + RECORD_SIZE - 1) / RECORD_SIZE;
    up_buffer_reserve(&t->out, &conn->server->pool, len + records * RECORD_OVERHEAD);
}

/* ---------------------------------------------------------------- the transport */

static int tls_open(up_conn_t *conn, void *ctx_arg)
{
    up_tls_context_t *ctx = ctx_arg;
    tls_conn_t *t = up_calloc(1, sizeof(*t));
    t->ssl = SSL_new(ctx->ssl_ctx);
    BIO *bio = t->ssl != NULL ? BIO_new(ctx->bio_method) : NULL;
    if (bio == NULL) {
        SSL_free(t->ssl);
        free(t);
        ERR_clear_error();
        return -1;
    }
    BIO_set_data(bio, conn);
    BIO_set_init(bio, 1);
    SSL_set_bio(t->ssl, bio, bio); /* one reference, for both directions */
    SSL_set_accept_state(t->ssl);
    up_tls_context_retain(ctx);
    t->ctx = ctx;
    conn->transport_data = t;
    return 0;
}

static ssize_t tls_read(up_conn_t *conn, void *buf, size_t len)
{
    tls_conn_t *t = tls_of(conn);
    if (!t->handshaken) {
        ssize_t r = handshake(conn, t);
        if (r != 0)
            return r;
    }
    size_t n = 0;
    ERR_clear_error();
    if (SSL_read_ex(t->ssl, buf, len, &n) == 1) {
        t->read_blocked = 0;
        return (ssize_t)n;
    }
    ssize_t r = failure(t, 0);
    ERR_clear_error();
    return r;
}

/* Small parts (a head, a short body) are gathered into records of their own, larger ones are
 * encrypted where they lie: a response of two iovecs is one record and one send. */
static ssize_t tls_writev(up_conn_t *conn, const struct iovec *iov, int iovcnt)
{
    tls_conn_t *t = tls_of(conn);
    ssize_t r = ready_to_write(conn, t);
    if (r != 0)
        return r;
    size_t total = 0;
    for (int i = 0; i < iovcnt && total < UP_TLS_WRITE_BATCH; i++)
        total += iov[i].iov_len < UP_TLS_WRITE_BATCH ? iov[i].iov_len : UP_TLS_WRITE_BATCH;
    if (total > UP_TLS_WRITE_BATCH)
        total = UP_TLS_WRITE_BATCH;
    reserve_for(conn, t, total);
    char staging[RECORD_SIZE];
    size_t staged = 0, taken = 0;
    for (int i = 0; i < iovcnt && taken + staged < total; i++) {
        const char *p = iov[i].iov_base;
        size_t len = iov[i].iov_len;
        if (len > total - taken - staged)
            len = total - taken - staged;
        while (len > 0) {
            if (staged == 0 && len >= RECORD_SIZE) {
                if (seal(t, p, len) != 0)
                    return UP_IO_ERROR;
                taken += len;
                break;
            }
            size_t n = len < RECORD_SIZE - staged ? len : RECORD_SIZE - staged;
            memcpy(staging + staged, p, n);
            staged += n;
            p += n;
            len -= n;
            if (staged == RECORD_SIZE) {
                if (seal(t, staging, staged) != 0)
                    return UP_IO_ERROR;
                taken += staged;
                staged = 0;
            }
        }
    }
    if (staged > 0) {
        if (seal(t, staging, staged) != 0)
            return UP_IO_ERROR;
        taken += staged;
    }
    /* What the socket does not take now waits for flush (the connection calls it). */
    if (send_out(conn, t) == UP_IO_ERROR)
        return UP_IO_ERROR;
    return (ssize_t)taken;
}

/* No kernel TLS here (tls.h): the file is read a record at a time and encrypted. */
static ssize_t tls_sendfile(up_conn_t *conn, int fd, off_t *offset, size_t len)
{
    tls_conn_t *t = tls_of(conn);
    ssize_t r = ready_to_write(conn, t);
    if (r != 0)
        return r;
    size_t want = len < UP_TLS_WRITE_BATCH ? len : UP_TLS_WRITE_BATCH, done = 0;
    reserve_for(conn, t, want);
    char buf[RECORD_SIZE];
    while (done < want) {
        size_t n = want - done < sizeof(buf) ? want - done : sizeof(buf);
        ssize_t got = pread(fd, buf, n, *offset);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return UP_IO_ERROR;
        if (got == 0)
            break; /* the file ended early: the caller fails the connection if nothing came */
        if (seal(t, buf, (size_t)got) != 0)
            return UP_IO_ERROR;
        *offset += got;
        done += (size_t)got;
    }
    if (send_out(conn, t) == UP_IO_ERROR)
        return UP_IO_ERROR;
    return (ssize_t)done;
}

static ssize_t tls_flush(up_conn_t *conn)
{
    tls_conn_t *t = tls_of(conn);
    ssize_t r = send_out(conn, t);
    if (r == 0 && t->shut && !t->shut_sent) {
        shutdown(conn->_watcher.fd, SHUT_WR);
        t->shut_sent = 1;
    }
    return r;
}

static int tls_pending(up_conn_t *conn)
{
    tls_conn_t *t = tls_of(conn);
    return t->handshaken &&
           (SSL_pending(t->ssl) > 0 || (!t->read_blocked && SSL_has_pending(t->ssl)));
}

static int tls_handshaking(up_conn_t *conn)
{
    return !tls_of(conn)->handshaken;
}

/* close_notify (RFC 8446 §6.1) goes into the buffer; flush ends the TCP stream after it. */
static void tls_shutdown(up_conn_t *conn)
{
    tls_conn_t *t = tls_of(conn);
    if (t->handshaken && !t->shut && !t->failed) {
        ERR_clear_error();
        SSL_shutdown(t->ssl);
        ERR_clear_error();
    }
    t->shut = 1;
}

/* A session closed without a lingering close (an idle keep-alive timed out; the client's own
 * close_notify or end of stream, answered) still says close_notify first (RFC 8446 §6.1: it
 * MUST, before closing its write side), else a client cannot tell the close from a truncation:
 * one try to send it, as the socket closes right after. */
static void tls_close(up_conn_t *conn)
{
    tls_conn_t *t = tls_of(conn);
    if (!t->shut) {
        tls_shutdown(conn);
        send_out(conn, t);
    }
    SSL_free(t->ssl);
    up_buffer_release(&t->out, &conn->server->pool);
    up_tls_context_release(t->ctx);
    free(t);
    conn->transport_data = NULL;
    close(conn->_watcher.fd);
}

/* Writes wait for a handshake, which waits for input; reads wait while the buffer is full. */
static unsigned tls_events(up_conn_t *conn, unsigned wanted)
{
    tls_conn_t *t = tls_of(conn);
    unsigned events = wanted;
    if (unsent(t) > 0)
        events |= UP_EV_WRITE;
    else if (!t->handshaken && (wanted & UP_EV_WRITE))
        events = (events & ~UP_EV_WRITE) | UP_EV_READ;
    if (unsent(t) >= UP_TLS_READ_HOLD)
        events &= ~UP_EV_READ;
    return events;
}

static void tls_retain_context(void *ctx)
{
    up_tls_context_retain(ctx);
}

static void tls_release_context(void *ctx)
{
    up_tls_context_release(ctx);
}

const up_transport_t up_transport_tls = {
    .name = "tls",
    .scheme = "https",
    .secure = 1,
    .open = tls_open,
    .read = tls_read,
    .writev = tls_writev,
    .sendfile = tls_sendfile,
    .flush = tls_flush,
    .pending = tls_pending,
    .handshaking = tls_handshaking,
    .shutdown = tls_shutdown,
    .close = tls_close,
    .events = tls_events,
    .retain_context = tls_retain_context,
    .release_context = tls_release_context,
};

/* ---------------------------------------------------------------- what was negotiated */

const char *up_tls_conn_version(up_conn_t *conn)
{
    return SSL_get_version(tls_of(conn)->ssl);
}

int up_tls_conn_alpn_is(up_conn_t *conn, const char *name)
{
    const unsigned char *data;
    unsigned len;
    SSL_get0_alpn_selected(tls_of(conn)->ssl, &data, &len);
    return len == strlen(name) && memcmp(data, name, len) == 0;
}

const char *up_tls_conn_cipher(up_conn_t *conn)
{
    return SSL_get_cipher_name(tls_of(conn)->ssl);
}

const char *up_tls_conn_server_name(up_conn_t *conn)
{
    const char *name = SSL_get_servername(tls_of(conn)->ssl, TLSEXT_NAMETYPE_host_name);
    return name != NULL ? name : "";
}

int up_tls_conn_resumed(up_conn_t *conn)
{
    return SSL_session_reused(tls_of(conn)->ssl);
}
