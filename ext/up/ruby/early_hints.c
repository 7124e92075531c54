/* Up::EarlyHints, the rack.early_hints callable: each call sends a 103 Early Hints with the
 * given headers (RFC 8297) ahead of the final response. HTTP/1.0 clients get nothing (they
 * know no 1xx), and neither does a request whose final response has begun. */

#include "binding.h"

static VALUE cEarlyHints;

/* The object's data is the exchange itself, NULL once the request is over: nothing to
 * allocate or free per request. The server is the one whose engine runs the exchange. */
static const rb_data_type_t hints_type = {
    .wrap_struct_name = "Up::EarlyHints",
    .function = {.dmark = NULL, .dfree = NULL, .dsize = NULL, .dcompact = NULL},
    .flags = RUBY_TYPED_FREE_IMMEDIATELY | RUBY_TYPED_WB_PROTECTED,
};

VALUE up_rb_early_hints_new(up_exchange_t *ex)
{
    return TypedData_Wrap_Struct(cEarlyHints, &hints_type, ex);
}

void up_rb_early_hints_detach(VALUE obj)
{
    if (NIL_P(obj)) /* early hints turned off: the env had none */
        return;
    rb_check_typeddata(obj, &hints_type);
    DATA_PTR(obj) = NULL;
}

static VALUE EarlyHints_call(VALUE self, VALUE headers)
{
    up_exchange_t *ex = rb_check_typeddata(self, &hints_type);
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
    up_rb_hand_over(ex->conn->server->handler.user, ex);
    return Qnil;
}

void up_rb_init_early_hints(VALUE mUp)
{
    cEarlyHints = rb_define_class_under(mUp, "EarlyHints", rb_cObject);
    rb_undef_alloc_func(cEarlyHints);
    rb_define_method(cEarlyHints, "call", EarlyHints_call, 1);
}
