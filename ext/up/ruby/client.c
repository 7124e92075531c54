/* WebSocket and event-stream clients: Up::Client, the Ruby face of an upgraded connection
 * (docs/websockets.md), and the order its handler's callbacks run in.
 *
 * Threads. The engine reports a connection's events on the loop thread, without the GVL
 * (upgrade.h): each becomes a C event on the client's list, and a client with events is queued
 * for the app threads like a request (thread_pool.c). One app thread at a time runs a client's
 * events, in order (up_rb_client_run), with the GVL: so on_open runs first and alone,
 * on_message never twice at once for one connection, on_close last. A callback that blocks
 * holds its own connection's later callbacks and one app thread, nothing else; with -t 1 that
 * thread is the only one, as for requests. Any thread may write to a client: a write is a
 * whole frame handed to the connection's mail (conn.h), written by the loop in order.
 *
 * Lifetime. The server marks every client until its on_close has run (srv->clients; touched
 * with the GVL only), so an app need not keep its clients. The client keeps a reference to its
 * connection until then; afterwards its methods answer as a closed client does. */

#include <ruby/encoding.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "client.h"

static VALUE cClient, sym_websocket, sym_sse, str_protocol;
static ID id_on_open, id_on_message, id_on_drained, id_on_shutdown, id_on_close;
static ID id_event, id_id;

/* Events per run before the client goes back to the end of the queue, so that one busy
 * connection does not keep an app thread from the others. */
#define EVENTS_PER_RUN 32
/* Strings at least this long are sent by reference (shared_string.c). */
#define SHARE_MIN (32 * 1024)

/* ---------------------------------------------------------------- the Ruby object */

/* Events waiting mark their subscriptions (one unsubscribed meanwhile still runs its last
 * messages' block). Nothing allocates Ruby objects under queue_lock, so taking it here, inside
 * the GC, cannot wait for a thread that waits for the GC. */
static void client_mark(void *p)
{
    up_rb_client_t *c = p;
    rb_gc_mark_movable(c->env);
    rb_gc_mark_movable(c->handler);
    rb_gc_mark_movable(c->subscriptions);
    if (c->srv == NULL)
        return;
    pthread_mutex_lock(&c->srv->queue_lock);
    for (event_t *ev = c->events; ev != NULL; ev = ev->next)
        up_rb_sub_mark_event(ev);
    pthread_mutex_unlock(&c->srv->queue_lock);
}

static void client_compact(void *p)
{
    up_rb_client_t *c = p;
    c->env = rb_gc_location(c->env);
    c->handler = rb_gc_location(c->handler);
    c->subscriptions = rb_gc_location(c->subscriptions);
    c->self = rb_gc_location(c->self);
}

void up_rb_event_free(event_t *ev)
{
    free(ev->msg);
    free(ev->channel);
    if (ev->message != NULL)
        up_shared_release(ev->message);
    free(ev);
}

static void free_events(event_t *ev)
{
    while (ev != NULL) {
        event_t *next = ev->next;
        up_rb_event_free(ev);
        ev = next;
    }
}

static void forget_server(up_rb_client_t *c);

/* Unmarked only once on_close ran or the server is gone, so no event can come any more; or
 * collected in the same sweep as its server, before it (then c->srv is still set, and valid:
 * the client's reference). */
static void client_free(void *p)
{
    up_rb_client_t *c = p;
    free_events(c->events);
    if (c->conn != NULL)
        up_conn_release(c->conn);
    if (c->srv != NULL)
        forget_server(c);
    xfree(c);
}

static size_t client_size(const void *p)
{
    (void)p;
    return sizeof(up_rb_client_t);
}

static const rb_data_type_t client_type = {
    .wrap_struct_name = "Up::Client",
    .function = {.dmark = client_mark, .dfree = client_free, .dsize = client_size,
                 .dcompact = client_compact},
    .flags = RUBY_TYPED_FREE_IMMEDIATELY,
};

static up_rb_client_t *get(VALUE self)
{
    return rb_check_typeddata(self, &client_type);
}

up_rb_client_t *up_rb_client_get(VALUE self)
{
    return get(self);
}

void up_rb_clients_mark(up_rb_server_t *srv)
{
    for (up_rb_client_t *c = srv->clients; c != NULL; c = c->next)
        rb_gc_mark(c->self);
}

/* The client leaves the server's list and gives back its reference to the server. */
static void forget_server(up_rb_client_t *c)
{
    up_rb_server_t *srv = c->srv;
    if (c->prev != NULL)
        c->prev->next = c->next;
    else if (srv->clients == c)
        srv->clients = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
    c->srv = NULL;
    up_rb_server_release(srv);
}

void up_rb_clients_detach(up_rb_server_t *srv)
{
    while (srv->clients != NULL) {
        up_rb_client_t *c = srv->clients;
        free_events(c->events);
        c->events = c->events_tail = NULL;
        if (c->conn != NULL)
            up_conn_release(c->conn);
        c->conn = NULL;
        forget_server(c);
        c->closed = 1;
    }
}

/* ---------------------------------------------------------------- engine events */

/* Loop thread, no GVL (or a thread that runs no app thread any more: the end of a run): the
 * event joins the client's list, and the client the app threads' queue unless it is there or
 * running. */
void up_rb_client_push(up_rb_client_t *c, event_t *ev)
{
    up_rb_server_t *srv = c->srv;
    ev->next = NULL;
    pthread_mutex_lock(&srv->queue_lock);
    if (c->events_tail != NULL)
        c->events_tail->next = ev;
    else
        c->events = ev;
    c->events_tail = ev;
    int schedule = !c->scheduled;
    c->scheduled = 1;
    pthread_mutex_unlock(&srv->queue_lock);
    if (schedule)
        up_rb_pool_push(srv, up_rb_job_of_client(c));
}

static void push_event(up_rb_client_t *c, event_kind_t kind, unsigned code,
                       up_upgrade_message_t *msg)
{
    event_t *ev = calloc(1, sizeof(*ev));
    if (ev == NULL) {
        /* Out of memory on the loop thread: nothing to raise to; lose the event loudly. */
        up_rb_on_log("out of memory for a WebSocket event; it is lost", c->srv);
        free(msg);
        return;
    }
    ev->kind = kind;
    ev->code = code;
    ev->msg = msg;
    up_rb_client_push(c, ev);
}

static void on_open(up_conn_t *conn, void *user)
{
    (void)conn;
    push_event(user, EV_OPEN, 0, NULL);
}

static void on_message(up_conn_t *conn, void *user, up_upgrade_message_t *msg)
{
    (void)conn;
    atomic_fetch_add(&((up_rb_client_t *)user)->srv->messages_in, 1);
    push_event(user, EV_MESSAGE, 0, msg);
}

static void on_drained(up_conn_t *conn, void *user)
{
    (void)conn;
    push_event(user, EV_DRAINED, 0, NULL);
}

static void on_shutdown(up_conn_t *conn, void *user)
{
    (void)conn;
    push_event(user, EV_SHUTDOWN, 0, NULL);
}

static void on_close(up_conn_t *conn, void *user, unsigned code)
{
    (void)conn;
    push_event(user, EV_CLOSE, code, NULL);
}

static const up_upgrade_events_t events = {on_open, on_message, on_drained, on_shutdown,
                                           on_close};

/* ---------------------------------------------------------------- running callbacks */

typedef struct callback_t {
    VALUE handler;
    ID id;
    int argc;
    VALUE argv[2];
} callback_t;

static VALUE run_callback(VALUE arg)
{
    callback_t *cb = (callback_t *)arg;
    return rb_funcallv(cb->handler, cb->id, cb->argc, cb->argv);
}

/* Calls handler.id(client[, arg]) if the handler has it; what it raises is logged. */
static void callback(up_rb_client_t *c, ID id, int argc, VALUE arg)
{
    if (NIL_P(c->handler) || !rb_respond_to(c->handler, id))
        return;
    callback_t cb = {c->handler, id, argc, {c->self, arg}};
    int state = 0;
    c->in_callback = 1;
    rb_protect(run_callback, (VALUE)&cb, &state);
    c->in_callback = 0;
    if (state != 0) {
        VALUE err = rb_errinfo();
        rb_set_errinfo(Qnil);
        if (rb_obj_is_kind_of(err, rb_eException) && c->srv != NULL)
            up_rb_report(c->srv, err, c->env);
        else if (!rb_obj_is_kind_of(err, rb_eException))
            rb_jump_tag(state); /* a thread kill, not an error: let it go on */
    }
}

static VALUE message_string(const up_upgrade_message_t *msg)
{
    if (msg->binary)
        return rb_str_new(msg->data, (long)msg->len);
    return rb_utf8_str_new(msg->data, (long)msg->len);
}

/* Ends a client: its last callback ran; the server no longer marks it. */
static void finish(up_rb_client_t *c)
{
    c->closed = 1;
    if (c->conn != NULL) {
        up_conn_release(c->conn);
        c->conn = NULL;
    }
    if (c->srv != NULL) {
        atomic_fetch_sub(c->protocol == UP_UPGRADE_WEBSOCKET ? &c->srv->websockets_open
                                                             : &c->srv->sse_open,
                         1);
        forget_server(c);
    }
}

static void run_event(up_rb_client_t *c, event_t *ev)
{
    switch (ev->kind) {
    case EV_OPEN:
        callback(c, id_on_open, 1, Qnil);
        break;
    case EV_MESSAGE: {
        VALUE data = message_string(ev->msg);
        size_t len = ev->msg->len;
        free(ev->msg);
        ev->msg = NULL;
        callback(c, id_on_message, 2, data);
        if (c->conn != NULL)
            up_ws_any_consumed(c->conn, len);
        break;
    }
    case EV_DRAINED:
        callback(c, id_on_drained, 1, Qnil);
        break;
    case EV_SHUTDOWN:
        callback(c, id_on_shutdown, 1, Qnil);
        /* The app has said its goodbye: the close goes after it. */
        if (c->conn != NULL) {
            if (c->protocol == UP_UPGRADE_WEBSOCKET)
                up_ws_any_close(c->conn, UP_WS_CLOSE_GOING_AWAY);
            else
                up_sse_any_close(c->conn);
        }
        break;
    case EV_CLOSE:
        callback(c, id_on_close, 1, Qnil);
        up_rb_client_unsubscribe_all(c);
        finish(c);
        break;
    case EV_PUBSUB:
        up_rb_sub_run(c, ev);
        break;
    }
}

up_rb_job_t *up_rb_client_job_link(up_rb_client_t *client)
{
    return &client->job_next;
}

/* Takes the client's waiting events. */
static event_t *take_events(up_rb_server_t *srv, up_rb_client_t *c)
{
    pthread_mutex_lock(&srv->queue_lock);
    event_t *ev = c->events;
    c->events = c->events_tail = NULL;
    pthread_mutex_unlock(&srv->queue_lock);
    return ev;
}

void up_rb_client_run(up_rb_server_t *srv, up_rb_client_t *c)
{
    int run = 0;
    for (;;) {
        event_t *ev = take_events(srv, c);
        while (ev != NULL) {
            event_t *next = ev->next;
            if (!c->closed)
                run_event(c, ev);
            up_rb_event_free(ev);
            ev = next;
            run++;
        }
        pthread_mutex_lock(&srv->queue_lock);
        if (c->events == NULL) {
            c->scheduled = 0;
            pthread_mutex_unlock(&srv->queue_lock);
            return;
        }
        if (run >= EVENTS_PER_RUN) {
            /* More came: the client goes to the end of the queue, still scheduled. */
            up_rb_pool_append_locked(srv, up_rb_job_of_client(c));
            pthread_mutex_unlock(&srv->queue_lock);
            return;
        }
        pthread_mutex_unlock(&srv->queue_lock);
    }
}

void up_rb_clients_drain(up_rb_server_t *srv)
{
    up_rb_client_t *c = srv->clients;
    while (c != NULL) {
        up_rb_client_t *next = c->next; /* c may leave the list (on_close) */
        up_rb_client_run(srv, c);
        c = next;
    }
}

/* ---------------------------------------------------------------- the upgrade */

/* Fields of the app's that the upgrade's own head replaces. */
static const char *const ws_owned[] = {"content-type", "content-length", "transfer-encoding",
                                       "connection", "upgrade", "sec-websocket-accept",
                                       "sec-websocket-extensions", NULL};
static const char *const ws_owned_and_protocol[] = {
    "content-type", "content-length", "transfer-encoding", "connection", "upgrade",
    "sec-websocket-accept", "sec-websocket-extensions", "sec-websocket-protocol", NULL};
static const char *const sse_owned[] = {"content-type", "content-length", "transfer-encoding",
                                        "connection", "cache-control", NULL};

/* Whether the subprotocol the app chose, if any, is one the client offered: RFC 6455 §4.2.2
 * lets the server pick only among those (a client fails the connection otherwise). */
static int subprotocol_offered(up_exchange_t *ex, VALUE headers)
{
    VALUE chosen = RB_TYPE_P(headers, T_HASH) ? rb_hash_lookup2(headers, str_protocol, Qnil) : Qnil;
    if (!RB_TYPE_P(chosen, T_STRING))
        return 1;
    const up_http1_request_t *head = &ex->req->head;
    for (size_t i = 0; i < head->num_headers; i++) {
        const up_http1_header_t *h = &head->headers[i];
        if (h->name.len == 22 && strncasecmp(h->name.base, "sec-websocket-protocol", 22) == 0 &&
            up_ws_list_contains(h->value, RSTRING_PTR(chosen), (size_t)RSTRING_LEN(chosen), 0))
            return 1;
    }
    return 0;
}

static VALUE new_client(up_rb_server_t *srv, up_exchange_t *ex, VALUE env, VALUE handler,
                        up_upgrade_kind_t protocol)
{
    up_rb_client_t *c;
    VALUE self = TypedData_Make_Struct(cClient, up_rb_client_t, &client_type, c);
    c->srv = srv;
    up_rb_server_retain(srv);
    c->self = self;
    c->env = env;
    c->handler = handler;
    c->protocol = protocol;
    c->subscriptions = Qnil;
    return self;
}

static VALUE close_body(VALUE body)
{
    static ID id_close;
    if (id_close == 0)
        id_close = rb_intern("close");
    if (rb_respond_to(body, id_close))
        rb_funcall(body, id_close, 0);
    return Qnil;
}

up_rb_client_t *up_rb_server_client(up_rb_server_t *srv)
{
    if (NIL_P(srv->server_client))
        srv->server_client = new_client(srv, NULL, Qnil, Qnil, UP_UPGRADE_NONE);
    return get(srv->server_client);
}

int up_rb_upgrade(up_rb_server_t *srv, up_exchange_t *ex, VALUE env, VALUE response)
{
    up_upgrade_kind_t kind = ex->req->upgrade;
    if (kind == UP_UPGRADE_NONE)
        return 0;
    VALUE handler = rb_hash_lookup2(env, up_rb_key_rack_upgrade, Qnil);
    if (NIL_P(handler) || !RB_TYPE_P(response, T_ARRAY) || RARRAY_LEN(response) != 3)
        return 0;
    VALUE status = RARRAY_AREF(response, 0);
    if (!FIXNUM_P(status) || FIX2LONG(status) < 0 || FIX2LONG(status) >= 300)
        return 0; /* a refused upgrade: the app's response goes as it is */
    VALUE self = new_client(srv, ex, env, handler, kind);
    up_rb_client_t *c = get(self);
    up_ws_t *ws = NULL;
    if (kind == UP_UPGRADE_WEBSOCKET)
        ws = up_ws_lent_start_accept(ex, &srv->ws_settings);
    else
        up_sse_lent_start_accept(ex);
    VALUE message = Qnil;
    const char *const *owned = kind == UP_UPGRADE_WEBSOCKET ? ws_owned : sse_owned;
    if (kind == UP_UPGRADE_WEBSOCKET && !subprotocol_offered(ex, RARRAY_AREF(response, 1))) {
        up_rb_on_log("the app chose a WebSocket subprotocol the client did not offer; it is left "
                     "out of the 101 (RFC 6455 §4.2.2)",
                     srv);
        owned = ws_owned_and_protocol;
    }
    if (up_rb_add_headers_except(ex, RARRAY_AREF(response, 1), owned, &message) != 0) {
        if (ws != NULL)
            up_ws_discard(ws);
        up_response_rollback(ex);
        up_rb_report(srv, rb_exc_new_str(rb_eRuntimeError, message), env);
        up_response_send_simple(ex, 500, "Internal Server Error: the app's response was invalid",
                                1);
        c->closed = 1;
        return 1;
    }
    /* The connection it lives on, ours to release: ex->conn, or its HTTP/2 stream's own. */
    up_conn_t *conn = kind == UP_UPGRADE_WEBSOCKET
                          ? up_ws_lent_accept(ex, ws, &events, c)
                          : up_sse_lent_accept(ex, srv->sse_heartbeat_ms, &events, c);
    if (conn == NULL) {
        c->closed = 1;
        return 1;
    }
    c->conn = conn;
    atomic_fetch_add(kind == UP_UPGRADE_WEBSOCKET ? &srv->websockets_open : &srv->sse_open, 1);
    c->next = srv->clients;
    if (srv->clients != NULL)
        srv->clients->prev = c;
    srv->clients = c;
    /* The body is never sent; it is closed as the SPEC wants every body to be. */
    int state = 0;
    rb_protect(close_body, RARRAY_AREF(response, 2), &state);
    if (state != 0) {
        VALUE err = rb_errinfo();
        rb_set_errinfo(Qnil);
        up_rb_report(srv, err, env);
    }
    return 1;
}

/* ---------------------------------------------------------------- Up::Client */

/* The connection while the client is usable, else NULL. */
static up_conn_t *live_conn(up_rb_client_t *c)
{
    return c->closed || c->srv == NULL ? NULL : c->conn;
}

/* A String as WebSocket text (UTF-8, checked) or binary (ASCII-8BIT). */
static int prepare_ws_data(VALUE *data)
{
    VALUE str = *data;
    int enc = rb_enc_get_index(str);
    if (enc == rb_ascii8bit_encindex())
        return UP_WS_OP_BINARY;
    if (enc != rb_utf8_encindex() && enc != rb_usascii_encindex())
        str = rb_str_export_to_enc(str, rb_utf8_encoding());
    if (rb_enc_str_coderange(str) == ENC_CODERANGE_BROKEN)
        rb_raise(rb_eArgError, "a text message must be valid UTF-8 (send a binary String for bytes)");
    *data = str;
    return UP_WS_OP_TEXT;
}

static VALUE sse_field(VALUE opts, ID key)
{
    if (NIL_P(opts))
        return Qnil;
    VALUE v = rb_hash_lookup2(opts, ID2SYM(key), Qnil);
    return NIL_P(v) ? Qnil : rb_obj_as_string(v);
}

/* write(data) → true if scheduled, false once closed; write(data, event:, id:) on SSE. */
static VALUE Client_write(int argc, VALUE *argv, VALUE self)
{
    VALUE data, opts;
    rb_scan_args(argc, argv, "1:", &data, &opts);
    if (!RB_TYPE_P(data, T_STRING))
        rb_raise(rb_eTypeError, "write takes a String, not a %" PRIsVALUE, rb_obj_class(data));
    up_rb_client_t *c = get(self);
    up_conn_t *conn = live_conn(c);
    if (conn == NULL)
        return Qfalse;
    int r;
    if (c->protocol == UP_UPGRADE_WEBSOCKET) {
        int opcode = prepare_ws_data(&data);
        size_t len = (size_t)RSTRING_LEN(data);
        if (len >= SHARE_MIN) {
            up_shared_t *shared = up_rb_shared_string(c->srv, data);
            r = up_ws_any_send_shared(conn, opcode, shared, 0, len);
            up_shared_release(shared);
        } else {
            r = up_ws_any_send(conn, opcode, RSTRING_PTR(data), len);
        }
    } else {
        VALUE event = sse_field(opts, id_event), id = sse_field(opts, id_id);
        r = up_sse_any_send(conn, NIL_P(event) ? NULL : RSTRING_PTR(event),
                            NIL_P(event) ? 0 : (size_t)RSTRING_LEN(event),
                            NIL_P(id) ? NULL : RSTRING_PTR(id),
                            NIL_P(id) ? 0 : (size_t)RSTRING_LEN(id), RSTRING_PTR(data),
                            (size_t)RSTRING_LEN(data));
        if (r == -2)
            rb_raise(rb_eArgError, "an event's name and id may not hold a line break or NUL");
    }
    RB_GC_GUARD(data);
    if (r != 0)
        return Qfalse;
    atomic_fetch_add(&c->srv->messages_out, 1);
    return Qtrue;
}

static VALUE Client_close(VALUE self)
{
    up_rb_client_t *c = get(self);
    up_conn_t *conn = live_conn(c);
    c->closing = 1;
    if (conn != NULL) {
        if (c->protocol == UP_UPGRADE_WEBSOCKET)
            up_ws_any_close(conn, UP_WS_CLOSE_NORMAL);
        else
            up_sse_any_close(conn);
    }
    return Qnil;
}

static VALUE Client_open_p(VALUE self)
{
    up_rb_client_t *c = get(self);
    up_conn_t *conn = live_conn(c);
    return conn != NULL && !c->closing && up_conn_any_state(conn) == UP_CONN_OPEN ? Qtrue : Qfalse;
}

static VALUE Client_pending(VALUE self)
{
    up_rb_client_t *c = get(self);
    up_conn_t *conn = live_conn(c);
    if (conn == NULL)
        return INT2FIX(-1);
    return LONG2NUM(c->protocol == UP_UPGRADE_WEBSOCKET ? up_ws_any_pending(conn)
                                                        : up_sse_any_pending(conn));
}

static VALUE Client_env(VALUE self)
{
    return get(self)->env;
}

static VALUE Client_handler(VALUE self)
{
    return get(self)->handler;
}

/* The old handler's on_close, then the new one's on_open; the connection stays. From one of
 * the client's own callbacks this runs at once, in order; the app's other threads should not
 * call it while callbacks run (they would run beside them). */
static VALUE Client_set_handler(VALUE self, VALUE handler)
{
    up_rb_client_t *c = get(self);
    if (c->closed) {
        c->handler = handler;
        return handler;
    }
    int in_callback = c->in_callback;
    callback(c, id_on_close, 1, Qnil);
    c->handler = handler;
    callback(c, id_on_open, 1, Qnil);
    c->in_callback = in_callback;
    return handler;
}

static VALUE Client_timeout(VALUE self)
{
    up_rb_client_t *c = get(self);
    up_conn_t *conn = live_conn(c);
    if (conn == NULL || c->protocol != UP_UPGRADE_WEBSOCKET)
        return conn == NULL ? Qnil : DBL2NUM(c->srv->sse_heartbeat_ms / 1000.0);
    return DBL2NUM(up_ws_any_ping(conn) / 1000.0);
}

static VALUE Client_set_timeout(VALUE self, VALUE seconds)
{
    up_rb_client_t *c = get(self);
    double s = NUM2DBL(seconds);
    if (!(s >= 0 && s <= 86400))
        rb_raise(rb_eArgError, "timeout must be between 0 and 86400 seconds");
    up_conn_t *conn = live_conn(c);
    if (conn != NULL && c->protocol == UP_UPGRADE_WEBSOCKET)
        up_ws_any_set_ping(conn, (unsigned)(s * 1000));
    return seconds;
}

static VALUE Client_protocol(VALUE self)
{
    return get(self)->protocol == UP_UPGRADE_WEBSOCKET ? sym_websocket : sym_sse;
}

/* The pub/sub API's version (reference: truthy). */
static VALUE Client_pubsub_p(VALUE self)
{
    (void)self;
    return INT2FIX(0);
}

void up_rb_init_client(VALUE mUp)
{
    cClient = rb_define_class_under(mUp, "Client", rb_cObject);
    rb_undef_alloc_func(cClient);
    rb_define_method(cClient, "write", Client_write, -1);
    rb_define_method(cClient, "close", Client_close, 0);
    rb_define_method(cClient, "open?", Client_open_p, 0);
    rb_define_method(cClient, "pending", Client_pending, 0);
    rb_define_method(cClient, "env", Client_env, 0);
    rb_define_method(cClient, "handler", Client_handler, 0);
    rb_define_method(cClient, "handler=", Client_set_handler, 1);
    rb_define_method(cClient, "timeout", Client_timeout, 0);
    rb_define_method(cClient, "timeout=", Client_set_timeout, 1);
    rb_define_method(cClient, "protocol", Client_protocol, 0);
    rb_define_method(cClient, "pubsub?", Client_pubsub_p, 0);
    sym_websocket = ID2SYM(rb_intern("websocket"));
    sym_sse = ID2SYM(rb_intern("sse"));
    str_protocol = rb_obj_freeze(rb_str_new_cstr("sec-websocket-protocol"));
    rb_gc_register_mark_object(str_protocol);
    id_on_open = rb_intern("on_open");
    id_on_message = rb_intern("on_message");
    id_on_drained = rb_intern("on_drained");
    id_on_shutdown = rb_intern("on_shutdown");
    id_on_close = rb_intern("on_close");
    id_event = rb_intern("event");
    id_id = rb_intern("id");
    up_rb_init_subscription(mUp, cClient);
}
