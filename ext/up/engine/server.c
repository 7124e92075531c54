/* Listening sockets, accepting, the once-a-second tick (timeouts and the Date header), the
 * hand-back of connections from app threads, and graceful stop. */

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "conn.h"
#include "memory.h"
#include "server.h"

/* Connections accepted per readiness event, so a burst of connects cannot starve the
 * requests of connections already open. */
#define ACCEPTS_PER_EVENT 64
#define LISTEN_BACKLOG 1024

void up_server_config_defaults(up_server_config_t *cfg)
{
    cfg->max_head_size = UP_DEFAULT_MAX_HEAD_SIZE;
    cfg->max_headers = UP_DEFAULT_MAX_HEADERS;
    cfg->max_body_size = UP_DEFAULT_MAX_BODY_SIZE;
    cfg->spool_threshold = UP_DEFAULT_SPOOL_THRESHOLD;
    cfg->head_timeout_ms = UP_DEFAULT_HEAD_TIMEOUT_MS;
    cfg->body_timeout_ms = UP_DEFAULT_BODY_TIMEOUT_MS;
    cfg->keepalive_timeout_ms = UP_DEFAULT_KEEPALIVE_TIMEOUT_MS;
    cfg->write_timeout_ms = UP_DEFAULT_WRITE_TIMEOUT_MS;
    cfg->max_pipeline = UP_DEFAULT_MAX_PIPELINE;
    cfg->tmp_dir = "/tmp";
}

static void log_line(up_server_t *server, const char *message)
{
    if (server->handler.on_log != NULL)
        server->handler.on_log(message, server->handler.user);
}

static void pause_accepting(up_server_t *server)
{
    for (up_listener_t *l = server->listeners; l != NULL; l = l->next)
        up_loop_watch(server->loop, &l->watcher, 0);
    server->accept_paused = 1;
}

static void resume_accepting(up_server_t *server)
{
    for (up_listener_t *l = server->listeners; l != NULL; l = l->next)
        up_loop_watch(server->loop, &l->watcher, UP_EV_READ);
    server->accept_paused = 0;
}

static void expire(up_server_t *server, up_timer_list_t *list, uint64_t now)
{
    up_timer_t *t;
    while ((t = up_timer_list_expired(list, now)) != NULL) {
        up_conn_t *conn = (up_conn_t *)((char *)t - offsetof(up_conn_t, _timer));
        up_conn_on_timeout(conn);
    }
}

static void server_on_tick(void *data)
{
    up_server_t *server = data;
    uint64_t now = up_loop_now(server->loop);
    up_date_refresh(&server->date);
    if (server->accept_paused && !server->stopping)
        resume_accepting(server);
    expire(server, &server->keepalive_timers, now);
    expire(server, &server->head_timers, now);
    expire(server, &server->body_timers, now);
    expire(server, &server->write_timers, now);
    expire(server, &server->linger_timers, now);
}

static void server_on_wake(void *data)
{
    up_server_t *server = data;
    pthread_mutex_lock(&server->resume_lock);
    up_conn_t *list = server->resume_head;
    server->resume_head = NULL;
    pthread_mutex_unlock(&server->resume_lock);
    /* The list was built newest first; answer in hand-back order for fairness. */
    up_conn_t *ordered = NULL;
    while (list != NULL) {
        up_conn_t *next = list->_resume_next;
        list->_resume_next = ordered;
        ordered = list;
        list = next;
    }
    while (ordered != NULL) {
        up_conn_t *next = ordered->_resume_next;
        ordered->_resume_next = NULL;
        up_conn_on_resume(ordered);
        ordered = next;
    }
}

void up_conn_resume(up_conn_t *conn)
{
    up_server_t *server = conn->server;
    pthread_mutex_lock(&server->resume_lock);
    int first = server->resume_head == NULL;
    conn->_resume_next = server->resume_head;
    server->resume_head = conn;
    pthread_mutex_unlock(&server->resume_lock);
    /* One wake-up per batch: the loop takes the whole list when it wakes, and a list that is
     * not empty already has a wake-up on its way. */
    if (first)
        up_loop_wake(server->loop);
}

up_server_t *up_server_new(up_loop_t *loop, const up_server_config_t *cfg,
                           const up_server_handler_t *handler)
{
    up_server_t *server = up_calloc(1, sizeof(*server));
    server->loop = loop;
    server->config = *cfg;
    server->handler = *handler;
    up_buffer_pool_init(&server->pool);
    up_date_init(&server->date);
    up_timer_list_init(&server->keepalive_timers, cfg->keepalive_timeout_ms);
    up_timer_list_init(&server->head_timers, cfg->head_timeout_ms);
    up_timer_list_init(&server->body_timers, cfg->body_timeout_ms);
    up_timer_list_init(&server->write_timers, cfg->write_timeout_ms);
    up_timer_list_init(&server->linger_timers, UP_LINGER_TIMEOUT_MS);
    pthread_mutex_init(&server->resume_lock, NULL);
    up_loop_set_tick(loop, 1000, server_on_tick, server);
    up_loop_set_wake(loop, server_on_wake, server);
    return server;
}

static void close_listeners(up_server_t *server)
{
    while (server->listeners != NULL) {
        up_listener_t *l = server->listeners;
        server->listeners = l->next;
        up_loop_unwatch(server->loop, &l->watcher);
        close(l->watcher.fd);
        free(l);
    }
}

void up_server_free(up_server_t *server)
{
    close_listeners(server);
    up_server_close_all(server);
    up_loop_set_tick(server->loop, 1000, NULL, NULL);
    up_loop_set_wake(server->loop, NULL, NULL);
    up_buffer_pool_dispose(&server->pool);
    pthread_mutex_destroy(&server->resume_lock);
    free(server);
}

/* ---------------------------------------------------------------- accepting */

static void listener_on_read(up_watcher_t *w, unsigned revents)
{
    up_listener_t *l = (up_listener_t *)w;
    (void)revents;
    for (int i = 0; i < ACCEPTS_PER_EVENT; i++) {
        struct sockaddr_storage addr;
        socklen_t addr_len = sizeof(addr);
        int fd = accept4(w->fd, (struct sockaddr *)&addr, &addr_len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                /* Out of file descriptors (EMFILE) and the like: the listener stays readable,
                 * so watching it would spin the loop. Pause accepting until the next tick. */
                char msg[128];
                snprintf(msg, sizeof(msg), "accept failed: %s; pausing accepts for a second",
                         strerror(errno));
                log_line(l->server, msg);
                pause_accepting(l->server);
            }
            return;
        }
        up_conn_accept(l->server, l, fd, (struct sockaddr *)&addr);
    }
}

void up_format_address(const struct sockaddr *addr, char *host, size_t host_size,
                       unsigned *port, int bracket_ipv6)
{
    char ip[INET6_ADDRSTRLEN] = "";
    *port = 0;
    if (addr != NULL && addr->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)addr;
        inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
        *port = ntohs(in->sin_port);
    } else if (addr != NULL && addr->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)addr;
        inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
        *port = ntohs(in6->sin6_port);
    }
    if (bracket_ipv6 && strchr(ip, ':') != NULL)
        snprintf(host, host_size, "[%s]", ip);
    else
        snprintf(host, host_size, "%s", ip);
}

static void describe_address(up_listener_t *l, int fd)
{
    struct sockaddr_storage addr;
    socklen_t len = sizeof(addr);
    unsigned port = 0;
    l->host[0] = '\0';
    if (getsockname(fd, (struct sockaddr *)&addr, &len) == 0)
        up_format_address((struct sockaddr *)&addr, l->host, sizeof(l->host), &port, 1);
    if (l->host[0] == '\0')
        snprintf(l->host, sizeof(l->host), "localhost");
    snprintf(l->port, sizeof(l->port), "%u", port);
}

int up_server_adopt_listener(up_server_t *server, int fd, const char **err)
{
    up_listener_t *l = up_calloc(1, sizeof(*l));
    int one = 1;
    /* Wake us only when the first request bytes are in: one less trip through the loop. */
    setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &one, sizeof(one));
    l->watcher.fd = fd;
    l->watcher.cb = listener_on_read;
    l->server = server;
    describe_address(l, fd);
    if (up_loop_watch(server->loop, &l->watcher, UP_EV_READ) != 0) {
        *err = strerror(errno);
        free(l);
        return -1;
    }
    l->next = server->listeners;
    server->listeners = l;
    return 0;
}

static int bind_one(const struct addrinfo *ai, const char **err)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
        *err = strerror(errno);
        return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (ai->ai_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, LISTEN_BACKLOG) != 0) {
        int saved = errno;
        *err = strerror(saved);
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int up_server_listen(up_server_t *server, const char *host, const char *port, const char **err)
{
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int gai = getaddrinfo(host, port, &hints, &res);
    if (gai != 0) {
        *err = gai_strerror(gai);
        return -1;
    }
    int bound = 0;
    for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
        const char *one_err = NULL;
        int fd = bind_one(ai, &one_err);
        if (fd < 0) {
            /* "localhost" may name ::1 on a host without IPv6: one address is enough, but a
             * port in use is an error whatever else bound. */
            if (errno == EADDRINUSE) {
                *err = one_err;
                freeaddrinfo(res);
                return -1;
            }
            *err = one_err;
            continue;
        }
        if (up_server_adopt_listener(server, fd, err) != 0) {
            close(fd);
            freeaddrinfo(res);
            return -1;
        }
        bound++;
    }
    freeaddrinfo(res);
    return bound > 0 ? 0 : -1;
}

/* ---------------------------------------------------------------- stopping */

void up_server_stop(up_server_t *server)
{
    server->stopping = 1;
    close_listeners(server);
    up_conn_t *conn = server->conns;
    while (conn != NULL) {
        up_conn_t *next = conn->_next;
        up_conn_stop(conn);
        conn = next;
    }
}

size_t up_server_num_conns(const up_server_t *server)
{
    return server->num_conns;
}

void up_server_close_all(up_server_t *server)
{
    up_conn_t *conn = server->conns;
    while (conn != NULL) {
        up_conn_t *next = conn->_next;
        if (conn->_state == UP_CONN_APP)
            conn->_force_close = 1;
        else
            up_conn_close(conn);
        conn = next;
    }
}
