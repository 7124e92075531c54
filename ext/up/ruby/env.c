/* The Rack env (Rack 3.2 SPEC). Keys are frozen Strings made once at load time; common request
 * headers map to ready HTTP_* keys through a table, rare ones to interned Strings. Values are
 * fresh binary Strings.
 *
 * Each env is a copy of a template Hash (one per transport) that holds every key an env always
 * has: the constant pairs, and the request's own ones with nil, which are then set in place
 * through the copied table. A copy keeps its keys' hashes, so those keys cost no String hashing
 * (inserting them was the env's largest cost); only the header fields are inserted as usual. */

#include <ctype.h>
#include <string.h>
#include "binding.h"
#include "http1/http1_parser.h"
#include "transport/tls.h"


static VALUE key_request_method, key_script_name, key_path_info, key_query_string,
    key_server_name, key_server_port, key_server_protocol, key_request_uri, key_request_path,
    key_remote_addr, key_content_length, key_content_type, key_server_software,
    key_gateway_interface, key_rack_version, key_rack_url_scheme, key_rack_errors,
    key_rack_multithread, key_rack_multiprocess, key_rack_run_once, key_rack_hijack_p,
    key_sendfile_type, key_http_host, key_https;
VALUE up_rb_key_request_method, up_rb_key_rack_input, up_rb_key_response_finished,
    up_rb_key_rack_early_hints, up_rb_key_rack_upgrade, up_rb_key_rack_hijack;
static VALUE key_rack_upgrade_p, sym_websocket, sym_sse;

static VALUE str_empty, str_http2, str_http11, str_http10, str_port80, str_http, str_localhost, str_https,
    str_port443, str_on;

/* Methods and common headers get ready frozen Strings; the rest are built per request. */
static const char *const common_methods[] = {"GET",     "POST",  "PUT",     "DELETE",
                                             "HEAD",    "PATCH", "OPTIONS", NULL};
static VALUE method_strings[8];

static const char *const common_headers[] = {
    "accept", "accept-charset", "accept-encoding", "accept-language", "authorization",
    "cache-control", "connection", "cookie", "dnt", "expect", "forwarded", "host",
    "if-match", "if-modified-since", "if-none-match", "if-range", "if-unmodified-since",
    "keep-alive", "origin", "pragma", "priority", "range", "referer", "sec-ch-ua",
    "sec-ch-ua-mobile", "sec-ch-ua-platform", "sec-fetch-dest", "sec-fetch-mode",
    "sec-fetch-site", "sec-fetch-user", "sec-websocket-extensions", "sec-websocket-key",
    "sec-websocket-protocol", "sec-websocket-version", "te", "transfer-encoding", "upgrade",
    "upgrade-insecure-requests", "user-agent", "via", "x-csrf-token", "x-forwarded-for",
    "x-forwarded-host", "x-forwarded-port", "x-forwarded-proto", "x-real-ip",
    "x-request-id", "x-requested-with", NULL};
#define NUM_COMMON_HEADERS (sizeof(common_headers) / sizeof(common_headers[0]) - 1)
static VALUE common_header_keys[NUM_COMMON_HEADERS];
static unsigned char common_header_lens[NUM_COMMON_HEADERS];

static VALUE frozen(const char *s)
{
    VALUE str = rb_obj_freeze(rb_str_new_cstr(s));
    rb_gc_register_mark_object(str);
    return str;
}

static VALUE header_key_for(const char *name, size_t len, VALUE (*make)(const char *, long))
{
    char stack[256];
    char *key = len + 5 <= sizeof(stack) ? stack : ruby_xmalloc(len + 5);
    memcpy(key, "HTTP_", 5);
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        key[5 + i] = c == '-' ? '_' : (char)toupper((unsigned char)c);
    }
    VALUE str = make(key, (long)(len + 5));
    if (key != stack)
        ruby_xfree(key);
    return str;
}

static VALUE make_registered(const char *s, long len)
{
    VALUE str = rb_obj_freeze(rb_str_new(s, len));
    rb_gc_register_mark_object(str);
    return str;
}

void up_rb_init_env(VALUE mUp)
{
    key_request_method = up_rb_key_request_method = frozen("REQUEST_METHOD");
    key_script_name = frozen("SCRIPT_NAME");
    key_path_info = frozen("PATH_INFO");
    key_query_string = frozen("QUERY_STRING");
    key_server_name = frozen("SERVER_NAME");
    key_server_port = frozen("SERVER_PORT");
    key_server_protocol = frozen("SERVER_PROTOCOL");
    key_request_uri = frozen("REQUEST_URI");
    key_request_path = frozen("REQUEST_PATH");
    key_remote_addr = frozen("REMOTE_ADDR");
    key_content_length = frozen("CONTENT_LENGTH");
    key_content_type = frozen("CONTENT_TYPE");
    key_server_software = frozen("SERVER_SOFTWARE");
    key_gateway_interface = frozen("GATEWAY_INTERFACE");
    key_rack_version = frozen("rack.version");
    key_rack_url_scheme = frozen("rack.url_scheme");
    key_rack_errors = frozen("rack.errors");
    key_rack_multithread = frozen("rack.multithread");
    key_rack_multiprocess = frozen("rack.multiprocess");
    key_rack_run_once = frozen("rack.run_once");
    key_rack_hijack_p = frozen("rack.hijack?");
    key_sendfile_type = frozen("sendfile.type");
    up_rb_key_rack_hijack = frozen("rack.hijack");
    up_rb_key_rack_early_hints = frozen("rack.early_hints");
    up_rb_key_rack_upgrade = frozen("rack.upgrade");
    key_rack_upgrade_p = frozen("rack.upgrade?");
    sym_websocket = ID2SYM(rb_intern("websocket"));
    sym_sse = ID2SYM(rb_intern("sse"));
    up_rb_key_rack_input = frozen("rack.input");
    up_rb_key_response_finished = frozen("rack.response_finished");
    key_https = frozen("HTTPS");
    str_empty = frozen("");
    str_http11 = frozen("HTTP/1.1");
    str_http2 = frozen("HTTP/2");
    str_http10 = frozen("HTTP/1.0");
    str_port80 = frozen("80");
    str_http = frozen("http");
    str_localhost = frozen("localhost");
    str_https = frozen("https");
    str_port443 = frozen("443");
    str_on = frozen("on");
    for (int i = 0; common_methods[i] != NULL; i++)
        method_strings[i] = frozen(common_methods[i]);
    for (size_t i = 0; i < NUM_COMMON_HEADERS; i++) {
        size_t len = strlen(common_headers[i]);
        common_header_lens[i] = (unsigned char)len;
        common_header_keys[i] = header_key_for(common_headers[i], len, make_registered);
        if (strcmp(common_headers[i], "host") == 0)
            key_http_host = common_header_keys[i]; /* the key put_headers compares */
    }
    rb_define_const(mUp, "ENGINE_VERSION", frozen(UP_VERSION_STRING));
}

/* The keys of the pairs every env has with a value of its own, in the order up_rb_env_build
 * gives them; returns how many. */
static long request_keys(const up_rb_server_t *srv, int hijackable, VALUE *keys)
{
    long n = 0;
    keys[n++] = key_request_method;
    keys[n++] = key_server_protocol;
    keys[n++] = key_path_info;
    keys[n++] = key_request_path;
    keys[n++] = key_query_string;
    keys[n++] = key_request_uri;
    keys[n++] = key_remote_addr;
    keys[n++] = key_server_name;
    keys[n++] = key_server_port;
    keys[n++] = up_rb_key_rack_input;
    if (srv->early_hints)
        keys[n++] = up_rb_key_rack_early_hints;
    keys[n++] = up_rb_key_response_finished;
    if (hijackable)
        keys[n++] = up_rb_key_rack_hijack;
    keys[n++] = key_rack_upgrade_p;
    keys[n++] = key_http_host; /* removed from the rare env without one */
    return n;
}

#define MAX_REQUEST_KEYS 15

VALUE up_rb_env_template(up_rb_server_t *srv, const up_transport_t *transport, int hijack)
{
    int hijackable = hijack && transport->detach != NULL;
    VALUE template = rb_hash_new();
    VALUE keys[MAX_REQUEST_KEYS];
    long num_keys = request_keys(srv, hijackable, keys);
    for (long i = 0; i < num_keys; i++)
        rb_hash_aset(template, keys[i], Qnil);
    VALUE version = rb_obj_freeze(rb_ary_new_from_args(2, INT2FIX(1), INT2FIX(3)));
    VALUE pairs[] = {
        key_script_name,       str_empty,
        key_server_software,   frozen("UP! " UP_VERSION_STRING),
        key_gateway_interface, frozen("CGI/1.2"),
        key_rack_version,      version,
        key_rack_url_scheme,   transport->secure ? str_https : str_http,
        key_rack_errors,       rb_iv_get(srv->self, "@errors"),
        key_rack_multithread,  srv->num_threads > 1 ? Qtrue : Qfalse,
        key_rack_multiprocess, rb_iv_get(srv->self, "@multiprocess") == Qtrue ? Qtrue : Qfalse,
        key_rack_run_once,     Qfalse,
        /* Partial hijack (hijack.c) on every transport; full hijack only where the socket can
         * be given up alone (TLS cannot: the session's state is the engine's). Rack 3.2 SPEC,
         * "Hijacking": rack.hijack? says whether rack.hijack is there. */
        key_rack_hijack_p,     hijackable ? Qtrue : Qfalse,
        /* What Rack::Sendfile reads: it then answers a to_path body with an x-sendfile field,
         * which the engine sends from the file (body.c, file_response.h). */
        key_sendfile_type,     frozen("x-sendfile"),
        /* CGI's HTTPS: present only over TLS. */
        key_https,             str_on,
    };
    long n = sizeof(pairs) / sizeof(pairs[0]) - (transport->secure ? 0 : 2);
    rb_hash_bulk_insert(n, pairs, template);
    return rb_obj_freeze(template);
}

static VALUE slice_str(up_slice_t s)
{
    return rb_str_new(s.base, (long)s.len);
}

static VALUE method_value(up_slice_t m)
{
    for (int i = 0; common_methods[i] != NULL; i++) {
        if (up_slice_eq(m, common_methods[i], strlen(common_methods[i])))
            return method_strings[i];
    }
    return slice_str(m);
}

static int name_is(up_slice_t name, const char *lit, size_t len)
{
    return name.len == len && strncasecmp(name.base, lit, len) == 0;
}

static VALUE header_key(up_slice_t name)
{
    for (size_t i = 0; i < NUM_COMMON_HEADERS; i++) {
        if (common_header_lens[i] == name.len &&
            strncasecmp(name.base, common_headers[i], name.len) == 0)
            return common_header_keys[i];
    }
    return header_key_for(name.base, name.len, rb_interned_str);
}

/* The pairs of one env, gathered before the one bulk insert. */
typedef struct pairs_t {
    VALUE *v;
    long n;        /* VALUEs so far (two per pair) */
    long headers;  /* where the header pairs start in v */
    long host;     /* where HTTP_HOST's value is in v (nil until a Host field is seen) */
} pairs_t;

static void put(pairs_t *p, VALUE key, VALUE value)
{
    p->v[p->n++] = key;
    p->v[p->n++] = value;
}

/* Repeated fields become one value, joined as RFC 9110 §5.3 says (cookies with "; ",
 * RFC 6265 §5.4). Keys are the same object for the same name (a table key, or an interned
 * String), so a repeat is found by identity. */
static void put_header(pairs_t *p, VALUE key, up_slice_t name, up_slice_t value)
{
    for (long i = p->headers; i < p->n; i += 2) {
        if (p->v[i] != key)
            continue;
        VALUE old = p->v[i + 1];
        if (name_is(name, "cookie", 6))
            rb_str_cat(old, "; ", 2);
        else
            rb_str_cat(old, ", ", 2);
        rb_str_cat(old, value.base, (long)value.len);
        return;
    }
    put(p, key, slice_str(value));
}

static VALUE key_of(up_slice_t name)
{
    if (name_is(name, "content-length", 14))
        return key_content_length;
    if (name_is(name, "content-type", 12))
        return key_content_type;
    return header_key(name);
}

/* Header fields without an underscore in their name. */
static int put_headers(pairs_t *p, const up_http1_request_t *head)
{
    int underscored = 0;
    p->headers = p->n;
    for (size_t i = 0; i < head->num_headers; i++) {
        up_slice_t name = head->headers[i].name, value = head->headers[i].value;
        if (memchr(name.base, '_', name.len) != NULL) {
            underscored = 1;
            continue;
        }
        VALUE key = key_of(name);
        if (key == key_http_host)
            p->v[p->host] = slice_str(value); /* one at most (http1_parser.c) */
        else
            put_header(p, key, name, value);
    }
    return underscored;
}

/* "X_Forwarded_For" and "X-Forwarded-For" share one env key. A client must not be able to
 * override what a proxy set, so an underscore spelling only counts when no dash spelling
 * exists (and the first of them wins). */
static void add_underscored_headers(VALUE env, const up_http1_request_t *head)
{
    for (size_t i = 0; i < head->num_headers; i++) {
        up_slice_t name = head->headers[i].name, value = head->headers[i].value;
        if (memchr(name.base, '_', name.len) == NULL)
            continue;
        VALUE key = header_key(name);
        if (rb_hash_lookup2(env, key, Qundef) == Qundef)
            rb_hash_aset(env, key, slice_str(value));
    }
}

static void put_server_name(pairs_t *p, up_exchange_t *ex)
{
    const up_http1_request_t *head = &ex->req->head;
    up_slice_t host, port;
    if (head->host.len == 0) {
        put(p, key_server_name, rb_str_new_cstr(ex->conn->listener->host));
        put(p, key_server_port, rb_str_new_cstr(ex->conn->listener->port));
        return;
    }
    up_http1_split_authority(head->host, &host, &port);
    put(p, key_server_name, host.len > 0 ? slice_str(host) : str_localhost);
    put(p, key_server_port,
        port.len > 0 ? slice_str(port) : ex->conn->transport->secure ? str_port443 : str_port80);
}

/* Pairs besides the template's and the headers': at most the 15 of request_keys and
 * CONTENT_LENGTH of a chunked body. */
#define REQUEST_PAIRS 16

/* Sets the template's request pairs in the copied table, in order, while their keys are the
 * ones given; f->i stops at the first pair left to insert. */
typedef struct fill_t {
    const VALUE *v;
    long n, i;
} fill_t;

static int fill_i(st_data_t key, st_data_t value, st_data_t arg, int error)
{
    fill_t *f = (fill_t *)arg;
    (void)value;
    return !error && (VALUE)key == f->v[f->i] ? ST_REPLACE : ST_STOP;
}

static int fill_replace(st_data_t *key, st_data_t *value, st_data_t arg, int existing)
{
    fill_t *f = (fill_t *)arg;
    (void)key;
    (void)existing;
    *value = (st_data_t)f->v[f->i + 1];
    f->i += 2;
    return f->i < f->n ? ST_CONTINUE : ST_STOP;
}

VALUE up_rb_env_build(up_rb_server_t *srv, up_exchange_t *ex, up_rb_env_parts_t *parts)
{
    const up_request_t *req = ex->req;
    const up_http1_request_t *head = &req->head;
    VALUE tmp;
    pairs_t p = {ALLOCV_N(VALUE, tmp, 2 * (REQUEST_PAIRS + head->num_headers)), 0, 0, 0};
    /* A stream has no socket of its own to give: its template (TLS's, or h2c's) says
     * rack.hijack? false and has no rack.hijack. */
    int tls = ex->conn->transport == &up_transport_tls;
    int hijackable = !req->http2 && ex->conn->transport->detach != NULL;

    /* In request_keys' order. */
    put(&p, key_request_method, method_value(head->method));
    put(&p, key_server_protocol, req->http2               ? str_http2
                                 : head->minor_version == 0 ? str_http10
                                                            : str_http11);
    put(&p, key_path_info, slice_str(head->path));
    put(&p, key_request_path, slice_str(head->path));
    put(&p, key_query_string, head->query.len > 0 ? slice_str(head->query) : str_empty);
    put(&p, key_request_uri, slice_str(head->target));
    put(&p, key_remote_addr, rb_str_new_cstr(ex->conn->remote_addr));
    put_server_name(&p, ex);
    *parts = (up_rb_env_parts_t){Qnil, Qnil, Qnil};
    parts->input = req->body.len > 0 ? up_rb_input_new(&req->body) : srv->empty_input;
    put(&p, up_rb_key_rack_input, parts->input);
    if (srv->early_hints) {
        parts->hints = up_rb_early_hints_new(ex);
        put(&p, up_rb_key_rack_early_hints, parts->hints);
    }
    put(&p, up_rb_key_response_finished, rb_ary_new());
    if (hijackable) {
        parts->hijack = up_rb_hijack_new(srv, ex); /* full hijack (hijack.c) */
        put(&p, up_rb_key_rack_hijack, parts->hijack);
    }
    /* docs/websockets.md: present on every request, nil when it cannot upgrade. */
    put(&p, key_rack_upgrade_p,
        req->upgrade == UP_UPGRADE_WEBSOCKET ? sym_websocket
        : req->upgrade == UP_UPGRADE_SSE     ? sym_sse
                                             : Qnil);
    p.host = p.n + 1;
    put(&p, key_http_host, Qnil);
    long request_pairs = p.n;
    if (head->chunked) {
        /* The decoded length is known once the body is in; tell the app. */
        char digits[24];
        int n = snprintf(digits, sizeof(digits), "%llu", (unsigned long long)req->body.len);
        put(&p, key_content_length, rb_str_new(digits, n));
    }
    int underscored = put_headers(&p, head);
    if (head->target_form == UP_HTTP1_TARGET_ABSOLUTE && head->host.len > 0) {
        /* RFC 9112 §3.2.2: the target's authority replaces Host. */
        p.v[p.host] = slice_str(head->host);
    }
    int no_host = NIL_P(p.v[p.host]);

    VALUE env = rb_hash_dup(tls ? srv->env_template_tls
                            : req->http2 ? srv->env_template_h2c
                                         : srv->env_template);
    /* The table handed out makes env a Hash without write barriers (the GC scans it whole),
     * which is what setting its values in place needs. */
    fill_t f = {p.v, no_host ? request_pairs - 2 : request_pairs, 0};
    st_foreach_with_replace(RHASH_TBL(env), fill_i, fill_replace, (st_data_t)&f);
    /* The pairs the fill did not reach; HTTP_HOST only with a value. */
    for (long i = f.i; i < p.n; i += 2) {
        if (i + 1 != p.host || !no_host)
            rb_hash_aset(env, p.v[i], p.v[i + 1]);
    }
    if (no_host)
        rb_hash_delete(env, key_http_host);
    ALLOCV_END(tmp);
    if (hijackable)
        up_rb_hijack_set_env(parts->hijack, env);
    if (underscored)
        add_underscored_headers(env, head);
    return env;
}
