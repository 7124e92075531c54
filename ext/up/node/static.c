/* The static file handler of `up`: options.static_files, the Hash Up::StaticFiles#to_h makes
 * for up_ruby (ext/up/ruby/static.c reads the same one), as JSON parsed by Node:
 *
 *   { dirs: [["/", "/app/public"], ["/assets", "/shared/assets"], ...],
 *     mime: { ".css": "text/css", ... },
 *     only, dotfiles, dir_listing, clean_urls, https_only: true or false,
 *     error_page: "/404.html" or null,
 *     headers: [[glob, name, value], ...], redirects: [[glob, location, status], ...],
 *     trusted_proxies: ["10.0.0.0/8", ...] }
 *
 * made into the engine's handler (static_file.h), which then answers before any request reaches
 * JavaScript. createServer (addon.c) calls up_node_static_new once, before the server runs. */

#include <stdio.h>
#include "addon.h"

/* The longest string a setting may be: a path, a glob, a field value. */
#define MAX_SETTING 8192

typedef struct reader_t {
    napi_env env;
    up_static_t *st;
    char what[96]; /* the setting being read, for the message of a bad one */
} reader_t;

static int fail(reader_t *r, const char *err)
{
    char message[MAX_SETTING];
    snprintf(message, sizeof(message), "static files: %s: %s", r->what, err);
    napi_throw_error(r->env, NULL, message);
    return -1;
}

/* obj[name], or NULL when absent (undefined or null). */
static napi_value get(reader_t *r, napi_value obj, const char *name)
{
    napi_value v;
    napi_valuetype type;
    if (napi_get_named_property(r->env, obj, name, &v) != napi_ok ||
        napi_typeof(r->env, v, &type) != napi_ok || type == napi_undefined || type == napi_null)
        return NULL;
    return v;
}

static int flag(reader_t *r, napi_value obj, const char *name)
{
    napi_value v = get(r, obj, name);
    bool b = false;
    return v != NULL && napi_get_value_bool(r->env, v, &b) == napi_ok && b;
}

/* v as a NUL-terminated UTF-8 string in buf (MAX_SETTING bytes). Returns 0, or -1 with an
 * exception pending for another value or a longer one. */
static int string(reader_t *r, napi_value v, char *buf)
{
    size_t len;
    if (v == NULL || napi_get_value_string_utf8(r->env, v, NULL, 0, &len) != napi_ok)
        return fail(r, "not a string");
    if (len >= MAX_SETTING)
        return fail(r, "too long");
    napi_get_value_string_utf8(r->env, v, buf, MAX_SETTING, &len);
    return 0;
}

/* The items of obj[name], an Array of Arrays of arity items each: *list and *n (0 when
 * absent). Returns 0, or -1 with an exception pending. */
static int tuples(reader_t *r, napi_value obj, const char *name, uint32_t arity,
                  napi_value *list, uint32_t *n)
{
    snprintf(r->what, sizeof(r->what), "%s", name);
    *n = 0;
    *list = get(r, obj, name);
    if (*list == NULL)
        return 0;
    bool is_array = false;
    napi_is_array(r->env, *list, &is_array);
    if (!is_array || napi_get_array_length(r->env, *list, n) != napi_ok)
        return fail(r, "not an Array");
    for (uint32_t i = 0; i < *n; i++) {
        napi_value t;
        uint32_t len = 0;
        if (napi_get_element(r->env, *list, i, &t) != napi_ok ||
            napi_get_array_length(r->env, t, &len) != napi_ok || len != arity)
            return fail(r, arity == 2 ? "each item has 2 parts" : "each item has 3 parts");
    }
    return 0;
}

/* Item j of the tuple at index i. */
static napi_value item(reader_t *r, napi_value list, uint32_t i, uint32_t j)
{
    napi_value t, v;
    napi_get_element(r->env, list, i, &t);
    if (napi_get_element(r->env, t, j, &v) != napi_ok)
        return NULL;
    return v;
}

static int read_dirs(reader_t *r, napi_value options)
{
    char prefix[MAX_SETTING], dir[MAX_SETTING];
    const char *err = NULL;
    napi_value list;
    uint32_t n;
    if (tuples(r, options, "dirs", 2, &list, &n) != 0)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        if (string(r, item(r, list, i, 0), prefix) != 0 || string(r, item(r, list, i, 1), dir) != 0)
            return -1;
        if (up_static_add_dir(r->st, prefix, dir, &err) != 0) {
            snprintf(r->what, sizeof(r->what), "directory for %.64s", prefix);
            return fail(r, err);
        }
    }
    return 0;
}

/* Rack::Mime's table; an entry that is no pair of strings leaves its extension unknown, as on
 * up_ruby. */
static int read_mime(reader_t *r, napi_value options)
{
    napi_value mime = get(r, options, "mime"), names;
    uint32_t n = 0;
    if (mime == NULL)
        return 0;
    if (napi_get_property_names(r->env, mime, &names) != napi_ok ||
        napi_get_array_length(r->env, names, &n) != napi_ok) {
        snprintf(r->what, sizeof(r->what), "mime");
        return fail(r, "not an object");
    }
    for (uint32_t i = 0; i < n; i++) {
        napi_value ext_v, type_v;
        char ext[64], type[256];
        size_t len;
        const char *err = NULL;
        if (napi_get_element(r->env, names, i, &ext_v) != napi_ok ||
            napi_get_property(r->env, mime, ext_v, &type_v) != napi_ok ||
            napi_get_value_string_utf8(r->env, ext_v, ext, sizeof(ext), &len) != napi_ok ||
            len == sizeof(ext) - 1 ||
            napi_get_value_string_utf8(r->env, type_v, type, sizeof(type), &len) != napi_ok ||
            len == sizeof(type) - 1)
            continue;
        up_static_add_mime(r->st, ext, type, &err);
    }
    return 0;
}

static int read_rules(reader_t *r, napi_value options)
{
    char a[MAX_SETTING], b[MAX_SETTING], c[MAX_SETTING];
    const char *err = NULL;
    napi_value list;
    uint32_t n;
    if (tuples(r, options, "headers", 3, &list, &n) != 0)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        if (string(r, item(r, list, i, 0), a) != 0 || string(r, item(r, list, i, 1), b) != 0 ||
            string(r, item(r, list, i, 2), c) != 0)
            return -1;
        if (up_static_add_header(r->st, a, b, c, &err) != 0)
            return fail(r, err);
    }
    if (tuples(r, options, "redirects", 3, &list, &n) != 0)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        int32_t status = 0;
        if (string(r, item(r, list, i, 0), a) != 0 || string(r, item(r, list, i, 1), b) != 0)
            return -1;
        if (napi_get_value_int32(r->env, item(r, list, i, 2), &status) != napi_ok)
            return fail(r, "a status is not a number");
        if (up_static_add_redirect(r->st, a, b, status, &err) != 0)
            return fail(r, err);
    }
    return 0;
}

static int read_proxies(reader_t *r, napi_value options)
{
    char cidr[MAX_SETTING];
    const char *err = NULL;
    napi_value list = get(r, options, "trusted_proxies");
    uint32_t n = 0;
    bool is_array = false;
    snprintf(r->what, sizeof(r->what), "trusted_proxy");
    if (list == NULL)
        return 0;
    napi_is_array(r->env, list, &is_array);
    if (!is_array || napi_get_array_length(r->env, list, &n) != napi_ok)
        return fail(r, "not an Array");
    for (uint32_t i = 0; i < n; i++) {
        napi_value v;
        napi_get_element(r->env, list, i, &v);
        if (string(r, v, cidr) != 0)
            return -1;
        if (up_static_add_trusted_proxy(r->st, cidr, &err) != 0)
            return fail(r, err);
    }
    return 0;
}

up_static_t *up_node_static_new(napi_env env, napi_value options, int *none)
{
    reader_t r = {env, NULL, "static_files"};
    napi_value config = get(&r, options, "static_files");
    *none = config == NULL;
    if (config == NULL)
        return NULL;
    static const struct {
        const char *name;
        unsigned flag;
    } names[] = {{"only", UP_STATIC_ONLY},
                 {"dotfiles", UP_STATIC_DOTFILES},
                 {"dir_listing", UP_STATIC_DIR_LISTING},
                 {"clean_urls", UP_STATIC_CLEAN_URLS},
                 {"https_only", UP_STATIC_HTTPS_ONLY}};
    unsigned flags = 0;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (flag(&r, config, names[i].name))
            flags |= names[i].flag;
    }
    r.st = up_static_new(flags, NULL);
    char page[MAX_SETTING];
    const char *err = NULL;
    napi_value page_v = get(&r, config, "error_page");
    int bad = read_dirs(&r, config) != 0 || read_mime(&r, config) != 0;
    if (!bad && page_v != NULL) {
        snprintf(r.what, sizeof(r.what), "error_page");
        bad = string(&r, page_v, page) != 0 ||
              (up_static_set_error_page(r.st, page, &err) != 0 && fail(&r, err) != 0);
    }
    bad = bad || read_rules(&r, config) != 0 || read_proxies(&r, config) != 0;
    if (bad) {
        up_static_free(r.st);
        return NULL;
    }
    return r.st;
}
