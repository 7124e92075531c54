/* rack.hijack (Rack 3.2 SPEC, "Hijacking") and Rack 3's upgrade by a streaming body: the three
 * ways an app takes the raw connection and speaks on it itself.
 *
 *   full hijack     the app calls env["rack.hijack"] during its call and gets the socket; the
 *                   server writes nothing and ignores the response (its body is closed).
 *   partial hijack  the app returns a callable under the "rack.hijack" response header; the
 *                   server writes the status and headers, then calls it with the socket.
 *   101 + callable  the app answers 101 (its own upgrade and connection headers) with a body
 *                   that responds to call and not to each (what async-websocket's Rack adapter
 *                   returns under Puma and Falcon); the server writes the 101 head, then calls
 *                   body.call(socket): a two-way stream for the protocol switched to.
 *
 * In each case the socket is a Ruby IO (TCPSocket, or UNIXSocket on a Unix listener) that the
 * app owns and closes. The engine hands it over only once everything queued before it is on the
 * wire (ex.h, "Hijack"), so the head of a partial hijack or a 101 always precedes the app's
 * first byte. Bytes the client sent after the request (pipelined, or the new protocol's first
 * ones) came on that socket, so they are the app's: they wait in the IO's read buffer
 * (ungetbyte), where read, readpartial, read_nonblock, gets and IO.select find them. A reader
 * that polls the fd itself (nio4r, EventMachine) sees them only with its next readable event;
 * a WebSocket client sends nothing before the 101 it waits for (RFC 6455 §4.1), so for Action
 * Cable and faye-websocket there are none.
 *
 * Over TLS there is no hijack: the session's state lives in the engine, and the socket alone
 * carries records the app could not read. The env says rack.hijack? false and has no
 * rack.hijack (env.c); a response that hands the connection on anyway gets a 500.
 *
 * A hijacked connection is no longer the server's: it does not count in its connections and a
 * graceful stop does not wait for it (as Puma, which forgets a hijacked socket). A partial
 * hijack's callable or a 101 body runs on the app thread, like any app code, for as long as it
 * runs: a stop waits for it until its deadline, as it waits for any app call. */

#include <sys/socket.h>
#include <unistd.h>
#include "binding.h"

typedef struct hijack_t {
    up_rb_server_t *srv;
    up_exchange_t *ex; /* NULL once the request is over */
    VALUE env;
    VALUE io;        /* the socket, once the app took it (nil before) */
} hijack_t;

static VALUE cHijack, cTCPSocket, cUNIXSocket, eClientDisconnected, key_hijack_io,
    key_hijack_header;
static ID id_call, id_close, id_each, id_for_fd, id_ungetbyte, id_closed_p;

/* ---------------------------------------------------------------- Up::Hijack */

static void hijack_mark(void *p)
{
    hijack_t *h = p;
    rb_gc_mark_movable(h->env);
    rb_gc_mark_movable(h->io);
}

static void hijack_compact(void *p)
{
    hijack_t *h = p;
    h->env = rb_gc_location(h->env);
    h->io = rb_gc_location(h->io);
}

static size_t hijack_size(const void *p)
{
    (void)p;
    return sizeof(hijack_t);
}

/* Every request makes an Up::Hijack, so the structs of collected ones are kept for the next
 * ones rather than freed and allocated again. Only threads holding the GVL make them
 * (env.c) and free them (the GC's sweep, or the exit), so the list needs no lock. */
#define SPARE_HIJACKS 64
static hijack_t *spare_hijacks[SPARE_HIJACKS];
static int num_spare_hijacks;

static void hijack_free(void *p)
{
    if (num_spare_hijacks < SPARE_HIJACKS)
        spare_hijacks[num_spare_hijacks++] = p;
    else
        ruby_xfree(p);
}

static const rb_data_type_t hijack_type = {
    .wrap_struct_name = "Up::Hijack",
    .function = {.dmark = hijack_mark, .dfree = hijack_free, .dsize = hijack_size,
                 .dcompact = hijack_compact},
    .flags = RUBY_TYPED_FREE_IMMEDIATELY,
};

VALUE up_rb_hijack_new(up_rb_server_t *srv, up_exchange_t *ex)
{
    /* The object first: the GC neither marks nor frees its NULL data if what follows raises. */
    VALUE obj = TypedData_Wrap_Struct(cHijack, &hijack_type, NULL);
    hijack_t *h = num_spare_hijacks > 0 ? spare_hijacks[--num_spare_hijacks]
                                        : ruby_xmalloc(sizeof(hijack_t));
    DATA_PTR(obj) = h;
    h->srv = srv;
    h->ex = ex;
    h->env = Qnil;
    h->io = Qnil;
    return obj;
}

void up_rb_hijack_set_env(VALUE obj, VALUE env)
{
    ((hijack_t *)RTYPEDDATA_DATA(obj))->env = env;
}

void up_rb_hijack_detach(VALUE obj)
{
    if (!RB_TYPE_P(obj, T_DATA) || !rb_typeddata_is_kind_of(obj, &hijack_type))
        return;
    hijack_t *h = RTYPEDDATA_DATA(obj);
    h->ex = NULL;
    h->env = Qnil;
}

/* ---------------------------------------------------------------- the hand-over */

typedef struct wait_t {
    up_rb_server_t *srv;
    up_exchange_t *ex;
    atomic_int cancelled; /* set by the unblocking function, read by the waiter */
} wait_t;

/* Without the GVL, as the loop's owner: takes the mail (this thread's hijack among it), then
 * runs turns while the output before the hand-over is still being written. */
static void *turn_nogvl(void *arg)
{
    wait_t *w = arg;
    up_conn_loop_take_mail(w->srv->server);
    up_rb_pool_publish(w->srv);
    up_conn_state_t state = up_conn_any_state(w->ex->conn);
    if (state == UP_CONN_LENT || state == UP_CONN_LENT_HIJACKING)
        up_rb_turn(w->srv, -1);
    return NULL;
}

static void *wait_nogvl(void *arg)
{
    wait_t *w = arg;
    up_conn_lent_wait_hijack(w->ex->conn, &w->cancelled);
    return NULL;
}

static void wait_unblock(void *arg)
{
    wait_t *w = arg;
    atomic_store(&w->cancelled, 1);
    up_conn_any_cancel_waits(w->ex->conn);
}

/* Asks the engine for the socket of the lent exchange and waits until what is queued before
 * it (a response head) is written. Returns the fd, now the caller's, or -1 when the client is
 * gone. May raise (the thread interrupted): the socket, if it comes, is closed when the
 * exchange is returned. */
static int hand_over(up_rb_server_t *srv, up_exchange_t *ex)
{
    int wake = up_response_hijack(ex);
    if (wake < 0)
        return -1;
    for (;;) {
        int fd = up_conn_lent_take_socket(ex->conn);
        if (fd != -2)
            return fd;
        wait_t w = {srv, ex, 0};
        /* The loop is run by whoever can: this thread when no other does (then no wake-up is
         * owed: it takes the mail itself), else this thread waits for the one that does. */
        if (up_rb_with_loop(srv, turn_nogvl, &w)) {
            wake = 0;
        } else {
            if (wake > 0)
                up_loop_wake(srv->loop);
            wake = 0;
            rb_thread_call_without_gvl(wait_nogvl, &w, wait_unblock, &w);
        }
        rb_thread_check_ints();
        if (atomic_load(&srv->finished)) {
            /* No turn will come any more: what the loop has not handed over by now closes
             * when the exchange is returned. */
            fd = up_conn_lent_take_socket(ex->conn);
            return fd >= 0 ? fd : -1;
        }
    }
}

typedef struct io_args_t {
    VALUE klass;
    int fd;
} io_args_t;

static VALUE wrap_fd(VALUE arg)
{
    io_args_t *a = (io_args_t *)arg;
    return rb_funcall(a->klass, id_for_fd, 1, INT2NUM(a->fd));
}

/* The socket as a Ruby IO the app owns, holding the bytes the client sent after the request in
 * its read buffer. Raises (and closes fd) if Ruby cannot wrap it. */
static VALUE socket_io(up_exchange_t *ex, int fd)
{
    struct sockaddr_storage addr;
    socklen_t len = sizeof(addr);
    io_args_t a = {cTCPSocket, fd};
    if (getsockname(fd, (struct sockaddr *)&addr, &len) == 0 && addr.ss_family == AF_UNIX)
        a.klass = cUNIXSocket;
    int state = 0;
    VALUE io = rb_protect(wrap_fd, (VALUE)&a, &state);
    if (state != 0) {
        close(fd);
        rb_jump_tag(state);
    }
    up_slice_t unread = up_http1_lent_unread(ex);
    if (unread.len > 0)
        rb_funcall(io, id_ungetbyte, 1, rb_str_new(unread.base, (long)unread.len));
    return io;
}

/* The socket of the lent exchange as an IO; raises IOError when the client is gone. */
static VALUE take_io(up_rb_server_t *srv, up_exchange_t *ex)
{
    int fd = hand_over(srv, ex);
    if (fd < 0)
        rb_raise(eClientDisconnected, "the client closed the connection");
    return socket_io(ex, fd);
}

/* env["rack.hijack"].call: a full hijack. Calling it again returns the same IO. */
static VALUE Hijack_call(VALUE self)
{
    hijack_t *h = rb_check_typeddata(self, &hijack_type);
    if (!NIL_P(h->io))
        return h->io;
    up_exchange_t *ex = h->ex;
    if (ex == NULL)
        rb_raise(rb_eIOError, "rack.hijack called after the request was over");
    const up_response_state_t *res = ex->res;
    /* SPEC: before any headers are written. An interim 103 is over and done with. */
    if (res->head_done || (res->started && !res->finished))
        rb_raise(rb_eIOError, "rack.hijack called after the response began");
    h->io = take_io(h->srv, ex);
    /* Rack 2 apps read the IO from here after the call (Action Cable still falls back to it). */
    if (!NIL_P(h->env))
        rb_hash_aset(h->env, key_hijack_io, h->io);
    return h->io;
}

/* ---------------------------------------------------------------- responses */

static VALUE call_close(VALUE obj)
{
    return rb_funcall(obj, id_close, 0);
}

/* Calls obj.close if it has one and is not closed; what it raises is logged. */
static void close_quietly(up_rb_server_t *srv, VALUE obj, VALUE env)
{
    if (NIL_P(obj) || !rb_respond_to(obj, id_close))
        return;
    if (rb_respond_to(obj, id_closed_p) && RTEST(rb_funcall(obj, id_closed_p, 0)))
        return;
    int state = 0;
    rb_protect(call_close, obj, &state);
    if (state != 0) {
        VALUE err = rb_errinfo();
        rb_set_errinfo(Qnil);
        if (rb_obj_is_kind_of(err, rb_eException))
            up_rb_report(srv, err, env);
    }
}

typedef struct respond_t {
    up_rb_server_t *srv;
    up_exchange_t *ex;
    VALUE env, status, headers, body, callable, io;
    int code;
} respond_t;

/* The callable that takes the connection after the head, or nil for a plain response. */
static VALUE hijack_callable(VALUE status, VALUE headers, VALUE body, int *code)
{
    if (!FIXNUM_P(status) || FIX2LONG(status) < 100 || FIX2LONG(status) > 999)
        return Qnil;
    *code = (int)FIX2LONG(status);
    if (RB_TYPE_P(headers, T_HASH)) {
        VALUE callable = rb_hash_lookup2(headers, key_hijack_header, Qnil);
        if (!NIL_P(callable) && rb_respond_to(callable, id_call))
            return callable;
    }
    /* Rack 3 SPEC, "Streaming Body": only call, so a stream; after a 101, a two-way one. */
    if (*code == 101 && rb_respond_to(body, id_call) && !rb_respond_to(body, id_each))
        return body;
    return Qnil;
}

/* Under rb_protect: the head, the hand-over, then the callable with the socket. */
static VALUE respond_with_socket(VALUE arg)
{
    respond_t *r = (respond_t *)arg;
    up_exchange_t *ex = r->ex;
    up_response_start(ex, r->code);
    VALUE message = Qnil;
    if (up_rb_add_headers(ex, r->headers, &message) != 0) {
        up_response_rollback(ex);
        up_response_send_simple(ex, 500, "Internal Server Error: the app's response was invalid",
                                1);
        rb_exc_raise(rb_exc_new_str(rb_eArgError, message));
    }
    /* The app frames what it writes, or the close ends it: no length or chunks of ours, unless
     * the app gave a content-length itself, and never another request on this connection (a
     * 101 keeps the app's connection: upgrade). */
    ex->res->keep_alive = 0;
    up_response_end_head(ex, ex->res->content_length >= 0 ? -1 : UP_RESPONSE_OPEN_STREAM);
    r->io = take_io(r->srv, ex);
    rb_funcall(r->callable, id_call, 1, r->io);
    return Qnil;
}

int up_rb_hijack_respond(up_rb_server_t *srv, up_exchange_t *ex, VALUE hijack, VALUE response,
                         VALUE env, VALUE *status_out, VALUE *headers_out, VALUE *error_out)
{
    if (!RB_TYPE_P(response, T_ARRAY) || RARRAY_LEN(response) != 3)
        return 0;
    VALUE status = RARRAY_AREF(response, 0), headers = RARRAY_AREF(response, 1),
          body = RARRAY_AREF(response, 2);
    int full = RB_TYPE_P(hijack, T_DATA) && rb_typeddata_is_kind_of(hijack, &hijack_type) &&
               !NIL_P(((hijack_t *)RTYPEDDATA_DATA(hijack))->io);
    respond_t r = {srv, ex, env, status, headers, body, Qnil, Qnil, 0};
    if (!full) {
        r.callable = hijack_callable(status, headers, body, &r.code);
        if (NIL_P(r.callable))
            return 0;
        int state = 0;
        if (ex->conn->transport->detach == NULL) {
            /* TLS: the socket carries records only the engine can read (env.c offers no
             * hijack there); the app answered as if it could, which is its error. */
            VALUE err = rb_exc_new_cstr(rb_eNotImpError,
                                        "the response hands the connection to a callable, "
                                        "but this connection cannot be hijacked (TLS: "
                                        "rack.hijack? is false)");
            up_rb_report(srv, err, env);
            up_response_send_simple(ex, 500, "Internal Server Error", 1);
            *error_out = err;
        } else {
            rb_protect(respond_with_socket, (VALUE)&r, &state);
        }
        if (state != 0) {
            VALUE err = rb_errinfo();
            rb_set_errinfo(Qnil);
            if (!rb_obj_is_kind_of(err, rb_eException))
                err = rb_exc_new_cstr(rb_eRuntimeError, "the hijacked response was interrupted");
            if (!rb_obj_is_kind_of(err, eClientDisconnected))
                up_rb_report(srv, err, env);
            *error_out = err;
            close_quietly(srv, r.io, env); /* the app's to close, unless it failed first */
        }
    }
    *status_out = status;
    *headers_out = headers;
    /* SPEC: the body is ignored, and closed as every body is (after a 101 it is the callable,
     * which has no close unless it is a body object of its own). */
    close_quietly(srv, body, env);
    return 1;
}

void up_rb_init_hijack(VALUE mUp)
{
    id_call = rb_intern("call");
    id_close = rb_intern("close");
    id_each = rb_intern("each");
    id_for_fd = rb_intern("for_fd");
    id_ungetbyte = rb_intern("ungetbyte");
    id_closed_p = rb_intern("closed?");
    rb_require("socket");
    cTCPSocket = rb_path2class("TCPSocket");
    cUNIXSocket = rb_path2class("UNIXSocket");
    eClientDisconnected = rb_const_get(mUp, rb_intern("ClientDisconnected")); /* body.c's */
    key_hijack_io = rb_obj_freeze(rb_str_new_cstr("rack.hijack_io"));
    rb_gc_register_mark_object(key_hijack_io);
    key_hijack_header = rb_obj_freeze(rb_str_new_cstr("rack.hijack"));
    rb_gc_register_mark_object(key_hijack_header);
    cHijack = rb_define_class_under(mUp, "Hijack", rb_cObject);
    rb_undef_alloc_func(cHijack);
    rb_define_method(cHijack, "call", Hijack_call, 0);
}
