/* Up::AcceptShare, the Ruby face of the workers' shared connection counts
 * (engine/core/accept_share.h): made by the cluster master before it forks its workers, so
 * that they all map the same memory, and handed to each worker's Up::Server with its index:
 *
 *   share = Up::AcceptShare.new(workers)
 *   Up::Server.new(app, exclusive_accept: true, accept_share: share, accept_slot: index)
 *
 * Each process unmaps its own view when its object is collected; a server keeps its share
 * object alive (an instance variable). */

#include "binding.h"
#include "core/accept_share.h"

typedef struct share_object_t {
    up_accept_share_t *share;
} share_object_t;

static void share_object_free(void *p)
{
    share_object_t *s = p;
    up_accept_share_free(s->share);
    xfree(s);
}

static size_t share_object_size(const void *p)
{
    (void)p;
    return sizeof(share_object_t);
}

static const rb_data_type_t share_object_type = {
    .wrap_struct_name = "Up::AcceptShare",
    .function = {.dfree = share_object_free, .dsize = share_object_size},
    .flags = RUBY_TYPED_FREE_IMMEDIATELY,
};

static VALUE AcceptShare_alloc(VALUE klass)
{
    share_object_t *s;
    return TypedData_Make_Struct(klass, share_object_t, &share_object_type, s);
}

static VALUE AcceptShare_initialize(VALUE self, VALUE workers)
{
    share_object_t *s = rb_check_typeddata(self, &share_object_type);
    int n = NUM2INT(workers);
    if (n < 1 || n > UP_ACCEPT_SHARE_MAX_WORKERS)
        rb_raise(rb_eArgError, "workers must be 1 to %d", UP_ACCEPT_SHARE_MAX_WORKERS);
    if (s->share != NULL)
        rb_raise(rb_eRuntimeError, "Up::AcceptShare is already initialized");
    s->share = up_accept_share_new((unsigned)n);
    if (s->share == NULL)
        rb_sys_fail("mmap of the workers' connection counts");
    return self;
}

/* The worker slots: a worker whose index is past them compares with no one. */
static VALUE AcceptShare_size(VALUE self)
{
    return UINT2NUM(up_rb_accept_share_get(self)->workers);
}

up_accept_share_t *up_rb_accept_share_get(VALUE obj)
{
    share_object_t *s = rb_check_typeddata(obj, &share_object_type);
    if (s->share == NULL)
        rb_raise(rb_eRuntimeError, "Up::AcceptShare is not initialized");
    return s->share;
}

void up_rb_init_accept_share(VALUE mUp)
{
    VALUE cAcceptShare = rb_define_class_under(mUp, "AcceptShare", rb_cObject);
    rb_define_alloc_func(cAcceptShare, AcceptShare_alloc);
    rb_define_method(cAcceptShare, "initialize", AcceptShare_initialize, 1);
    rb_define_method(cAcceptShare, "size", AcceptShare_size, 0);
}
