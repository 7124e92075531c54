/* Walks a Rack response back into the response writer: checks the status and the headers,
 * then sends the body by the fastest route it offers (Array parts with a computed length, a
 * file through sendfile, each, or a streaming call), and calls close exactly once on every
 * path. Anything invalid found before a byte is on the wire becomes a clean 500. */

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include "binding.h"
#include "handlers/file_response.h"

static ID id_each, id_call, id_close, id_to_path, id_to_ary;
static VALUE eClientDisconnected, eInvalidResponse;
/* Response field names the binding looks up (Rack 3 names are lower case). */
static VALUE key_x_sendfile, key_content_type, key_etag, key_last_modified, key_content_encoding;

static VALUE frozen(const char *s)
{
    VALUE str = rb_obj_freeze(rb_str_new_cstr(s));
    rb_gc_register_mark_object(str);
    return str;
}

/* ---------------------------------------------------------------- sending */

/* Without the GVL: the loop's owner writes what was posted. */
static void *write_posted(void *arg)
{
    up_rb_server_t *srv = arg;
    up_conn_loop_take_mail(srv->server);
    up_rb_pool_publish(srv); /* what taking the mail found (a client's events) */
    return NULL;
}

int up_rb_hand_over(up_rb_server_t *srv, up_exchange_t *ex)
{
    /* Posted while this thread holds the GVL, which orders the threads writing one stream;
     * then written by this thread when no other runs the loop (with one app thread, nobody
     * else would while the body makes its next part), else by the one that does. */
    int wake = up_response_post(ex);
    if (wake < 0)
        return -1;
    if (!up_rb_with_loop(srv, write_posted, srv) && wake)
        up_loop_wake(srv->loop);
    return up_conn_any_broken(ex->conn) ? -1 : 0;
}

int up_rb_send(up_rb_server_t *srv, up_exchange_t *ex)
{
    if (up_rb_hand_over(srv, ex) != 0)
        return -1;
    if (up_exchange_backlog(ex) <= UP_CONN_BACKLOG_LIMIT)
        return 0;
    /* Back-pressure on this producer only. */
    return up_rb_pool_wait_drain(srv, ex);
}

/* ---------------------------------------------------------------- headers */

typedef struct header_ctx_t {
    up_exchange_t *ex;
    const char *const *skip; /* lower-case names not to send, NULL-terminated; NULL for none */
    const up_file_response_t *file; /* a file response: the fields it keeps; NULL for none */
    VALUE message;
    /* Where to put the value of an x-sendfile field in another case than the lower one the
     * caller looked up (the walk stops there); NULL to send such a field as any other. */
    VALUE *sendfile;
} header_ctx_t;

/* Whether name (any case) is one of skip. */
static int skipped(const char *const *skip, VALUE name)
{
    if (skip == NULL)
        return 0;
    size_t len = (size_t)RSTRING_LEN(name);
    for (; *skip != NULL; skip++) {
        if (strlen(*skip) == len && strncasecmp(*skip, RSTRING_PTR(name), len) == 0)
            return 1;
    }
    return 0;
}

static int add_value(header_ctx_t *ctx, VALUE name, VALUE value)
{
    if (FIXNUM_P(value))
        value = rb_fix2str(value, 10);
    if (!RB_TYPE_P(value, T_STRING)) {
        ctx->message = rb_sprintf("the value of response header %+" PRIsVALUE " is a %" PRIsVALUE
                                  ", not a String",
                                  name, rb_obj_class(value));
        return -1;
    }
    const char *p = RSTRING_PTR(value), *end = p + RSTRING_LEN(value);
    /* Rack 2 joined repeated fields with "\n": one field line per part. */
    for (;;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *stop = nl != NULL ? nl : end;
        up_response_error_t err = up_response_add_header(
            ctx->ex, RSTRING_PTR(name), (size_t)RSTRING_LEN(name), p, (size_t)(stop - p));
        if (err == UP_RESPONSE_E_BAD_HEADER_NAME) {
            ctx->message = rb_sprintf("invalid response header name %+" PRIsVALUE, name);
            return -1;
        }
        if (err == UP_RESPONSE_E_BAD_HEADER_VALUE) {
            ctx->message = rb_sprintf("the value of response header %+" PRIsVALUE
                                      " has CR, LF or NUL",
                                      name);
            return -1;
        }
        if (err == UP_RESPONSE_E_BAD_CONTENT_LENGTH) {
            ctx->message = rb_sprintf("invalid content-length %+" PRIsVALUE, value);
            return -1;
        }
        if (nl == NULL)
            return 0;
        p = nl + 1;
    }
}

static int header_i(VALUE name, VALUE value, VALUE arg)
{
    header_ctx_t *ctx = (header_ctx_t *)arg;
    if (!RB_TYPE_P(name, T_STRING)) {
        ctx->message = rb_sprintf("response header name %+" PRIsVALUE " is not a String", name);
        return ST_STOP;
    }
    if (RSTRING_LEN(name) >= 5 && memcmp(RSTRING_PTR(name), "rack.", 5) == 0)
        return ST_CONTINUE; /* messages to the server, never sent */
    if (NIL_P(value) || skipped(ctx->skip, name))
        return ST_CONTINUE;
    if (ctx->sendfile != NULL && RSTRING_LEN(name) == 10 &&
        strncasecmp(RSTRING_PTR(name), "x-sendfile", 10) == 0) {
        *ctx->sendfile = value;
        return ST_STOP;
    }
    if (ctx->file != NULL &&
        !up_file_response_keeps(ctx->file, RSTRING_PTR(name), (size_t)RSTRING_LEN(name)))
        return ST_CONTINUE;
    if (RB_TYPE_P(value, T_ARRAY)) {
        for (long i = 0; i < RARRAY_LEN(value); i++) {
            if (add_value(ctx, name, RARRAY_AREF(value, i)) != 0)
                return ST_STOP;
        }
        return ST_CONTINUE;
    }
    return add_value(ctx, name, value) == 0 ? ST_CONTINUE : ST_STOP;
}

int up_rb_add_headers(up_exchange_t *ex, VALUE headers, VALUE *message)
{
    return up_rb_add_headers_except(ex, headers, NULL, message);
}

static int add_headers(header_ctx_t ctx, VALUE headers, VALUE *message)
{
    if (!RB_TYPE_P(headers, T_HASH)) {
        *message = rb_sprintf("response headers are a %" PRIsVALUE ", not a Hash",
                              rb_obj_class(headers));
        return -1;
    }
    rb_hash_foreach(headers, header_i, (VALUE)&ctx);
    if (NIL_P(ctx.message))
        return 0;
    *message = ctx.message;
    return -1;
}

int up_rb_add_headers_except(up_exchange_t *ex, VALUE headers, const char *const *skip,
                             VALUE *message)
{
    header_ctx_t ctx = {ex, skip, NULL, Qnil, NULL};
    return add_headers(ctx, headers, message);
}

/* ---------------------------------------------------------------- body */

/* Parts at least this large are queued by reference, not copied (shared_string.c). */
#define SHARE_MIN (32 * 1024)

typedef struct walk_t {
    up_rb_server_t *srv;
    up_exchange_t *ex;
    VALUE env;
    VALUE body;
    VALUE stream;
} walk_t;

static void check_part(VALUE part)
{
    if (!RB_TYPE_P(part, T_STRING))
        rb_raise(eInvalidResponse, "the body yielded a %" PRIsVALUE ", not a String",
                 rb_obj_class(part));
}

int up_rb_queue_part(up_rb_server_t *srv, up_exchange_t *ex, VALUE part)
{
    size_t len = (size_t)RSTRING_LEN(part);
    up_response_error_t err;
    if (len >= SHARE_MIN && !ex->res->head_only && !ex->res->no_body) {
        up_shared_t *shared = up_rb_shared_string(srv, part);
        err = up_response_write_shared(ex, shared, 0, len);
        up_shared_release(shared);
    } else {
        err = up_response_write(ex, RSTRING_PTR(part), len);
    }
    return err == UP_RESPONSE_OK ? 0 : -1;
}

static void queue_part(walk_t *w, VALUE part)
{
    if (up_rb_queue_part(w->srv, w->ex, part) != 0)
        rb_raise(eClientDisconnected, "the client closed the connection");
}

static VALUE each_part(RB_BLOCK_CALL_FUNC_ARGLIST(part, arg))
{
    walk_t *w = (walk_t *)arg;
    check_part(part);
    queue_part(w, part);
    /* Each part goes out as it is made (SSE, long polling, progress), not when the body ends;
     * parts made within one loop turn still leave in one write. */
    if (up_rb_send(w->srv, w->ex) != 0)
        rb_raise(eClientDisconnected, "the client closed the connection");
    return Qnil;
}

/* The length of an Array body of Strings, or -1 when a part is not a String. */
static int64_t parts_length(VALUE parts)
{
    int64_t total = 0;
    for (long i = 0; i < RARRAY_LEN(parts); i++) {
        VALUE part = RARRAY_AREF(parts, i);
        if (!RB_TYPE_P(part, T_STRING))
            return -1;
        total += RSTRING_LEN(part);
    }
    return total;
}

static void send_parts(walk_t *w, VALUE parts)
{
    int64_t total = parts_length(parts);
    for (long i = 0; total < 0 && i < RARRAY_LEN(parts); i++)
        check_part(RARRAY_AREF(parts, i));
    up_response_end_head(w->ex, total);
    for (long i = 0; i < RARRAY_LEN(parts); i++)
        queue_part(w, RARRAY_AREF(parts, i));
}

/* The parts of an Array body or of one that can be one (to_ary), else nil. */
static VALUE body_parts(VALUE body)
{
    if (RB_TYPE_P(body, T_ARRAY))
        return body;
    if (!rb_respond_to(body, id_to_ary))
        return Qnil;
    VALUE parts = rb_check_array_type(rb_funcall(body, id_to_ary, 0));
    if (NIL_P(parts))
        rb_raise(eInvalidResponse, "the body's to_ary returned no Array");
    return parts;
}

static VALUE run_stream(VALUE arg)
{
    walk_t *w = (walk_t *)arg;
    rb_funcall(w->body, id_call, 1, w->stream);
    return Qnil;
}

static VALUE detach_stream(VALUE arg)
{
    up_rb_stream_detach(((walk_t *)arg)->stream);
    return Qnil;
}

/* Sends the body by the fastest route it offers. Raises on anything invalid. */
static void send_body(walk_t *w)
{
    up_exchange_t *ex = w->ex;
    VALUE body = w->body;
    if (ex->res->no_body || ex->res->head_only) {
        /* HEAD gets the length GET would have, when that is known without running the body
         * (an Array, or a wrapper that can be one: Rack::BodyProxy, Rack::Lint). */
        VALUE parts = ex->res->head_only ? body_parts(body) : Qnil;
        up_response_end_head(ex, NIL_P(parts) ? -1 : parts_length(parts));
        return;
    }
    VALUE parts = body_parts(body);
    if (!NIL_P(parts)) {
        send_parts(w, parts);
        return;
    }
    if (rb_respond_to(body, id_each)) {
        up_response_end_head(ex, -1);
        rb_block_call(body, id_each, 0, NULL, each_part, (VALUE)w);
        return;
    }
    if (rb_respond_to(body, id_call)) {
        up_response_end_head(ex, -1);
        w->stream = up_rb_stream_new(w->srv, ex, rb_hash_aref(w->env, up_rb_key_rack_input));
        rb_ensure(run_stream, (VALUE)w, detach_stream, (VALUE)w);
        return;
    }
    rb_raise(eInvalidResponse, "the body (a %" PRIsVALUE ") responds to neither each nor call",
             rb_obj_class(body));
}

static void parse_status(VALUE status, int *code)
{
    if (FIXNUM_P(status)) {
        long n = FIX2LONG(status);
        if (n >= 200 && n <= 999) {
            *code = (int)n;
            return;
        }
    } else if (RB_TYPE_P(status, T_STRING) && RSTRING_LEN(status) == 3) {
        /* Rack 2 servers called to_i; a few old apps still return "200". */
        const char *s = RSTRING_PTR(status);
        if (s[0] >= '2' && s[0] <= '9' && s[1] >= '0' && s[1] <= '9' && s[2] >= '0' &&
            s[2] <= '9') {
            *code = (s[0] - '0') * 100 + (s[1] - '0') * 10 + (s[2] - '0');
            return;
        }
    }
    /* 1xx cannot end a response: interim ones go through rack.early_hints. */
    rb_raise(eInvalidResponse, "invalid response status %+" PRIsVALUE, status);
}

typedef struct write_t {
    walk_t walk;
    VALUE response, status, headers;
    up_file_response_t file; /* a file the engine sends; released after the response */
} write_t;

/* ---------------------------------------------------------------- files (file_response.h) */

/* The file a response leaves to the engine: the path in its x-sendfile field (*from_field set),
 * or its body's to_path when the body is no Array of parts; nil for none, and for a status that
 * has no body. */
static VALUE file_path(write_t *wr, int code, int *from_field)
{
    VALUE path = RB_TYPE_P(wr->headers, T_HASH) ? rb_hash_lookup2(wr->headers, key_x_sendfile, Qnil)
                                                : Qnil;
    *from_field = !NIL_P(path);
    if (code == 204 || code == 304)
        return Qnil;
    if (*from_field)
        return path;
    VALUE body = wr->walk.body;
    if (RB_TYPE_P(body, T_ARRAY) || !rb_respond_to(body, id_to_path) ||
        rb_respond_to(body, id_to_ary))
        return Qnil;
    return rb_funcall(body, id_to_path, 0);
}

/* A String field of the response as a slice that lives while the headers do; NULL base when
 * absent or not a String (the header walk reports that one). */
static up_slice_t field(VALUE headers, VALUE key)
{
    VALUE v = rb_hash_lookup2(headers, key, Qnil);
    if (!RB_TYPE_P(v, T_STRING))
        return (up_slice_t){NULL, 0};
    return (up_slice_t){RSTRING_PTR(v), (size_t)RSTRING_LEN(v)};
}

/* Sends the file at path as the response, the engine deciding the status from the request and
 * the app's (file_response.h). Returns 1 when the response was made, 0 to send the body as
 * usual (a to_path that names no file we can open: each still can). A path from x-sendfile
 * that cannot be opened is the app's mistake: logged, and answered 404 when there is no such
 * file, 500 otherwise. */
static int send_file(write_t *wr, int code, VALUE path, int from_field)
{
    up_exchange_t *ex = wr->walk.ex;
    if (!RB_TYPE_P(path, T_STRING)) {
        if (from_field)
            rb_raise(eInvalidResponse, "x-sendfile is a %" PRIsVALUE ", not a String",
                     rb_obj_class(path));
        return 0;
    }
    if (up_file_response_open(&wr->file, StringValueCStr(path)) != 0) {
        if (!from_field)
            return 0;
        int e = errno;
        up_rb_report(wr->walk.srv,
                     rb_exc_new_str(eInvalidResponse,
                                    rb_sprintf("x-sendfile %+" PRIsVALUE ": %s", path, strerror(e))),
                     wr->walk.env);
        int missing = e == ENOENT || e == ENOTDIR;
        up_response_send_simple(ex, missing ? 404 : 500,
                                missing ? "Not Found" : "Internal Server Error", 0);
        return 1;
    }
    VALUE headers = wr->headers;
    up_file_app_t app = {code, {NULL, 0}, {NULL, 0}, {NULL, 0}, {NULL, 0}};
    if (RB_TYPE_P(headers, T_HASH)) {
        app.content_type = field(headers, key_content_type);
        app.etag = field(headers, key_etag);
        app.last_modified = field(headers, key_last_modified);
        app.content_encoding = field(headers, key_content_encoding);
    }
    up_file_response_plan(&wr->file, &ex->req->head, &app, time(NULL));
    up_response_start(ex, wr->file.status);
    header_ctx_t ctx = {ex, NULL, &wr->file, Qnil, NULL};
    VALUE message = Qnil;
    if (add_headers(ctx, headers, &message) != 0)
        rb_exc_raise(rb_exc_new_str(eInvalidResponse, message));
    up_file_response_send(&wr->file, ex);
    return 1;
}

/* Under rb_protect: whatever raises in here (the body's methods, respond_to?, a to_path with
 * a NUL) becomes the error of this response and never leaves the binding. */
static VALUE write_all(VALUE arg)
{
    write_t *wr = (write_t *)arg;
    VALUE response = wr->response;
    if (!RB_TYPE_P(response, T_ARRAY) || RARRAY_LEN(response) != 3)
        rb_raise(eInvalidResponse, "the app returned %+" PRIsVALUE
                                   " instead of [status, headers, body]",
                 response);
    wr->status = RARRAY_AREF(response, 0);
    wr->headers = RARRAY_AREF(response, 1);
    wr->walk.body = RARRAY_AREF(response, 2);
    int code = 0;
    parse_status(wr->status, &code);
    int from_field = 0;
    VALUE path = file_path(wr, code, &from_field);
    /* x-sendfile is a message to the server, never sent on (a path on the server's disk). */
    static const char *const no_sendfile[] = {"x-sendfile", NULL};
    for (;;) {
        if (!NIL_P(path) && send_file(wr, code, path, from_field))
            return Qnil;
        up_response_start(wr->walk.ex, code);
        /* Rack 3 names fields in lower case, and the lookup above is that fast one; a Rack 2
         * app spells it X-Sendfile, and field names are case-insensitive (RFC 9110 §5.1), as
         * nginx, Apache and lighttpd read their backends' X-Sendfile and X-Accel-Redirect.
         * The header walk, which looks at every name anyway, finds such a spelling; then the
         * head staged so far is dropped and the response made again from the file. */
        VALUE other = Qnil;
        VALUE message = Qnil;
        header_ctx_t ctx = {wr->walk.ex, from_field ? no_sendfile : NULL, NULL, Qnil,
                            from_field ? NULL : &other};
        if (add_headers(ctx, wr->headers, &message) != 0)
            rb_exc_raise(rb_exc_new_str(eInvalidResponse, message));
        if (NIL_P(other))
            break;
        up_response_rollback(wr->walk.ex);
        from_field = 1;
        path = code == 204 || code == 304 ? Qnil : other;
    }
    send_body(&wr->walk);
    up_response_finish(wr->walk.ex);
    return Qnil;
}

static VALUE run_close(VALUE body)
{
    return rb_funcall(body, id_close, 0);
}

static VALUE check_close(VALUE body)
{
    return rb_respond_to(body, id_close) ? run_close(body) : Qnil;
}

/* Returns the exception raised by f(arg), or Qnil. */
static VALUE protect(VALUE (*f)(VALUE), VALUE arg)
{
    int state = 0;
    rb_protect(f, arg, &state);
    if (state == 0)
        return Qnil;
    VALUE err = rb_errinfo();
    rb_set_errinfo(Qnil);
    if (!rb_obj_is_kind_of(err, rb_eException))
        err = rb_exc_new_cstr(rb_eRuntimeError, "the response was interrupted");
    return err;
}

VALUE up_rb_write_response(up_rb_server_t *srv, up_exchange_t *ex, VALUE env, VALUE response,
                           VALUE *status_out, VALUE *headers_out)
{
    write_t wr = {{srv, ex, env, Qnil, Qnil}, response, Qnil, Qnil, {0}};
    VALUE err = protect(write_all, (VALUE)&wr);
    up_file_response_release(&wr.file); /* when something raised before it was sent */
    *status_out = wr.status;
    *headers_out = wr.headers;
    if (!NIL_P(wr.walk.body)) {
        VALUE close_err = protect(check_close, wr.walk.body);
        if (NIL_P(err))
            err = close_err;
    }
    if (NIL_P(err))
        return Qnil;
    if (!rb_obj_is_kind_of(err, eClientDisconnected))
        up_rb_report(srv, err, env);
    if (up_response_rollback(ex) && !up_conn_any_broken(ex->conn)) {
        int is_invalid = rb_obj_is_kind_of(err, eInvalidResponse);
        up_response_send_simple(ex, 500,
                                is_invalid ? "Internal Server Error: the app's response was invalid"
                                           : "Internal Server Error",
                                0);
    }
    return err;
}

void up_rb_init_body(VALUE mUp)
{
    id_each = rb_intern("each");
    id_call = rb_intern("call");
    id_close = rb_intern("close");
    id_to_path = rb_intern("to_path");
    id_to_ary = rb_intern("to_ary");
    key_x_sendfile = frozen("x-sendfile");
    key_content_type = frozen("content-type");
    key_etag = frozen("etag");
    key_last_modified = frozen("last-modified");
    key_content_encoding = frozen("content-encoding");
    eClientDisconnected = rb_define_class_under(mUp, "ClientDisconnected", rb_eIOError);
    eInvalidResponse = rb_define_class_under(mUp, "InvalidResponse", rb_eRuntimeError);
}
