/* rack.hijack on `up` (Rack 3.2 SPEC, "Hijacking"): a lent exchange's socket handed to
 * JavaScript, which owns it from then on (node/up/hijack.js wraps it in a net.Socket).
 *
 * The engine hands a socket over only once what was queued before it (a partial hijack's
 * head) is on the wire, in a turn of the loop (conn.h, "Hijack"): JavaScript asks with
 * hijack(), which returns at once, and the socket comes later to the callback it gave. Node's
 * thread never waits for it: each wait is looked at in a uv_prepare (before the loop sleeps)
 * and a uv_check (right after it wakes), while any is open. The one that is settled goes to
 * its callback: the fd and the bytes the client sent after the request (they came on that
 * socket), or -1 when the client went first. Either way the exchange is over then: it is
 * returned, and the engine forgets the connection (it no longer counts in numConns, so a
 * graceful stop does not wait for it, as on up_ruby).
 *
 * Over TLS there is no hijack, as on up_ruby: the session lives in the engine, and the
 * socket alone carries records the app could not read (hijack() answers false).
 *
 * Everything runs on the loop thread (Node's main thread). */

#include <stdlib.h>
#include <string.h>
#include <uv.h>
#include "addon.h"
#include "base/memory.h"
#include "http1/response.h"

/* A socket asked for and not handed over yet. */
typedef struct hijack_wait_t {
    uint32_t token;       /* the exchange's (addon.h) */
    napi_ref on_socket;   /* function(fd, unread) */
} hijack_wait_t;

struct up_node_hijacks_t {
    up_node_server_t *srv;
    hijack_wait_t *waits;
    size_t len, cap;
    uv_prepare_t *prepare; /* both look at the waits; started while there are any */
    uv_check_t *check;
};

static napi_value throw_error(napi_env env, const char *message)
{
    napi_throw_error(env, NULL, message);
    return NULL;
}

/* The slot a token still names, or NULL (the exchange was ended another way). */
static up_node_slot_t *live_slot(up_node_server_t *srv, uint32_t token)
{
    uint32_t i = token & (UP_NODE_MAX_SLOTS - 1);
    if (i >= srv->num_slots || srv->slots[i].ex == NULL || srv->slots[i].finished ||
        srv->slots[i].generation != token >> UP_NODE_SLOT_BITS)
        return NULL;
    return &srv->slots[i];
}

/* Gives one settled wait its socket: the exchange is returned first, so whatever JavaScript
 * does in the callback finds the engine done with the connection. */
static void hand_to_js(up_node_hijacks_t *h, hijack_wait_t w, int fd, up_node_slot_t *slot)
{
    up_node_server_t *srv = h->srv;
    napi_env env = srv->env;
    napi_handle_scope scope;
    napi_open_handle_scope(env, &scope);
    napi_value argv[2], fn, recv, result;
    napi_create_int32(env, fd, &argv[0]);
    if (fd >= 0) {
        up_slice_t unread = up_http1_lent_unread(slot->ex);
        napi_create_string_latin1(env, unread.base, unread.len, &argv[1]);
    } else {
        napi_get_undefined(env, &argv[1]);
    }
    if (slot != NULL)
        up_node_exchange_finish(srv, slot);
    napi_get_reference_value(env, w.on_socket, &fn);
    napi_delete_reference(env, w.on_socket);
    napi_get_global(env, &recv); /* napi_make_callback wants an object */
    if (napi_make_callback(env, srv->async, recv, fn, 2, argv, &result) != napi_ok) {
        /* hijack.js catches what the app's code raises: this is a bug of ours. */
        napi_value ignored;
        napi_get_and_clear_last_exception(env, &ignored);
        up_node_log(srv, "error in up's hijack: the socket's callback threw");
    }
    napi_close_handle_scope(env, scope);
}

/* Hands over every socket that is ready (or will never come). A callback may ask for another
 * hijack, which appends: the walk goes by index over the live length. */
static void run_waits(up_node_hijacks_t *h)
{
    size_t i = 0;
    while (i < h->len) {
        hijack_wait_t w = h->waits[i];
        up_node_slot_t *slot = live_slot(h->srv, w.token);
        int fd = slot != NULL ? up_conn_lent_take_socket(slot->ex->conn) : -1;
        if (fd == -2) {
            i++;
            continue;
        }
        h->waits[i] = h->waits[--h->len];
        hand_to_js(h, w, fd, slot);
    }
    if (h->len == 0) {
        uv_prepare_stop(h->prepare);
        uv_check_stop(h->check);
    }
}

static void waits_on_prepare(uv_prepare_t *p)
{
    run_waits(p->data);
}

static void waits_on_check(uv_check_t *c)
{
    run_waits(c->data);
}

/* The server's hijack state, made at the first hijack; NULL with an exception pending. */
static up_node_hijacks_t *hijacks_of(napi_env env, up_node_server_t *srv)
{
    if (srv->hijacks != NULL)
        return srv->hijacks;
    uv_loop_t *uv;
    if (napi_get_uv_event_loop(env, &uv) != napi_ok) {
        throw_error(env, "hijack: no uv loop");
        return NULL;
    }
    up_node_hijacks_t *h = up_calloc(1, sizeof(*h));
    h->srv = srv;
    h->prepare = up_malloc(sizeof(*h->prepare));
    h->check = up_malloc(sizeof(*h->check));
    uv_prepare_init(uv, h->prepare);
    uv_check_init(uv, h->check);
    h->prepare->data = h->check->data = h;
    /* Housekeeping: the sockets keep Node's loop alive, not these. */
    uv_unref((uv_handle_t *)h->prepare);
    uv_unref((uv_handle_t *)h->check);
    srv->hijacks = h;
    return h;
}

/* hijack(token, status, fields, onSocket): asks for the exchange's socket. status null: a
 * full hijack, before any response (the caller checks that nothing began). Else a partial
 * hijack: the head of status and the flat fields goes out first, unframed (the app frames
 * what it writes, or its close ends it) and never followed by another request. Returns true
 * when the socket will come to onSocket(fd, unread) (fd -1 if the client goes first; either
 * way the exchange is over then); false when no socket will come (the client is gone, or TLS),
 * and the exchange is still the caller's to end; or what is wrong with the head as a string
 * (nothing sent). */
static napi_value hijack(napi_env env, napi_callback_info info)
{
    size_t argc = 4;
    napi_value argv[4], result;
    napi_valuetype status_type = napi_undefined, fn_type = napi_undefined;
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    up_node_server_t *srv = up_node_server_of(env);
    if (argc < 4 || napi_typeof(env, argv[1], &status_type) != napi_ok ||
        napi_typeof(env, argv[3], &fn_type) != napi_ok || fn_type != napi_function)
        return throw_error(env, "hijack(token, status, fields, onSocket)");
    up_node_slot_t *slot = up_node_exchange_slot(env, srv, argv[0]);
    if (slot == NULL)
        return NULL;
    up_node_hijacks_t *h = hijacks_of(env, srv);
    if (h == NULL)
        return NULL;
    up_exchange_t *ex = slot->ex;
    if (status_type != napi_null && status_type != napi_undefined) {
        const char *err = up_node_exchange_start(env, srv, slot, argv[1], argv[2]);
        if (err != NULL) {
            up_response_rollback(ex);
            napi_create_string_utf8(env, err, NAPI_AUTO_LENGTH, &result);
            return result;
        }
        ex->res->keep_alive = 0;
        up_response_end_head(ex, ex->res->content_length >= 0 ? -1 : UP_RESPONSE_OPEN_STREAM);
    }
    int wake = up_response_hijack(ex);
    if (wake > 0)
        up_loop_wake(srv->loop);
    if (wake >= 0) {
        napi_ref ref;
        if (napi_create_reference(env, argv[3], 1, &ref) != napi_ok)
            up_fatal("hijack: cannot keep the callback"); /* V8 out of memory */
        if (h->len == h->cap) {
            h->cap = h->cap == 0 ? 16 : h->cap * 2;
            h->waits = up_realloc(h->waits, h->cap * sizeof(*h->waits));
        }
        uint32_t token;
        napi_get_value_uint32(env, argv[0], &token);
        h->waits[h->len++] = (hijack_wait_t){token, ref};
        if (h->len == 1) {
            uv_prepare_start(h->prepare, waits_on_prepare);
            uv_check_start(h->check, waits_on_check);
        }
    }
    napi_get_boolean(env, wake >= 0, &result);
    return result;
}

static void handle_on_closed(uv_handle_t *handle)
{
    free(handle);
}

void up_node_hijacks_free(up_node_hijacks_t *h)
{
    for (size_t i = 0; i < h->len; i++)
        napi_delete_reference(h->srv->env, h->waits[i].on_socket);
    free(h->waits);
    uv_close((uv_handle_t *)h->prepare, handle_on_closed);
    uv_close((uv_handle_t *)h->check, handle_on_closed);
    free(h);
}

napi_status up_node_define_hijack(napi_env env, napi_value exports)
{
    napi_property_descriptor props[] = {
        {"hijack", NULL, hijack, NULL, NULL, NULL, napi_default_jsproperty, NULL},
    };
    return napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
}
