/* Up::EarlyHints, the rack.early_hints callable: each call sends a 103 Early Hints with the
 * given headers (RFC 8297) ahead of the final response. HTTP/1.0 clients get nothing (they
 * know no 1xx), and neither does a request whose final response has begun. */

#include "binding.h"

typedef struct hints_t {
    up_rb_server_t *srv;
    up_exchange_t *ex; /* NULL once the request is over */
} hints_t;

static VALUE cEarlyHints;

static size_t hints_size(const void *p)
{
    (void)p;
    return sizeof(hints_t);
}

static const rb_data_type_t hints_type = {
    .wrap_struct_name = "Up::EarlyHints",
    .function = {.dmark = NULL, .dfree = RUBY_TYPED_DEFAULT_FREE, .dsize = hints_size, .dcompact = NULL},
    .flags = RUBY_TYPED_FREE_IMMEDIATELY | RUBY_TYPED_WB_PROTECTED,
};

VALUE up_rb_early_hints_new(up_rb_server_t *srv, up_exchange_t *ex)
{
    hints_t *h;
    VALUE obj = TypedData_Make_Struct(cEarlyHints, hints_t, &hints_type, h);
    h->srv = srv;
    h->ex = ex;
    return obj;
}

void up_rb_early_hints_detach(VALUE obj)
{
    if (NIL_P(obj)) /* early hints turned off: the env had none */
        return;
    ((hints_t *)rb_check_typeddata(obj, &hints_type))->ex = NULL;
}

static VALUE EarlyHints_call(VALUE self, VALUE headers)
{
    hints_t *h = rb_check_typeddata(self, &hints_type);
    up_exchange_t *ex = h->ex;
    Check_Type(headers, T_HASH);
    if (ex == NULL || ex->req->head.minor_version == 0 || up_conn_any_broken(ex->conn) ||
        (ex->res->started && !ex->res->finished) || ex->res->head_done)
        return Qnil;
    up_response_start(ex, 103);
    VALUE message = Qnil;
    if (up_rb_add_headers(ex, headers, &message) != 0) {
        up_response_rollback(ex);
        rb_raise(rb_eArgError, "rack.early_hints: %" PRIsVALUE, message);
    }
    up_response_end_head(ex, -1);
    up_rb_hand_over(h->srv, ex);
    return Qnil;
}

void up_rb_init_early_hints(VALUE mUp)
{
    cEarlyHints = rb_define_class_under(mUp, "EarlyHints", rb_cObject);
    rb_undef_alloc_func(cEarlyHints);
    rb_define_method(cEarlyHints, "call", EarlyHints_call, 1);
}
