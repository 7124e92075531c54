#ifndef UP_TRANSPORT_H
#define UP_TRANSPORT_H

/* The transport seam: how a connection moves bytes through its socket. Connections call these
 * and never a socket function, so plain TCP (transport_tcp.c) and TLS (transport_tls.c) share
 * every line of the HTTP and WebSocket code (Redis's src/connection.h has the same seam). A
 * listener names the transport of the connections it accepts and hands each one its
 * context (a TLS listener: its certificates and settings, tls.h).
 *
 * Every operation runs on the loop thread, is non-blocking and returns bytes done (>= 0),
 * UP_IO_AGAIN when the socket cannot take or give anything now, or UP_IO_ERROR when the
 * connection is broken (errno says why); read returns 0 at the peer's end of stream. EINTR is
 * retried inside.
 *
 * What the connection (conn.c) promises a transport, and what it asks of one:
 *
 *  - A read never waits for the socket to become writable. Bytes a transport must send to go
 *    on reading (a TLS handshake flight, the answer to a key update) it keeps in a buffer of
 *    its own, and flush sends them: the connection flushes after every event, whatever the
 *    event was, and watches for writability while flush says bytes are left. A transport
 *    bounds that buffer itself, by turning the read off in events() while it is full.
 *  - A write may wait for input (a TLS write before its handshake finished): it returns
 *    UP_IO_AGAIN, and events() turns the wanted write into a wanted read. The connection tries
 *    its writes after every event, whatever the event was.
 *  - A transport may hold input the socket will not announce again (OpenSSL decrypts one
 *    record per read and keeps the next ones): pending says so, and the connection reads
 *    again, at once or at the end of the loop's wake-up, while it wants input and pending
 *    holds. pending must turn false once a read returned UP_IO_AGAIN, until the socket gave
 *    more: a transport that kept claiming input it cannot deliver would spin the loop.
 *  - writev and sendfile may keep what they accepted in their buffer; the connection counts
 *    those bytes as written (back-pressure stops at the transport's bound) and flushes them.
 *  - While handshaking holds, the connection runs its head timer (a client that never
 *    finishes its handshake is closed after the head timeout, without an answer). */

#include <stddef.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/uio.h>

#define UP_IO_AGAIN (-1)
#define UP_IO_ERROR (-2)

typedef struct up_conn_t up_conn_t;

typedef struct up_transport_t {
    const char *name;
    /* The URL scheme it serves ("http", "https": the env's rack.url_scheme, the default
     * port), and whether it is encrypted. */
    const char *scheme;
    int secure;
    /* A freshly accepted connection, conn->_watcher.fd set: makes the transport's state
     * (conn->transport_data) with ctx, the listener's context. Returns 0, or -1 when it
     * cannot (out of memory in a library): the caller closes the socket and logs. */
    int (*open)(up_conn_t *conn, void *ctx);
    ssize_t (*read)(up_conn_t *conn, void *buf, size_t len);
    ssize_t (*writev)(up_conn_t *conn, const struct iovec *iov, int iovcnt);
    /* Up to len bytes of the file fd from *offset, which advances. 0 means the file ended
     * early. A transport that cannot send from the kernel (TLS) reads and writes instead. */
    ssize_t (*sendfile)(up_conn_t *conn, int fd, off_t *offset, size_t len);
    /* Sends what the transport buffered. Returns 0 once nothing is left, UP_IO_AGAIN while
     * bytes are left (watch for writability), UP_IO_ERROR when the connection broke. */
    ssize_t (*flush)(up_conn_t *conn);
    /* Whether read can give bytes (or the end of stream) without the socket's help. */
    int (*pending)(up_conn_t *conn);
    /* Whether the connection is still being set up (a TLS handshake): no byte of the
     * protocol has come through yet. */
    int (*handshaking)(up_conn_t *conn);
    /* Ends the sending direction once what was written is sent (TCP: FIN; TLS: close_notify,
     * then FIN once flush has sent it), for a lingering close. */
    void (*shutdown)(up_conn_t *conn);
    /* Releases the transport's state and closes the socket. */
    void (*close)(up_conn_t *conn);
    /* Releases the transport's state and gives the socket up without closing it (a hijack,
     * conn.h): returns the fd, now the caller's. NULL for a transport whose socket cannot be
     * handed on alone (TLS: its session state would be lost). */
    int (*detach)(up_conn_t *conn);
    /* The loop events to watch, given those the connection wants (see above). */
    unsigned (*events)(up_conn_t *conn, unsigned wanted);
    /* NULL but for a transport with no socket of its own (a carried connection, conn.h): the
     * events the connection wants are told to it instead of the loop, and it brings them about
     * (up_conn_loop_defer_update when input came or output can go on). */
    void (*watch)(up_conn_t *conn, unsigned events);
    /* A listener's reference to a context of this transport, taken and dropped (server/server.c);
     * any thread. */
    void (*retain_context)(void *ctx);
    void (*release_context)(void *ctx);
} up_transport_t;

/* Plain TCP (transport_tcp.c): no state, no context. */
extern const up_transport_t up_transport_tcp;

/* Accepts one connection from a listening socket as a non-blocking, close-on-exec socket with
 * Nagle off (the engine batches its own writes). Returns the fd, or -1 with errno set (EAGAIN
 * when none is waiting). */
int up_tcp_accept(int listen_fd, struct sockaddr *addr, socklen_t *addr_len);
/* A non-blocking listening socket bound to addr (IPv6 sockets are IPv6-only, so "localhost"
 * can bind both families on one port). Returns the fd, or -1 with errno set. */
int up_tcp_listen(const struct sockaddr *addr, socklen_t addr_len, int backlog);
/* Asks the kernel to wake a listener only once a client has sent data (a hint; ignored where
 * unsupported). */
void up_tcp_defer_accept(int listen_fd);

#endif
