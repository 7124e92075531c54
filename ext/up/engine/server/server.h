#ifndef UP_SERVER_H
#define UP_SERVER_H

/* A server: its listening sockets (listener.h), its connections, and its lifecycle: made,
 * stopped gracefully, freed. Its per-loop context (limits, pool, timers, mail) is context.h's. */

#include "base/address.h"
#include "core/context.h"
#include "core/listener.h"

up_context_t *up_server_new(up_loop_t *loop, const up_server_config_t *cfg,
                            const up_server_handler_t *handler);
/* Closes everything and detaches from the loop; the memory goes once the backend has let go of
 * every watcher (an epoll loop: in up_loop_free at the latest) and no connection is referenced
 * any more (up_conn_release). No other thread may still have an exchange lent to it. */
void up_server_free(up_context_t *server);

/* Binds every address host resolves to (NULL: all interfaces) on port and starts accepting
 * plain TCP connections that speak HTTP/1.1. Returns 0, or -1 with a message in err (a static
 * or strerror string, e.g. "Address already in use"). */
int up_server_listen(up_context_t *server, const char *host, const char *port, const char **err);
/* Starts accepting on a socket that is already bound and listening (inherited from a master). */
int up_server_adopt_listener(up_context_t *server, int fd, const char **err);
/* The same two for connections of a given transport (TLS), each opened with ctx (the server
 * takes references of its own: transport->retain_context; the caller keeps its), that speak
 * protocol from their first byte. */
int up_server_listen_with(up_context_t *server, const char *host, const char *port,
                          const up_transport_t *transport, void *ctx,
                          const up_protocol_t *protocol, const char **err);
int up_server_adopt_listener_with(up_context_t *server, int fd, const up_transport_t *transport,
                                  void *ctx, const up_protocol_t *protocol, const char **err);
/* Every listener whose context is old takes ctx instead, for the connections it accepts from
 * then on (new certificates: connections already open go on with theirs). Any thread, while
 * the server runs: done on the loop thread at its next wake-up, with references of its own
 * (the caller keeps its references to both). */
void up_server_any_replace_context(up_context_t *server, const up_transport_t *transport,
                                   void *old_ctx, void *ctx);

/* Graceful stop, begun on the loop thread: stop accepting, close idle connections, and make
 * busy ones close after their current response. up_server_num_conns tells when it is done. */
void up_server_stop(up_context_t *server);
size_t up_server_num_conns(const up_context_t *server);
/* Closes whatever is still open, busy or not: the graceful deadline has passed. Connections
 * lent to other threads are LENT_BROKEN (their producers stop) and close when returned. */
void up_server_close_all(up_context_t *server);

/* The binding cannot take more requests now (every app thread busy): stop accepting, so the
 * kernel keeps new connections for sibling workers, until released. Loop thread. */
void up_server_hold_accept(up_context_t *server, int hold);

#endif
