/* Up::Input, the rack.input IO: reads the request body the engine already has, in memory or
 * in its spool file, with the semantics of Ruby's IO#read, #gets and #each. It is made only for
 * requests with a body; every other request shares one empty, stateless instance. */

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <ruby/encoding.h>
#include "binding.h"

#define FILE_READ_CHUNK 16384

typedef struct input_t {
    const up_request_body_t *body; /* NULL once the request is over (detached) */
    uint64_t pos;
    int closed;
} input_t;

static VALUE cInput;

static size_t input_size(const void *p)
{
    (void)p;
    return sizeof(input_t);
}

static const rb_data_type_t input_type = {
    .wrap_struct_name = "Up::Input",
    .function = {.dmark = NULL, .dfree = RUBY_TYPED_DEFAULT_FREE, .dsize = input_size, .dcompact = NULL},
    .flags = RUBY_TYPED_FREE_IMMEDIATELY | RUBY_TYPED_WB_PROTECTED,
};

static VALUE empty_input;

VALUE up_rb_input_new(const up_request_body_t *body)
{
    input_t *in;
    VALUE obj = TypedData_Make_Struct(cInput, input_t, &input_type, in);
    in->body = body;
    return obj;
}

VALUE up_rb_input_empty(void)
{
    return empty_input;
}

void up_rb_input_detach(VALUE obj)
{
    if (obj == empty_input)
        return;
    input_t *in = rb_check_typeddata(obj, &input_type);
    in->body = NULL;
}

static input_t *get(VALUE self)
{
    input_t *in = rb_check_typeddata(self, &input_type);
    if (in->closed)
        rb_raise(rb_eIOError, "closed stream");
    return in;
}

static uint64_t body_len(const input_t *in)
{
    return in->body != NULL ? in->body->len : 0;
}

/* Copies up to len bytes at in->pos into dst; returns how many. */
static size_t copy_out(input_t *in, char *dst, size_t len)
{
    uint64_t left = body_len(in) - in->pos;
    if (len > left)
        len = (size_t)left;
    if (len == 0)
        return 0;
    if (in->body->fd >= 0) {
        size_t done = 0;
        while (done < len) {
            ssize_t n = pread(in->body->fd, dst + done, len - done, (off_t)(in->pos + done));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                rb_sys_fail("reading the spooled request body");
            done += (size_t)n;
        }
    } else {
        memcpy(dst, in->body->mem + in->pos, len);
    }
    in->pos += len;
    return len;
}

static VALUE fill(input_t *in, VALUE buffer, size_t len)
{
    VALUE str = NIL_P(buffer) ? rb_str_buf_new((long)len) : buffer;
    if (!NIL_P(buffer)) {
        rb_str_modify(str);
        rb_str_resize(str, 0);
        rb_str_modify_expand(str, (long)len);
    }
    size_t n = copy_out(in, RSTRING_PTR(str), len);
    rb_str_set_len(str, (long)n);
    rb_enc_associate(str, rb_ascii8bit_encoding());
    return str;
}

/* read([length, [buffer]]), as IO#read. */
static VALUE Input_read(int argc, VALUE *argv, VALUE self)
{
    input_t *in = get(self);
    VALUE length, buffer;
    rb_scan_args(argc, argv, "02", &length, &buffer);
    if (!NIL_P(buffer))
        StringValue(buffer);
    uint64_t left = body_len(in) - in->pos;
    if (NIL_P(length))
        return fill(in, buffer, (size_t)left);
    long n = NUM2LONG(length);
    if (n < 0)
        rb_raise(rb_eArgError, "negative length %ld given", n);
    if (n == 0)
        return fill(in, buffer, 0);
    if (left == 0) {
        if (!NIL_P(buffer))
            rb_str_resize(buffer, 0);
        return Qnil;
    }
    /* The string is sized for what is left, not for n: read(CONTENT_LENGTH) or a huge n must
     * not allocate more than the body holds. */
    return fill(in, buffer, (uint64_t)n < left ? (size_t)n : (size_t)left);
}

/* The next line, "\n" included, or nil at the end. */
static VALUE Input_gets(VALUE self)
{
    input_t *in = get(self);
    uint64_t left = body_len(in) - in->pos;
    if (left == 0)
        return Qnil;
    if (in->body->fd < 0) {
        const char *start = in->body->mem + in->pos;
        const char *nl = memchr(start, '\n', (size_t)left);
        size_t len = nl != NULL ? (size_t)(nl - start) + 1 : (size_t)left;
        in->pos += len;
        return rb_str_new(start, (long)len);
    }
    VALUE line = rb_str_buf_new(128);
    char chunk[FILE_READ_CHUNK];
    for (;;) {
        uint64_t at = in->pos;
        size_t n = copy_out(in, chunk, sizeof(chunk));
        if (n == 0)
            break;
        const char *nl = memchr(chunk, '\n', n);
        if (nl != NULL) {
            size_t take = (size_t)(nl - chunk) + 1;
            rb_str_cat(line, chunk, (long)take);
            in->pos = at + take;
            break;
        }
        rb_str_cat(line, chunk, (long)n);
    }
    return line;
}

static VALUE Input_each(VALUE self)
{
    RETURN_ENUMERATOR(self, 0, 0);
    VALUE line;
    while (!NIL_P(line = Input_gets(self)))
        rb_yield(line);
    return self;
}

static VALUE Input_rewind(VALUE self)
{
    get(self)->pos = 0;
    return INT2FIX(0);
}

static VALUE Input_size(VALUE self)
{
    return ULL2NUM(body_len(get(self)));
}

static VALUE Input_eof_p(VALUE self)
{
    input_t *in = get(self);
    return in->pos >= body_len(in) ? Qtrue : Qfalse;
}

/* Closing only ends the app's reading: the engine still owns the body. */
static VALUE Input_close(VALUE self)
{
    if (self != empty_input)
        ((input_t *)rb_check_typeddata(self, &input_type))->closed = 1;
    return Qnil;
}

static VALUE Input_closed_p(VALUE self)
{
    return ((input_t *)rb_check_typeddata(self, &input_type))->closed ? Qtrue : Qfalse;
}

static VALUE Input_binmode(VALUE self)
{
    return self;
}

void up_rb_init_input(VALUE mUp)
{
    cInput = rb_define_class_under(mUp, "Input", rb_cObject);
    rb_undef_alloc_func(cInput);
    rb_define_method(cInput, "read", Input_read, -1);
    rb_define_method(cInput, "gets", Input_gets, 0);
    rb_define_method(cInput, "each", Input_each, 0);
    rb_define_method(cInput, "rewind", Input_rewind, 0);
    rb_define_method(cInput, "size", Input_size, 0);
    rb_define_method(cInput, "eof?", Input_eof_p, 0);
    rb_define_method(cInput, "close", Input_close, 0);
    rb_define_method(cInput, "closed?", Input_closed_p, 0);
    rb_define_method(cInput, "binmode", Input_binmode, 0);
    empty_input = up_rb_input_new(NULL);
    rb_obj_freeze(empty_input);
    rb_gc_register_mark_object(empty_input);
}
