/* Listening sockets, accepting, the once-a-second tick (timeouts and the Date header), the
 * wake-up that takes what other threads handed to connections, and graceful stop. */

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base/memory.h"
#include "core/conn.h"
#include "http1/http1.h"
#include "server/server.h"

/* Connections accepted per readiness event, so a burst of connects cannot starve the
 * requests of connections already open. */
#define ACCEPTS_PER_EVENT 64
#define LISTEN_BACKLOG 1024

static void log_line(up_context_t *server, const char *message)
{
    if (server->handler.on_log != NULL)
        server->handler.on_log(message, server->handler.user);
}

/* Watches the listeners when the server may accept, and not otherwise. A listener the loop
 * would not watch (or stop watching) is logged and tried again at the next tick, through
 * accept_paused: left as it was, it would go on accepting, or stay deaf, until a restart. */
static void update_accepting(up_context_t *server)
{
    unsigned events = server->stopping || server->accept_paused || server->accept_held
                          ? 0
                          : UP_EV_READ | (server->config.exclusive_accept ? UP_EV_EXCLUSIVE : 0);
    for (up_listener_t *l = server->listeners; l != NULL; l = l->next) {
        if (up_loop_watch(server->loop, &l->watcher, events) == 0)
            continue;
        char msg[160];
        snprintf(msg, sizeof(msg), "cannot %s the listener on %s:%s: %s; trying again in a second",
                 events != 0 ? "watch" : "pause", l->host, l->port, strerror(errno));
        log_line(server, msg);
        server->accept_paused = 1;
    }
}

void up_server_hold_accept(up_context_t *server, int hold)
{
    if (server->accept_held == hold)
        return;
    server->accept_held = hold;
    update_accepting(server);
}

static void expire(up_timer_list_t *list, uint64_t now)
{
    up_timer_t *t;
    while ((t = up_timer_list_expired(list, now)) != NULL) {
        up_conn_t *conn = (up_conn_t *)((char *)t - offsetof(up_conn_t, _timer));
        up_conn_loop_on_timeout(conn);
    }
}

static void server_on_tick(void *data)
{
    up_context_t *server = data;
    uint64_t now = up_loop_now(server->loop);
    up_date_refresh(&server->date);
    if (server->accept_paused) {
        server->accept_paused = 0;
        update_accepting(server);
    }
    for (int kind = UP_TIMER_NONE + 1; kind < UP_TIMER__FIXED; kind++)
        expire(&server->timers[kind], now);
    for (int i = 0; i < server->num_idle_timers; i++)
        expire(&server->idle_timers[i], now);
}

/* The tasks handed so far, oldest first. */
static void run_tasks(up_context_t *server)
{
    up_task_t *list = atomic_exchange(&server->task_head, NULL), *fifo = NULL;
    while (list != NULL) {
        up_task_t *next = list->_next;
        list->_next = fifo;
        fifo = list;
        list = next;
    }
    while (fifo != NULL) {
        up_task_t *task = fifo;
        fifo = task->_next;
        task->run(server, task);
    }
}

/* Other threads' tasks and mail; then each connection they wrote to is written once. */
static void server_on_wake(void *data)
{
    up_context_t *server = data;
    run_tasks(server);
    up_conn_loop_take_mail(server);
    up_conn_loop_run_deferred_reads(server);
    up_conn_loop_run_deferred(server);
}

up_context_t *up_server_new(up_loop_t *loop, const up_server_config_t *cfg,
                            const up_server_handler_t *handler)
{
    up_context_t *server = up_calloc(1, sizeof(*server));
    server->loop = loop;
    server->config = *cfg;
    server->handler = *handler;
    up_buffer_pool_init(&server->pool);
    up_date_init(&server->date);
    for (int kind = 0; kind < UP_TIMER__FIXED; kind++)
        up_timer_list_init(&server->timers[kind], 0); /* a protocol sets its own below */
    up_timer_list_init(&server->timers[UP_TIMER_HEAD], cfg->head_timeout_ms);
    up_timer_list_init(&server->timers[UP_TIMER_WRITE], cfg->write_timeout_ms);
    up_timer_list_init(&server->timers[UP_TIMER_LINGER], UP_LINGER_TIMEOUT_MS);
    up_http1_init_timers(server);
    atomic_init(&server->mail_head, NULL);
    atomic_init(&server->task_head, NULL);
    atomic_init(&server->refs, 1);
    up_loop_set_tick(loop, 1000, server_on_tick, server);
    up_loop_set_wake(loop, server_on_wake, server);
    return server;
}

/* The memory stays on server->retired_listeners: connections still serving after a graceful
 * stop read their listener's address (conn->listener), and they may outlive this. */
static void listener_on_closed(up_watcher_t *w, unsigned revents)
{
    up_context_t *server = ((up_listener_t *)w)->server;
    (void)revents;
    up_server_release(server);
}

static void close_listeners(up_context_t *server)
{
    while (server->listeners != NULL) {
        up_listener_t *l = server->listeners;
        server->listeners = l->next;
        l->next = server->retired_listeners;
        server->retired_listeners = l;
        up_server_retain(server); /* until the backend lets go of the watcher */
        up_loop_close_watcher(server->loop, &l->watcher, listener_on_closed);
        /* An adopted socket belongs to whoever handed it over (a Ruby Socket in a worker):
         * closing its number here would close whatever reuses it later. */
        if (l->owned)
            close(l->watcher.fd);
    }
}

void up_server_free(up_context_t *server)
{
    close_listeners(server);
    /* Exchanges returned since the last wake-up close normally; one still lent has no thread
     * left to return it (the contract), so it is closed as abandoned. */
    run_tasks(server);
    up_conn_loop_take_mail(server);
    up_conn_loop_drop_deferred_reads(server);
    up_conn_loop_run_deferred(server);
    while (server->conns != NULL)
        up_conn_loop_close_abandoned(server->conns);
    /* What those closes told the others (a WebSocket on an HTTP/2 stream tells its session):
     * dropped with the references it holds. */
    up_conn_loop_take_mail(server);
    up_loop_set_tick(server->loop, 1000, NULL, NULL);
    up_loop_set_wake(server->loop, NULL, NULL);
    up_server_release(server);
}

/* ---------------------------------------------------------------- accepting */

/* Sends this worker to the back of the line for the listener's next connection. An exclusive
 * wake-up goes to the first worker in the socket's wait queue that sleeps in the loop, and a
 * watch joins that queue at its end: left in place, the first worker, idle again long before
 * the next connect, would take every connection opened one after another (and hold every
 * long-lived one) while its siblings sit idle. Watching anew after each accept makes the
 * wake-ups go round. */
static void take_turn(up_context_t *server, up_listener_t *l)
{
    /* A failed unwatch leaves it watched where it was: only the turn is lost. */
    if (up_loop_watch(server->loop, &l->watcher, 0) == 0)
        update_accepting(server);
}

static void listener_on_read(up_watcher_t *w, unsigned revents)
{
    up_listener_t *l = (up_listener_t *)w;
    up_context_t *server = l->server;
    (void)revents;
    /* Woken alone among the workers (exclusive), take one connection and let the next one
     * arriving wake another worker: taking all that are queued would land a burst of new
     * connections on one worker while the others sit idle. */
    int max = server->config.exclusive_accept ? 1 : ACCEPTS_PER_EVENT;
    for (int i = 0; i < max && !server->accept_held && !server->stopping; i++) {
        struct sockaddr_storage addr;
        socklen_t addr_len = sizeof(addr);
        int fd = up_tcp_accept(w->fd, (struct sockaddr *)&addr, &addr_len);
        if (fd < 0) {
            if (errno == ECONNABORTED)
                continue;
            if (errno == EINVAL) {
                /* The socket no longer listens: whoever owns it shut it down (UP!'s master
                 * does at a final stop, so the kernel refuses new connections) and our own
                 * stop is on its way. Pause quietly rather than spin on it. */
                server->accept_paused = 1;
                update_accepting(server);
                return;
            }
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                /* Out of file descriptors (EMFILE) and the like: the listener stays readable,
                 * so watching it would spin the loop. Pause accepting until the next tick. */
                char msg[128];
                snprintf(msg, sizeof(msg), "accept failed: %s; pausing accepts for a second",
                         strerror(errno));
                log_line(server, msg);
                server->accept_paused = 1;
                update_accepting(server);
            }
            return;
        }
        up_conn_loop_accept(server, l, l->protocol, fd, (struct sockaddr *)&addr);
        if (server->config.exclusive_accept)
            take_turn(server, l);
    }
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

static int add_listener(up_context_t *server, int fd, int owned, const up_transport_t *transport,
                        void *ctx, const up_protocol_t *protocol, const char **err)
{
    up_listener_t *l = up_calloc(1, sizeof(*l));
    /* Wake us only when the first request bytes are in (a TLS client's hello): one less trip
     * through the loop. */
    up_tcp_defer_accept(fd);
    l->watcher.fd = fd;
    l->owned = owned;
    l->watcher.cb = listener_on_read;
    l->server = server;
    l->transport = transport;
    l->transport_ctx = ctx;
    l->protocol = protocol;
    describe_address(l, fd);
    if (up_loop_watch(server->loop, &l->watcher, UP_EV_READ) != 0) {
        *err = strerror(errno);
        free(l);
        return -1;
    }
    transport->retain_context(ctx);
    l->next = server->listeners;
    server->listeners = l;
    update_accepting(server);
    return 0;
}

int up_server_adopt_listener_with(up_context_t *server, int fd, const up_transport_t *transport,
                                  void *ctx, const up_protocol_t *protocol, const char **err)
{
    return add_listener(server, fd, 0, transport, ctx, protocol, err);
}

int up_server_adopt_listener(up_context_t *server, int fd, const char **err)
{
    return add_listener(server, fd, 0, &up_transport_tcp, NULL, &up_http1_protocol, err);
}

int up_server_listen(up_context_t *server, const char *host, const char *port, const char **err)
{
    return up_server_listen_with(server, host, port, &up_transport_tcp, NULL, &up_http1_protocol,
                                 err);
}

int up_server_listen_with(up_context_t *server, const char *host, const char *port,
                          const up_transport_t *transport, void *ctx,
                          const up_protocol_t *protocol, const char **err)
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
        int fd = up_tcp_listen(ai->ai_addr, ai->ai_addrlen, LISTEN_BACKLOG);
        const char *one_err = fd < 0 ? strerror(errno) : NULL;
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
        if (add_listener(server, fd, 1, transport, ctx, protocol, err) != 0) {
            close(fd);
            freeaddrinfo(res);
            return -1;
        }
        bound++;
    }
    freeaddrinfo(res);
    return bound > 0 ? 0 : -1;
}

/* A context to put in place of another, on the loop thread (up_server_any_replace_context). */
typedef struct replace_task_t {
    up_task_t task; /* first: the task list hands it back */
    const up_transport_t *transport;
    void *old_ctx, *ctx;
} replace_task_t;

static void replace_context(up_context_t *server, up_task_t *task)
{
    replace_task_t *r = (replace_task_t *)task;
    for (up_listener_t *l = server->listeners; l != NULL; l = l->next) {
        if (l->transport != r->transport || l->transport_ctx != r->old_ctx)
            continue;
        r->transport->retain_context(r->ctx);
        r->transport->release_context(l->transport_ctx);
        l->transport_ctx = r->ctx;
    }
    r->transport->release_context(r->old_ctx);
    r->transport->release_context(r->ctx);
    free(r);
}

void up_server_any_replace_context(up_context_t *server, const up_transport_t *transport,
                                   void *old_ctx, void *ctx)
{
    replace_task_t *r = up_malloc(sizeof(*r));
    r->task.run = replace_context;
    r->transport = transport;
    /* The task's own references: the caller may drop its references before the loop runs it. */
    transport->retain_context(old_ctx);
    transport->retain_context(ctx);
    r->old_ctx = old_ctx;
    r->ctx = ctx;
    up_server_any_task(server, &r->task);
}

/* ---------------------------------------------------------------- stopping */

void up_server_stop(up_context_t *server)
{
    server->stopping = 1;
    close_listeners(server);
    up_conn_t *conn = server->conns;
    while (conn != NULL) {
        up_conn_t *next = conn->_next;
        conn->protocol->on_stop(conn);
        conn = next;
    }
}

size_t up_server_num_conns(const up_context_t *server)
{
    return server->num_conns;
}

void up_server_close_all(up_context_t *server)
{
    up_conn_t *conn = server->conns;
    while (conn != NULL) {
        up_conn_t *next = conn->_next;
        up_conn_loop_close(conn);
        conn = next;
    }
}
