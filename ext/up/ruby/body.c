/* Walks a Rack response back into the response writer: checks the status and the headers,
 * then sends the body by the fastest route it offers (Array parts with a computed length, a
 * file through sendfile, each, or a streaming call), and calls close exactly once on every
 * path. Anything invalid found before a byte is on the wire becomes a clean 500. */

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "binding.h"

static ID id_each, id_call, id_close, id_to_path, id_to_ary;
static VALUE eClientDisconnected, eInvalidResponse;

/* ---------------------------------------------------------------- flushing */

static void *flush_nogvl(void *conn)
{
    return (void *)(intptr_t)up_conn_flush_wait(conn);
}

int up_rb_flush(up_conn_t *conn)
{
    if (up_conn_pending(conn) == 0)
        return conn->broken ? -1 : 0;
    /* Without the GVL: only conn's own buffers are touched, no Ruby object. */
    return (int)(intptr_t)rb_thread_call_without_gvl(flush_nogvl, conn, NULL, NULL);
}

/* ---------------------------------------------------------------- headers */

typedef struct header_ctx_t {
    up_conn_t *conn;
    VALUE message;
} header_ctx_t;

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
            ctx->conn, RSTRING_PTR(name), (size_t)RSTRING_LEN(name), p, (size_t)(stop - p));
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
    if (NIL_P(value))
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

int up_rb_add_headers(up_conn_t *conn, VALUE headers, VALUE *message)
{
    header_ctx_t ctx = {conn, Qnil};
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

/* ---------------------------------------------------------------- body */

typedef struct walk_t {
    up_conn_t *conn;
    VALUE body;
    VALUE env;
    VALUE stream;
} walk_t;

static VALUE invalid(const char *fmt, VALUE arg)
{
    VALUE msg = rb_sprintf(fmt, arg);
    return rb_exc_new_str(eInvalidResponse, msg);
}

static void write_part(up_conn_t *conn, VALUE part)
{
    if (!RB_TYPE_P(part, T_STRING))
        rb_raise(eInvalidResponse, "the body yielded a %" PRIsVALUE ", not a String",
                 rb_obj_class(part));
    if (up_response_write(conn, RSTRING_PTR(part), (size_t)RSTRING_LEN(part)) != UP_RESPONSE_OK)
        rb_raise(eClientDisconnected, "the client closed the connection");
    if (up_conn_pending(conn) > UP_OUTPUT_HIGH_WATER && up_rb_flush(conn) != 0)
        rb_raise(eClientDisconnected, "the client closed the connection");
}

static VALUE each_part(RB_BLOCK_CALL_FUNC_ARGLIST(part, arg))
{
    write_part((up_conn_t *)arg, part);
    return Qnil;
}

static VALUE run_each(VALUE arg)
{
    walk_t *w = (walk_t *)arg;
    rb_block_call(w->body, id_each, 0, NULL, each_part, (VALUE)w->conn);
    return Qnil;
}

static VALUE run_call(VALUE arg)
{
    walk_t *w = (walk_t *)arg;
    w->stream = up_rb_stream_new(w->conn, rb_hash_aref(w->env, up_rb_key_rack_input));
    rb_funcall(w->body, id_call, 1, w->stream);
    return Qnil;
}

static VALUE run_close(VALUE body)
{
    return rb_funcall(body, id_close, 0);
}

static VALUE run_to_path(VALUE body)
{
    return rb_funcall(body, id_to_path, 0);
}

static VALUE run_to_ary(VALUE body)
{
    return rb_check_array_type(rb_funcall(body, id_to_ary, 0));
}

/* Returns the exception raised by f(arg), or Qnil. */
static VALUE protect(VALUE (*f)(VALUE), VALUE arg, VALUE *result)
{
    int state = 0;
    VALUE r = rb_protect(f, arg, &state);
    if (result != NULL)
        *result = r;
    if (state == 0)
        return Qnil;
    VALUE err = rb_errinfo();
    rb_set_errinfo(Qnil);
    if (!rb_obj_is_kind_of(err, rb_eException))
        err = rb_exc_new_cstr(rb_eRuntimeError, "the body was interrupted");
    return err;
}

static VALUE send_parts(up_conn_t *conn, VALUE parts)
{
    int64_t total = 0;
    for (long i = 0; i < RARRAY_LEN(parts); i++) {
        VALUE part = RARRAY_AREF(parts, i);
        if (!RB_TYPE_P(part, T_STRING))
            return invalid("the body has a %" PRIsVALUE ", not a String", rb_obj_class(part));
        total += RSTRING_LEN(part);
    }
    up_response_end_head(conn, total);
    for (long i = 0; i < RARRAY_LEN(parts); i++) {
        VALUE part = RARRAY_AREF(parts, i);
        if (up_response_write(conn, RSTRING_PTR(part), (size_t)RSTRING_LEN(part)) !=
            UP_RESPONSE_OK)
            return rb_exc_new_cstr(eClientDisconnected, "the client closed the connection");
    }
    return Qnil;
}

/* Returns 1 when the file was queued, 0 to fall back to each. */
static int send_file(up_conn_t *conn, VALUE path)
{
    if (!RB_TYPE_P(path, T_STRING))
        return 0;
    int fd = open(StringValueCStr(path), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return 0;
    }
    up_response_end_head(conn, (int64_t)st.st_size);
    up_response_sendfile(conn, fd, 0, (uint64_t)st.st_size);
    return 1;
}

static VALUE send_body(walk_t *w)
{
    up_conn_t *conn = w->conn;
    VALUE body = w->body, err, result;
    if (conn->res.no_body || conn->res.head_only) {
        /* HEAD gets the length GET would have, when that is known without running the body. */
        int64_t total = -1;
        if (conn->res.head_only && RB_TYPE_P(body, T_ARRAY)) {
            total = 0;
            for (long i = 0; i < RARRAY_LEN(body) && total >= 0; i++) {
                VALUE part = RARRAY_AREF(body, i);
                total = RB_TYPE_P(part, T_STRING) ? total + RSTRING_LEN(part) : -1;
            }
        }
        up_response_end_head(conn, total);
        return Qnil;
    }
    if (RB_TYPE_P(body, T_ARRAY))
        return send_parts(conn, body);
    if (rb_respond_to(body, id_to_ary)) {
        err = protect(run_to_ary, body, &result);
        if (!NIL_P(err))
            return err;
        if (!NIL_P(result))
            return send_parts(conn, result);
    }
    if (rb_respond_to(body, id_to_path)) {
        err = protect(run_to_path, body, &result);
        if (!NIL_P(err))
            return err;
        if (send_file(conn, result))
            return Qnil;
    }
    if (rb_respond_to(body, id_each)) {
        up_response_end_head(conn, -1);
        return protect(run_each, (VALUE)w, NULL);
    }
    if (rb_respond_to(body, id_call)) {
        up_response_end_head(conn, -1);
        err = protect(run_call, (VALUE)w, NULL);
        if (!NIL_P(w->stream))
            up_rb_stream_detach(w->stream);
        return err;
    }
    return invalid("the body (a %" PRIsVALUE ") responds to neither each nor call",
                   rb_obj_class(body));
}

static VALUE parse_status(VALUE status, int *code)
{
    if (FIXNUM_P(status)) {
        long n = FIX2LONG(status);
        if (n >= 200 && n <= 999) {
            *code = (int)n;
            return Qnil;
        }
    } else if (RB_TYPE_P(status, T_STRING) && RSTRING_LEN(status) == 3) {
        /* Rack 2 servers called to_i; a few old apps still return "200". */
        const char *s = RSTRING_PTR(status);
        if (s[0] >= '2' && s[0] <= '9' && s[1] >= '0' && s[1] <= '9' && s[2] >= '0' &&
            s[2] <= '9') {
            *code = (s[0] - '0') * 100 + (s[1] - '0') * 10 + (s[2] - '0');
            return Qnil;
        }
    }
    /* 1xx cannot end a response: interim ones go through rack.early_hints. */
    return invalid("invalid response status %+" PRIsVALUE, status);
}

static VALUE write_all(up_conn_t *conn, VALUE env, VALUE response, VALUE *status_out,
                       VALUE *headers_out, VALUE *body_out)
{
    if (!RB_TYPE_P(response, T_ARRAY) || RARRAY_LEN(response) != 3)
        return invalid("the app returned %+" PRIsVALUE " instead of [status, headers, body]",
                       response);
    VALUE status = RARRAY_AREF(response, 0), headers = RARRAY_AREF(response, 1);
    *body_out = RARRAY_AREF(response, 2);
    *status_out = status;
    *headers_out = headers;
    int code = 0;
    VALUE err = parse_status(status, &code);
    if (!NIL_P(err))
        return err;
    up_response_start(conn, code);
    VALUE message = Qnil;
    if (up_rb_add_headers(conn, headers, &message) != 0)
        return rb_exc_new_str(eInvalidResponse, message);
    walk_t w = {conn, *body_out, env, Qnil};
    err = send_body(&w);
    if (NIL_P(err))
        up_response_finish(conn);
    return err;
}

VALUE up_rb_write_response(up_rb_server_t *srv, up_conn_t *conn, VALUE env, VALUE response,
                           VALUE *status_out, VALUE *headers_out)
{
    VALUE body = Qnil;
    VALUE err = write_all(conn, env, response, status_out, headers_out, &body);
    if (!NIL_P(body) && rb_respond_to(body, id_close)) {
        VALUE close_err = protect(run_close, body, NULL);
        if (NIL_P(err))
            err = close_err;
    }
    if (NIL_P(err))
        return Qnil;
    if (!rb_obj_is_kind_of(err, eClientDisconnected))
        up_rb_report(srv, err, env);
    if (up_response_rollback(conn) && !conn->broken) {
        int is_invalid = rb_obj_is_kind_of(err, eInvalidResponse);
        up_response_send_simple(conn, 500,
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
    eClientDisconnected = rb_define_class_under(mUp, "ClientDisconnected", rb_eIOError);
    eInvalidResponse = rb_define_class_under(mUp, "InvalidResponse", rb_eRuntimeError);
}
