/* One request through the app: build the env, call the app under rb_protect, write its
 * response, run rack.response_finished. Nothing raised here crosses into the engine: an
 * exception becomes a logged 500 and the worker goes on serving. */

#include "binding.h"

static ID id_call, id_report_exception;

typedef struct call_t {
    up_rb_server_t *srv;
    up_exchange_t *ex;
    VALUE env;
    up_rb_env_parts_t parts;
} call_t;

static VALUE build_env(VALUE arg)
{
    call_t *c = (call_t *)arg;
    return up_rb_env_build(c->srv, c->ex, &c->parts);
}

static VALUE call_app(VALUE arg)
{
    call_t *c = (call_t *)arg;
    return rb_funcall(c->srv->app, id_call, 1, c->env);
}

static VALUE take_error(void)
{
    VALUE err = rb_errinfo();
    rb_set_errinfo(Qnil);
    if (!rb_obj_is_kind_of(err, rb_eException))
        err = rb_exc_new_cstr(rb_eRuntimeError, "the app call was interrupted");
    return err;
}

typedef struct report_t {
    up_rb_server_t *srv;
    VALUE error;
    VALUE env;
} report_t;

static VALUE run_report(VALUE arg)
{
    report_t *r = (report_t *)arg;
    return rb_funcall(r->srv->self, id_report_exception, 2, r->error, r->env);
}

void up_rb_report(up_rb_server_t *srv, VALUE error, VALUE env)
{
    report_t r = {srv, error, env};
    int state = 0;
    rb_protect(run_report, (VALUE)&r, &state);
    if (state != 0)
        rb_set_errinfo(Qnil); /* a broken logger must not take the worker down */
}

typedef struct finished_t {
    up_rb_server_t *srv;
    VALUE callbacks, env, status, headers, error;
} finished_t;

static VALUE run_one_callback(VALUE arg)
{
    VALUE *argv = (VALUE *)arg;
    return rb_funcall(argv[0], id_call, 4, argv[1], argv[2], argv[3], argv[4]);
}

/* rack.response_finished: each callable, in reverse order, after the response is written. */
static void run_response_finished(finished_t *f)
{
    for (long i = RARRAY_LEN(f->callbacks) - 1; i >= 0; i--) {
        VALUE argv[5] = {RARRAY_AREF(f->callbacks, i), f->env, f->status, f->headers, f->error};
        int state = 0;
        rb_protect(run_one_callback, (VALUE)argv, &state);
        if (state != 0)
            up_rb_report(f->srv, take_error(), f->env);
    }
}

void up_rb_access_log_request(up_rb_server_t *srv, up_exchange_t *ex, uint64_t started_ns)
{
    uint64_t took_ns = up_rb_now_ns() - started_ns;
    up_rb_metrics_record(&srv->metrics, ex->res != NULL ? ex->res->status : 0, took_ns);
    if (srv->access_log.fd >= 0)
        up_access_log_request(&srv->access_log, ex, took_ns);
}

void up_rb_handle_request(up_rb_server_t *srv, up_exchange_t *ex)
{
    uint64_t started_ns = up_rb_times_requests(srv) ? up_rb_now_ns() : 0;
    call_t c = {srv, ex, Qnil, {Qnil, Qnil, Qnil}};
    int state = 0;
    c.env = rb_protect(build_env, (VALUE)&c, &state);
    if (state != 0) {
        up_rb_report(srv, take_error(), Qnil);
        up_response_send_simple(ex, 500, "Internal Server Error", 1);
        if (started_ns != 0)
            up_rb_access_log_request(srv, ex, started_ns);
        return;
    }
    VALUE input = c.parts.input, hints = c.parts.hints, hijack = c.parts.hijack;

    VALUE status = Qnil, headers = Qnil, error = Qnil;
    VALUE response = rb_protect(call_app, (VALUE)&c, &state);
    if (state != 0 && !rb_obj_is_kind_of(rb_errinfo(), rb_eException)) {
        /* Not an exception but the thread being killed: answer, then let the kill go on. */
        if (up_response_rollback(ex))
            up_response_send_simple(ex, 503, "Service Unavailable", 1);
        if (started_ns != 0)
            up_rb_access_log_request(srv, ex, started_ns);
        up_rb_input_detach(input);
        up_rb_early_hints_detach(hints);
        up_rb_hijack_detach(hijack);
        rb_jump_tag(state);
    }
    if (state != 0) {
        error = take_error();
        up_rb_report(srv, error, c.env);
        if (up_response_rollback(ex))
            up_response_send_simple(ex, 500, "Internal Server Error", 0);
    } else if (up_rb_hijack_respond(srv, ex, hijack, response, c.env, &status, &headers,
                                    &error)) {
        /* hijacked: the socket is the app's (hijack.c) */
    } else if (up_rb_upgrade(srv, ex, c.env, response)) {
        status = RARRAY_AREF(response, 0);
        headers = RARRAY_AREF(response, 1);
    } else {
        error = up_rb_write_response(srv, ex, c.env, response, &status, &headers);
    }

    VALUE callbacks = rb_hash_lookup2(c.env, up_rb_key_response_finished, Qnil);
    if (RB_TYPE_P(callbacks, T_ARRAY) && RARRAY_LEN(callbacks) > 0) {
        /* After the response is processed: handed to the loop, which writes it without this
         * thread (a slow client must not hold an app thread, nor what the callbacks release:
         * Rails returns its database connection here). */
        if (up_conn_any_state(ex->conn) != UP_CONN_HIJACKED && up_rb_hand_over(srv, ex) != 0 &&
            NIL_P(error))
            error = rb_exc_new_cstr(rb_eIOError, "the client closed the connection");
        finished_t f = {srv, callbacks, c.env, status, headers, error};
        run_response_finished(&f);
    }
    if (started_ns != 0)
        up_rb_access_log_request(srv, ex, started_ns);
    up_rb_input_detach(input);
    up_rb_early_hints_detach(hints);
    up_rb_hijack_detach(hijack);
}

void up_rb_init_request_handler(VALUE mUp)
{
    (void)mUp;
    id_call = rb_intern("call");
    id_report_exception = rb_intern("report_exception");
}
