#ifndef UP_TRANSPORT_H
#define UP_TRANSPORT_H

/* The transport seam: how a connection moves bytes through its socket. Connections call these
 * and never a socket function, so plain TCP (transport_tcp.c) and TLS share every line of the
 * HTTP and WebSocket code (STYLE.md, C rule 7; redis src/connection.h is the model).
 *
 * Every operation is non-blocking and returns bytes done (>= 0), UP_IO_AGAIN when the socket
 * cannot take or give anything now, or UP_IO_ERROR when the connection is broken (errno says
 * why); read returns 0 at the peer's end of stream. EINTR is retried inside. */

#include <stddef.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/uio.h>

#define UP_IO_AGAIN (-1)
#define UP_IO_ERROR (-2)

typedef struct up_conn_t up_conn_t;

typedef struct up_transport_t {
    const char *name;
    ssize_t (*read)(up_conn_t *conn, void *buf, size_t len);
    ssize_t (*writev)(up_conn_t *conn, const struct iovec *iov, int iovcnt);
    /* Up to len bytes of the file fd from *offset, which advances. 0 means the file ended
     * early. A transport that cannot send from the kernel (TLS) reads and writes instead. */
    ssize_t (*sendfile)(up_conn_t *conn, int fd, off_t *offset, size_t len);
    /* Ends the sending direction once what was written is sent (TCP: FIN; TLS: close_notify),
     * for a lingering close. */
    void (*shutdown)(up_conn_t *conn);
    /* Releases the transport's state and closes the socket. */
    void (*close)(up_conn_t *conn);
    /* Releases the transport's state and gives the socket up without closing it (a hijack,
     * conn.h): returns the fd, now the caller's. NULL for a transport whose socket cannot be
     * handed on alone (TLS: its session state would be lost). */
    int (*detach)(up_conn_t *conn);
    /* The loop events to watch, given those the connection wants: a transport in the middle of
     * a handshake may need to read while the connection only wants to write. */
    unsigned (*events)(up_conn_t *conn, unsigned wanted);
} up_transport_t;

/* Plain TCP (transport_tcp.c). */
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
