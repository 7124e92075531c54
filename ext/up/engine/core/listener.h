#ifndef UP_LISTENER_H
#define UP_LISTENER_H

#include "core/protocol.h"
#include "core/transport.h"
#include "loop/loop.h"

typedef struct up_context_t up_context_t;

/* One listening socket; connections point at theirs for SERVER_NAME/SERVER_PORT fallbacks, so
 * a listener closed at a graceful stop is kept (server->retired_listeners) until the server is
 * freed, which is after its last connection. Its transport (transport.h) is the one of every
 * connection it accepts, each opened with the listener's context at that moment (one
 * reference held by the listener; up_server_any_replace_context swaps it). */
typedef struct up_listener_t {
    up_watcher_t watcher;
    up_context_t *server;
    const up_transport_t *transport;
    void *transport_ctx; /* NULL for TCP; loop thread */
    const up_protocol_t *protocol; /* what its connections speak from their first byte */
    char host[64]; /* numeric address ("127.0.0.1", "[::1]") */
    char port[8];
    int owned;     /* the engine bound it and closes it; an adopted one is only forgotten */
    struct up_listener_t *next;
} up_listener_t;

#endif
