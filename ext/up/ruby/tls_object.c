/* Up::TLSContext, the Ruby face of an engine TLS context (engine/transport/tls.h): certificates and keys
 * loaded from files, handed to Up::Server#listen_fd for the listeners that serve them, and
 * made again from the same files to reload them (Up::Server#replace_tls). The engine counts
 * its own references, so a context dropped here lives on while listeners or connections use it.
 *
 *   Up::TLSContext.new(cert_file:, key_file:, ca_file: nil, key_password: nil,
 *                      hosts: [{host:, cert_file:, key_file:, ca_file: nil}, ...],
 *                      ticket_secret: 32 bytes, acme_challenge_dir: nil)
 *
 * raises Up::TLSError with the engine's one-line message naming the file at fault. */

#include "binding.h"
#include "transport/tls.h"

static VALUE cTLSContext, eTLSError;

typedef struct tls_object_t {
    up_tls_context_t *ctx;
} tls_object_t;

static void tls_object_free(void *p)
{
    tls_object_t *t = p;
    up_tls_context_release(t->ctx);
    xfree(t);
}

static size_t tls_object_size(const void *p)
{
    (void)p;
    return sizeof(tls_object_t);
}

static const rb_data_type_t tls_object_type = {
    .wrap_struct_name = "Up::TLSContext",
    .function = {.dfree = tls_object_free, .dsize = tls_object_size},
    .flags = RUBY_TYPED_FREE_IMMEDIATELY,
};

static VALUE TLSContext_alloc(VALUE klass)
{
    tls_object_t *t;
    return TypedData_Make_Struct(klass, tls_object_t, &tls_object_type, t);
}

up_tls_context_t *up_rb_tls_context_get(VALUE obj)
{
    tls_object_t *t = rb_check_typeddata(obj, &tls_object_type);
    if (t->ctx == NULL)
        rb_raise(eTLSError, "the TLS context is not initialized");
    return t->ctx;
}

/* A String option as a C string (it stays in the Hash, so it lives as long as the call). */
static const char *str_opt(VALUE hash, const char *name, int required)
{
    VALUE v = rb_hash_lookup2(hash, ID2SYM(rb_intern(name)), Qnil);
    if (NIL_P(v)) {
        if (required)
            rb_raise(rb_eArgError, "%s is required", name);
        return NULL;
    }
    return StringValueCStr(v);
}

static void cert_opts(VALUE hash, up_tls_cert_t *cert, int with_host)
{
    Check_Type(hash, T_HASH);
    cert->host = with_host ? str_opt(hash, "host", 1) : NULL;
    cert->cert_file = str_opt(hash, "cert_file", 1);
    cert->key_file = str_opt(hash, "key_file", 1);
    cert->ca_file = str_opt(hash, "ca_file", 0);
}

static VALUE TLSContext_initialize(VALUE self, VALUE opts)
{
    tls_object_t *t = rb_check_typeddata(self, &tls_object_type);
    if (t->ctx != NULL)
        rb_raise(rb_eRuntimeError, "the TLS context is already initialized");
    Check_Type(opts, T_HASH);
    up_tls_config_t cfg = {0};
    cert_opts(opts, &cfg.cert, 0);
    cfg.key_password = str_opt(opts, "key_password", 0);
    cfg.acme_challenge_dir = str_opt(opts, "acme_challenge_dir", 0);
    VALUE secret = rb_hash_lookup2(opts, ID2SYM(rb_intern("ticket_secret")), Qnil);
    StringValue(secret);
    if (RSTRING_LEN(secret) != UP_TLS_TICKET_SECRET_SIZE)
        rb_raise(rb_eArgError, "ticket_secret must be %d bytes", UP_TLS_TICKET_SECRET_SIZE);
    memcpy(cfg.ticket_secret, RSTRING_PTR(secret), UP_TLS_TICKET_SECRET_SIZE);
    VALUE hosts = rb_hash_lookup2(opts, ID2SYM(rb_intern("hosts")), Qnil);
    VALUE tmp = 0;
    if (!NIL_P(hosts)) {
        Check_Type(hosts, T_ARRAY);
        long n = RARRAY_LEN(hosts);
        if (n > UP_TLS_MAX_HOSTS)
            rb_raise(rb_eArgError, "at most %d host certificates", UP_TLS_MAX_HOSTS);
        up_tls_cert_t *list = ALLOCV_N(up_tls_cert_t, tmp, n > 0 ? n : 1);
        for (long i = 0; i < n; i++)
            cert_opts(RARRAY_AREF(hosts, i), &list[i], 1);
        cfg.hosts = list;
        cfg.num_hosts = (size_t)n;
    }
    char err[512];
    t->ctx = up_tls_context_new(&cfg, err, sizeof(err));
    if (tmp)
        ALLOCV_END(tmp);
    if (t->ctx == NULL)
        rb_raise(eTLSError, "%s", err);
    return self;
}

/* subject(host = nil): the certificate a client naming host gets, as "CN = localhost". */
static VALUE TLSContext_subject(int argc, VALUE *argv, VALUE self)
{
    VALUE host;
    rb_scan_args(argc, argv, "01", &host);
    char out[512];
    if (up_tls_context_subject(up_rb_tls_context_get(self), NIL_P(host) ? NULL : StringValueCStr(host),
                               out, sizeof(out)) != 0)
        return Qnil;
    return rb_str_new_cstr(out);
}

void up_rb_init_tls(VALUE mUp)
{
    eTLSError = rb_define_class_under(mUp, "TLSError", rb_eStandardError);
    cTLSContext = rb_define_class_under(mUp, "TLSContext", rb_cObject);
    rb_define_alloc_func(cTLSContext, TLSContext_alloc);
    rb_define_method(cTLSContext, "initialize", TLSContext_initialize, 1);
    rb_define_method(cTLSContext, "subject", TLSContext_subject, -1);
}
