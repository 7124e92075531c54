/* The plain TCP transport, and the socket calls around it (accept, listen). The only engine
 * file besides loop_epoll.c that talks to the kernel about sockets; Linux-only calls
 * (accept4, sendfile, TCP_DEFER_ACCEPT) have portable fallbacks here. */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/sendfile.h>
#endif
#include "core/conn.h"
#include "core/transport.h"

static int fd_of(const up_conn_t *conn)
{
    return conn->_watcher.fd;
}

/* What a failed call means once EINTR is ruled out. */
static ssize_t failure(void)
{
    return errno == EAGAIN || errno == EWOULDBLOCK ? UP_IO_AGAIN : UP_IO_ERROR;
}

static ssize_t tcp_read(up_conn_t *conn, void *buf, size_t len)
{
    for (;;) {
        ssize_t n = read(fd_of(conn), buf, len);
        if (n >= 0)
            return n;
        if (errno != EINTR)
            return failure();
    }
}

static ssize_t tcp_writev(up_conn_t *conn, const struct iovec *iov, int iovcnt)
{
    /* sendmsg rather than writev: MSG_NOSIGNAL, so a client that left costs an EPIPE and not
     * the process. */
    struct msghdr msg = {.msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt};
    for (;;) {
        ssize_t n = sendmsg(fd_of(conn), &msg, MSG_NOSIGNAL);
        if (n >= 0)
            return n;
        if (errno != EINTR)
            return failure();
    }
}

static ssize_t tcp_sendfile(up_conn_t *conn, int fd, off_t *offset, size_t len)
{
    for (;;) {
#ifdef __linux__
        ssize_t n = sendfile(fd_of(conn), fd, offset, len);
#else
        char buf[16384];
        ssize_t n = pread(fd, buf, len < sizeof(buf) ? len : sizeof(buf), *offset);
        if (n > 0) {
            struct iovec iov = {buf, (size_t)n};
            n = tcp_writev(conn, &iov, 1);
            if (n > 0)
                *offset += n;
            return n;
        }
#endif
        if (n >= 0)
            return n;
        if (errno != EINTR)
            return failure();
    }
}

static void tcp_shutdown(up_conn_t *conn)
{
    shutdown(fd_of(conn), SHUT_WR);
}

static void tcp_close(up_conn_t *conn)
{
    close(fd_of(conn));
}

static int tcp_detach(up_conn_t *conn)
{
    return fd_of(conn);
}

static unsigned tcp_events(up_conn_t *conn, unsigned wanted)
{
    (void)conn;
    return wanted;
}

/* TCP keeps no state, buffers nothing and has no handshake. */
static int tcp_open(up_conn_t *conn, void *ctx)
{
    (void)conn;
    (void)ctx;
    return 0;
}

static ssize_t tcp_flush(up_conn_t *conn)
{
    (void)conn;
    return 0;
}

static int tcp_nothing_pending(up_conn_t *conn)
{
    (void)conn;
    return 0;
}

static void tcp_no_context(void *ctx)
{
    (void)ctx;
}

const up_transport_t up_transport_tcp = {
    .name = "tcp",
    .scheme = "http",
    .secure = 0,
    .open = tcp_open,
    .read = tcp_read,
    .writev = tcp_writev,
    .sendfile = tcp_sendfile,
    .flush = tcp_flush,
    .pending = tcp_nothing_pending,
    .handshaking = tcp_nothing_pending,
    .shutdown = tcp_shutdown,
    .close = tcp_close,
    .detach = tcp_detach,
    .events = tcp_events,
    .retain_context = tcp_no_context,
    .release_context = tcp_no_context,
};

static int set_nonblock_cloexec(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0)
        return -1;
    return fcntl(fd, F_SETFD, FD_CLOEXEC);
}

int up_tcp_accept(int listen_fd, struct sockaddr *addr, socklen_t *addr_len)
{
    int fd;
    do {
#ifdef __linux__
        fd = accept4(listen_fd, addr, addr_len, SOCK_NONBLOCK | SOCK_CLOEXEC);
#else
        fd = accept(listen_fd, addr, addr_len);
        if (fd >= 0 && set_nonblock_cloexec(fd) != 0) {
            close(fd);
            fd = -1;
        }
#endif
    } while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return -1;
    if (addr->sa_family == AF_INET || addr->sa_family == AF_INET6) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    return fd;
}

int up_tcp_listen(const struct sockaddr *addr, socklen_t addr_len, int backlog)
{
    int fd = socket(addr->sa_family, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    if (set_nonblock_cloexec(fd) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        (addr->sa_family == AF_INET6 &&
         setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) != 0) ||
        bind(fd, addr, addr_len) != 0 || listen(fd, backlog) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

void up_tcp_defer_accept(int listen_fd)
{
#ifdef TCP_DEFER_ACCEPT
    int one = 1;
    setsockopt(listen_fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &one, sizeof(one));
#else
    (void)listen_fd;
#endif
}
