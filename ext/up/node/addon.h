#ifndef UP_NODE_ADDON_H
#define UP_NODE_ADDON_H

/* The Node-API binding of `up` (up.node): the engine on Node's libuv loop, requests handed to
 * JavaScript (the files of node/up/) and responses taken back. Everything here runs on the thread that
 * loaded the addon, which runs the loop (loop_uv.h): there is no other thread.
 *
 * addon.c: the module and the server's life (create, listen, stop). exchange.c: one request
 * through JavaScript, and the response calls JavaScript makes for it. */

#define NAPI_VERSION 8
#include <node_api.h>
#include <stddef.h>
#include <stdint.h>
#include "core/conn.h"
#include "core/exchange.h"
#include "http1/access_log.h"
#include "http1/http1.h"
#include "http2/http2.h"
#include "scratch.h"
#include "handlers/static_file.h"
#include "server/server.h"
#include "transport/tls.h"

typedef struct up_node_upgrades_t up_node_upgrades_t;
typedef struct up_node_hijacks_t up_node_hijacks_t;

/* The meta array (an Int32Array JavaScript reads each request's layout from): fixed fields,
 * then two (offset, length) pairs per header field. Offsets are into the head string; -1 for a
 * slice outside it (an absolute-form target's empty path, which stands for "/"). */
enum {
    UP_NODE_META_TOKEN,
    UP_NODE_META_MINOR_VERSION,
    UP_NODE_META_NUM_HEADERS,
    UP_NODE_META_METHOD,        /* offset, then length */
    UP_NODE_META_TARGET = 5,
    UP_NODE_META_PATH = 7,
    UP_NODE_META_QUERY = 9,
    UP_NODE_META_HOST = 11,
    UP_NODE_META_ABSOLUTE = 13, /* the target is in absolute form: its authority is the host */
    UP_NODE_META_CHUNKED,       /* the body came chunked: CONTENT_LENGTH is its decoded size */
    UP_NODE_META_BODY_FD,       /* a spooled body's file (read it with pread), else -1 */
    UP_NODE_META_BODY_LENGTH,
    UP_NODE_META_UPGRADE,       /* what the request may become: up_upgrade_kind_t (upgrade.h) */
    UP_NODE_META_HTTP2,         /* it came on an HTTP/2 stream */
    UP_NODE_META_HEADERS = 20
};
#define UP_NODE_META_SIZE(max_headers) (UP_NODE_META_HEADERS + 4 * (max_headers))

/* Exchanges JavaScript has now are named by tokens: a slot index in the low bits and the
 * slot's generation above, so a stale token (a response call after the exchange ended) is
 * refused instead of reaching another connection. */
#define UP_NODE_SLOT_BITS 20
#define UP_NODE_MAX_SLOTS (1u << UP_NODE_SLOT_BITS)

typedef struct up_node_slot_t {
    up_exchange_t *ex;   /* NULL when free */
    uint32_t generation;
    unsigned finished : 1; /* the response is complete (or failed) */
    unsigned deferred : 1; /* on_request returned: finishing returns the exchange */
    uint32_t next_free;
    uint64_t started_ns; /* when on_request began, with an access log (served.c) */
} up_node_slot_t;

typedef struct up_node_server_t {
    napi_env env;
    up_loop_t *loop;
    up_context_t *server;
    napi_ref on_request; /* function(head, body, remoteAddr, listenerHost) */
    napi_ref on_log;     /* function(line) */
    napi_ref meta_ref;
    int32_t *meta;       /* the meta array's memory */
    size_t meta_len;
    napi_async_context async;
    up_node_slot_t *slots;
    uint32_t num_slots, free_slot; /* free_slot: head of the free list, num_slots when none */
    up_node_scratch_t scratch; /* strings JavaScript hands over, copied out of V8 */
    up_static_t *static_files; /* the engine's static file handler (static.c), NULL for none */
    up_node_upgrades_t *upgrades; /* WebSockets, event streams, pub/sub (upgrades.h); NULL
                                   * until JavaScript sets them up */
    up_node_hijacks_t *hijacks; /* sockets asked for and not handed over yet (hijack.c); NULL
                                 * before the first hijack */
    up_access_log_t *access_log; /* --access-log (served.c), NULL when off */
    uint64_t requests;           /* finished since start, static files included */
    uint64_t static_served;      /* answered by the engine from files */
    int http2;                   /* listeners speak HTTP/2 beside HTTP/1.1 (options.http2) */
} up_node_server_t;

/* addon.c: the server of this Node environment (its instance data), NULL before createServer. */
up_node_server_t *up_node_server_of(napi_env env);

/* addon.c: a whole number from options[name], or fallback when it is absent. */
int64_t up_node_option(napi_env env, napi_value options, const char *name, int64_t fallback);

/* exchange.c */
up_request_result_t up_node_on_request(up_exchange_t *ex, void *user);
napi_status up_node_define_exchange(napi_env env, napi_value exports);
/* A line in the server's log (the JavaScript log function). Loop thread, outside JavaScript or
 * inside it. */
void up_node_log(up_node_server_t *srv, const char *line);
/* The exchange a token names now, or NULL with a JavaScript exception pending; and the end of
 * one (a deferred one goes back to the loop). For the response calls of other files
 * (sendfile.c; websocket.c, where an upgrade ends the exchange). */
up_node_slot_t *up_node_exchange_slot(napi_env env, up_node_server_t *srv, napi_value token);
void up_node_exchange_finish(up_node_server_t *srv, up_node_slot_t *slot);
/* Stages a response's status line and the header fields of the flat [name, value, ...] Array
 * (hijack.c's partial hijack). Returns NULL, or what is wrong (roll the response back then). */
const char *up_node_exchange_start(napi_env env, up_node_server_t *srv, up_node_slot_t *slot,
                                   napi_value status, napi_value fields);

/* hijack.c: hijack, the call that asks for a lent exchange's socket (rack.hijack); and the
 * end of the environment, after the server is freed. */
napi_status up_node_define_hijack(napi_env env, napi_value exports);
void up_node_hijacks_free(up_node_hijacks_t *h);

/* served.c: each finished request counted, and written to the access log when there is one
 * (started_ns: when its on_request began; read only then). up_node_on_served is the engine's
 * callback for a request it answered itself (core/context.h). JavaScript's openAccessLog,
 * flushAccessLog, reopenAccessLog, closeAccessLog and stats. Loop thread. */
uint64_t up_node_now_ns(void);
void up_node_served(up_node_server_t *srv, up_exchange_t *ex, uint64_t started_ns);
void up_node_on_served(up_exchange_t *ex, void *user);
void up_node_access_log_free(up_node_server_t *srv);
napi_status up_node_define_served(napi_env env, napi_value exports);

/* static.c: the static file handler from options.static_files (Up::StaticFiles#to_h as JSON).
 * Returns the handler, or NULL with a JavaScript exception pending (a bad setting); *none set
 * when the options have no static files (NULL returned, nothing pending). */
up_static_t *up_node_static_new(napi_env env, napi_value options, int *none);

/* tls.c: the TLS context of a listener from its settings ({ cert_file, key_file, ca_file,
 * hosts: [{ host, cert_file, key_file, ca_file }], key_password, ticket_secret: 64 hex
 * digits }). Returns a context with one reference, the caller's, or NULL with a JavaScript
 * exception pending that says in one line what is wrong (the engine's message for a file that
 * does not load). The JavaScript thread; reads files. */
up_tls_context_t *up_node_tls_context(napi_env env, napi_value settings);
/* tls.c: reloadTLS, HUP's certificate reload of the TLS listeners. */
napi_status up_node_define_tls(napi_env env, napi_value exports);

/* restart.c: execvpe, closeOnExec and reap, for the restarts of node/up/restart.js. */
napi_status up_node_define_restart(napi_env env, napi_value exports);

/* sendfile.c: sendFile, the response call for a file the engine sends (file_response.h). */
napi_status up_node_define_sendfile(napi_env env, napi_value exports);

#endif
