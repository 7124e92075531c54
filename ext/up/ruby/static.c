/* The static: option of Up::Server.new, translated into the engine's static file handler
 * (static_file.h). Up::StaticFiles (lib/up/static_files.rb) makes the Hash:
 *
 *   { dirs: [["/", "/app/public"], ["/assets", "/shared/assets"], ...],
 *     mime: Rack::Mime::MIME_TYPES,
 *     only:, dotfiles:, dir_listing:, clean_urls:, https_only: (true or false),
 *     error_page: "/404.html" or nil,
 *     headers: [[glob, name, value], ...], redirects: [[glob, location, status], ...],
 *     trusted_proxies: ["10.0.0.0/8", ...] }
 *
 * and the engine answers from it before any request reaches Ruby; what it answered is counted
 * and written to the access log here (on_served). */

#include "binding.h"
#include "handlers/static_file.h"

static VALUE key(const char *name)
{
    return ID2SYM(rb_intern(name));
}

static VALUE get(VALUE config, const char *name)
{
    return rb_hash_lookup2(config, key(name), Qnil);
}

/* An Array of Arrays of arity items from the config (nil: none). */
static VALUE tuples(VALUE config, const char *name, long arity)
{
    VALUE list = get(config, name);
    if (NIL_P(list))
        return rb_ary_new();
    Check_Type(list, T_ARRAY);
    for (long i = 0; i < RARRAY_LEN(list); i++) {
        VALUE t = RARRAY_AREF(list, i);
        Check_Type(t, T_ARRAY);
        if (RARRAY_LEN(t) != arity)
            rb_raise(rb_eArgError, "static %s: each item has %ld parts", name, arity);
    }
    return list;
}

typedef struct build_t {
    VALUE config;
    up_static_t *st;
} build_t;

static void check(int r, const char *what, const char *err)
{
    if (r != 0)
        rb_raise(rb_eArgError, "static %s: %s", what, err);
}

static int mime_i(VALUE ext, VALUE type, VALUE arg)
{
    build_t *b = (build_t *)arg;
    const char *err = NULL;
    if (RB_TYPE_P(ext, T_STRING) && RB_TYPE_P(type, T_STRING))
        up_static_add_mime(b->st, StringValueCStr(ext), StringValueCStr(type), &err);
    return ST_CONTINUE; /* an odd entry of the runtime's table leaves that extension unknown */
}

/* Fills b->st; raises on a bad value (the caller frees b->st then). */
static VALUE build(VALUE arg)
{
    build_t *b = (build_t *)arg;
    VALUE config = b->config;
    const char *err = NULL;
    VALUE dirs = tuples(config, "dirs", 2);
    for (long i = 0; i < RARRAY_LEN(dirs); i++) {
        VALUE d = RARRAY_AREF(dirs, i);
        VALUE prefix = RARRAY_AREF(d, 0), dir = RARRAY_AREF(d, 1);
        if (up_static_add_dir(b->st, StringValueCStr(prefix), StringValueCStr(dir), &err) != 0)
            rb_raise(rb_eArgError, "static directory %" PRIsVALUE " for %" PRIsVALUE ": %s", dir,
                     prefix, err);
    }
    VALUE mime = get(config, "mime");
    if (!NIL_P(mime)) {
        Check_Type(mime, T_HASH);
        rb_hash_foreach(mime, mime_i, (VALUE)b);
    }
    VALUE page = get(config, "error_page");
    if (!NIL_P(page))
        check(up_static_set_error_page(b->st, StringValueCStr(page), &err), "error_page", err);
    VALUE headers = tuples(config, "headers", 3);
    for (long i = 0; i < RARRAY_LEN(headers); i++) {
        VALUE h = RARRAY_AREF(headers, i);
        VALUE glob = RARRAY_AREF(h, 0), name = RARRAY_AREF(h, 1), value = RARRAY_AREF(h, 2);
        check(up_static_add_header(b->st, StringValueCStr(glob), StringValueCStr(name),
                                   StringValueCStr(value), &err),
              "headers", err);
    }
    VALUE redirects = tuples(config, "redirects", 3);
    for (long i = 0; i < RARRAY_LEN(redirects); i++) {
        VALUE r = RARRAY_AREF(redirects, i);
        VALUE glob = RARRAY_AREF(r, 0), location = RARRAY_AREF(r, 1);
        check(up_static_add_redirect(b->st, StringValueCStr(glob), StringValueCStr(location),
                                     NUM2INT(RARRAY_AREF(r, 2)), &err),
              "redirects", err);
    }
    VALUE proxies = get(config, "trusted_proxies");
    if (!NIL_P(proxies)) {
        Check_Type(proxies, T_ARRAY);
        for (long i = 0; i < RARRAY_LEN(proxies); i++) {
            VALUE p = RARRAY_AREF(proxies, i);
            check(up_static_add_trusted_proxy(b->st, StringValueCStr(p), &err), "trusted_proxy", err);
        }
    }
    return Qnil;
}

up_static_t *up_rb_static_new(VALUE config)
{
    Check_Type(config, T_HASH);
    unsigned flags = 0;
    static const struct {
        const char *name;
        unsigned flag;
    } names[] = {{"only", UP_STATIC_ONLY},
                 {"dotfiles", UP_STATIC_DOTFILES},
                 {"dir_listing", UP_STATIC_DIR_LISTING},
                 {"clean_urls", UP_STATIC_CLEAN_URLS},
                 {"https_only", UP_STATIC_HTTPS_ONLY}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (RTEST(get(config, names[i].name)))
            flags |= names[i].flag;
    }
    build_t b = {config, up_static_new(flags, NULL)};
    int state = 0;
    rb_protect(build, (VALUE)&b, &state);
    if (state != 0) {
        up_static_free(b.st);
        rb_jump_tag(state);
    }
    return b.st;
}

/* Engine callback (context.h, on_served): the loop thread, without the GVL; touches no Ruby. */
void up_rb_on_served(up_exchange_t *ex, void *user)
{
    up_rb_server_t *srv = user;
    atomic_fetch_add(&srv->static_served, 1);
    if (up_rb_times_requests(srv))
        up_rb_access_log_request(srv, ex, up_rb_now_ns());
}
