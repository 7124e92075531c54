/* Up::Stream, what a streaming body's call(stream) writes to (Rack 3 SPEC, "Streaming Body").
 * Writes go through the response writer, so they are framed (chunked when no length is known),
 * each is handed to the loop at once, and past the backlog limit the writing thread waits for
 * the client without the GVL. Several threads may write: the GVL orders their writes, and the
 * loop alone touches the socket. Reading reads the request body. */

#include "binding.h"

typedef struct stream_t {
    up_rb_server_t *srv;
    up_exchange_t *ex; /* NULL once the response is over */
    VALUE input;
    int closed_write;
    int closed_read;
} stream_t;

static VALUE cStream;
static ID id_read;

static void stream_mark(void *p)
{
    rb_gc_mark_movable(((stream_t *)p)->input);
}

static void stream_compact(void *p)
{
    stream_t *s = p;
    s->input = rb_gc_location(s->input);
}

static size_t stream_size(const void *p)
{
    (void)p;
    return sizeof(stream_t);
}

static const rb_data_type_t stream_type = {
    .wrap_struct_name = "Up::Stream",
    .function = {.dmark = stream_mark, .dfree = RUBY_TYPED_DEFAULT_FREE, .dsize = stream_size, .dcompact = stream_compact},
    .flags = RUBY_TYPED_FREE_IMMEDIATELY,
};

VALUE up_rb_stream_new(up_rb_server_t *srv, up_exchange_t *ex, VALUE input)
{
    stream_t *s;
    VALUE obj = TypedData_Make_Struct(cStream, stream_t, &stream_type, s);
    s->srv = srv;
    s->ex = ex;
    s->input = input;
    return obj;
}

int up_rb_stream_closed(VALUE obj)
{
    return ((stream_t *)rb_check_typeddata(obj, &stream_type))->closed_write;
}

void up_rb_stream_detach(VALUE obj)
{
    stream_t *s = rb_check_typeddata(obj, &stream_type);
    s->ex = NULL;
    s->closed_write = s->closed_read = 1;
}

static stream_t *writable(VALUE self)
{
    stream_t *s = rb_check_typeddata(self, &stream_type);
    if (s->closed_write || s->ex == NULL)
        rb_raise(rb_eIOError, "closed stream");
    return s;
}

static void write_one(stream_t *s, VALUE str)
{
    if (up_rb_queue_part(s->srv, s->ex, str) != 0 || up_rb_send(s->srv, s->ex) != 0)
        rb_raise(rb_eIOError, "the client is gone");
}

static VALUE Stream_write(int argc, VALUE *argv, VALUE self)
{
    long total = 0;
    for (int i = 0; i < argc; i++) {
        VALUE str = rb_obj_as_string(argv[i]);
        /* Checked per part: a write that waited may find the response over. */
        write_one(writable(self), str);
        total += RSTRING_LEN(str);
    }
    return LONG2NUM(total);
}

static VALUE Stream_append(VALUE self, VALUE str)
{
    write_one(writable(self), rb_obj_as_string(str));
    return self;
}

static VALUE Stream_flush(VALUE self)
{
    stream_t *s = writable(self);
    if (up_rb_send(s->srv, s->ex) != 0)
        rb_raise(rb_eIOError, "the client is gone");
    return self;
}

static VALUE Stream_read(int argc, VALUE *argv, VALUE self)
{
    stream_t *s = rb_check_typeddata(self, &stream_type);
    if (s->closed_read)
        rb_raise(rb_eIOError, "not opened for reading");
    return rb_funcallv(s->input, id_read, argc, argv);
}

static VALUE Stream_close_read(VALUE self)
{
    ((stream_t *)rb_check_typeddata(self, &stream_type))->closed_read = 1;
    return Qnil;
}

static VALUE Stream_close_write(VALUE self)
{
    ((stream_t *)rb_check_typeddata(self, &stream_type))->closed_write = 1;
    return Qnil;
}

static VALUE Stream_close(VALUE self)
{
    stream_t *s = rb_check_typeddata(self, &stream_type);
    s->closed_read = s->closed_write = 1;
    return Qnil;
}

static VALUE Stream_closed_p(VALUE self)
{
    stream_t *s = rb_check_typeddata(self, &stream_type);
    return s->closed_read && s->closed_write ? Qtrue : Qfalse;
}

void up_rb_init_stream(VALUE mUp)
{
    id_read = rb_intern("read");
    cStream = rb_define_class_under(mUp, "Stream", rb_cObject);
    rb_undef_alloc_func(cStream);
    rb_define_method(cStream, "write", Stream_write, -1);
    rb_define_method(cStream, "<<", Stream_append, 1);
    rb_define_method(cStream, "flush", Stream_flush, 0);
    rb_define_method(cStream, "read", Stream_read, -1);
    rb_define_method(cStream, "close_read", Stream_close_read, 0);
    rb_define_method(cStream, "close_write", Stream_close_write, 0);
    rb_define_method(cStream, "close", Stream_close, 0);
    rb_define_method(cStream, "closed?", Stream_closed_p, 0);
}
