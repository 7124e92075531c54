/* The module (up.node) and the server's life: the one server of this JavaScript environment
 * (a process, or a worker thread), kept as the environment's instance data. JavaScript calls
 * createServer once, then listen or adopt for each address; stop begins a graceful stop and
 * numConns tells when it is done; closeAll cuts what is left. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>
#include "addon.h"
#include "loop_uv.h"
#include "base/memory.h"
#include "upgrades.h"

#define MAX_HOST 256
#define MAX_PORT 16

static napi_value throw_error(napi_env env, const char *message)
{
    napi_throw_error(env, NULL, message);
    return NULL;
}

up_node_server_t *up_node_server_of(napi_env env)
{
    void *data = NULL;
    napi_get_instance_data(env, &data);
    return data;
}

static void on_log(const char *message, void *user)
{
    up_node_log(user, message);
}

int64_t up_node_option(napi_env env, napi_value options, const char *name, int64_t fallback)
{
    napi_value v;
    napi_valuetype type;
    int64_t n;
    if (napi_get_named_property(env, options, name, &v) != napi_ok ||
        napi_typeof(env, v, &type) != napi_ok || type != napi_number ||
        napi_get_value_int64(env, v, &n) != napi_ok)
        return fallback;
    return n;
}

/* The limits Up::Options checked, in the engine's units (config_defaults otherwise). */
static void read_config(napi_env env, napi_value options, up_server_config_t *cfg)
{
    up_server_config_defaults(cfg);
    cfg->max_head_size =
        (size_t)up_node_option(env, options, "max_head_size", (int64_t)cfg->max_head_size);
    cfg->max_headers =
        (size_t)up_node_option(env, options, "max_headers", (int64_t)cfg->max_headers);
    cfg->max_body_size =
        (uint64_t)up_node_option(env, options, "max_body_size", (int64_t)cfg->max_body_size);
    cfg->head_timeout_ms =
        (unsigned)up_node_option(env, options, "head_timeout_ms", cfg->head_timeout_ms);
    cfg->body_timeout_ms =
        (unsigned)up_node_option(env, options, "body_timeout_ms", cfg->body_timeout_ms);
    cfg->keepalive_timeout_ms =
        (unsigned)up_node_option(env, options, "keepalive_timeout_ms", cfg->keepalive_timeout_ms);
    cfg->write_timeout_ms =
        (unsigned)up_node_option(env, options, "write_timeout_ms", cfg->write_timeout_ms);
    cfg->max_pipeline = (unsigned)up_node_option(env, options, "max_pipeline", cfg->max_pipeline);
    cfg->exclusive_accept =
        (int)up_node_option(env, options, "exclusive_accept", cfg->exclusive_accept);
    if (cfg->max_head_size > UP_MAX_HEAD_SIZE_LIMIT)
        cfg->max_head_size = UP_MAX_HEAD_SIZE_LIMIT;
    if (cfg->max_headers > UP_MAX_HEADERS_LIMIT)
        cfg->max_headers = UP_MAX_HEADERS_LIMIT;
}

/* The environment is going away (the process exits, or the worker thread ends). */
static void free_server(napi_env env, void *data, void *hint)
{
    up_node_server_t *srv = data;
    (void)hint;
    if (srv->server != NULL)
        up_server_free(srv->server);
    up_static_free(srv->static_files); /* after the server: nothing asks it any more */
    up_node_access_log_free(srv);
    if (srv->loop != NULL)
        up_loop_free(srv->loop);
    if (srv->upgrades != NULL)
        up_node_upgrades_free(srv->upgrades);
    if (srv->hijacks != NULL)
        up_node_hijacks_free(srv->hijacks);
    if (srv->on_request != NULL)
        napi_delete_reference(env, srv->on_request);
    if (srv->on_log != NULL)
        napi_delete_reference(env, srv->on_log);
    if (srv->meta_ref != NULL)
        napi_delete_reference(env, srv->meta_ref);
    if (srv->async != NULL)
        napi_async_destroy(env, srv->async);
    free(srv->slots);
    up_node_scratch_free(&srv->scratch);
    free(srv);
}

/* What the server's listeners speak. */
static const up_protocol_t *protocol_of(const up_node_server_t *srv)
{
#ifdef UP_HAVE_NGHTTP2
    if (srv->http2)
        return &up_http2_negotiate_protocol;
#else
    (void)srv;
#endif
    return &up_http1_protocol;
}

/* createServer(options, onRequest, onLog): the meta Int32Array (addon.h). */
static napi_value create_server(napi_env env, napi_callback_info info)
{
    size_t argc = 3;
    napi_value argv[3];
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 3)
        return throw_error(env, "createServer(options, onRequest, onLog)");
    if (up_node_server_of(env) != NULL)
        return throw_error(env, "createServer: one server per process");
    uv_loop_t *uv;
    if (napi_get_uv_event_loop(env, &uv) != napi_ok)
        return throw_error(env, "createServer: no uv loop");

    up_node_server_t *srv = up_calloc(1, sizeof(*srv));
    srv->env = env;
    up_server_config_t cfg;
    read_config(env, argv[0], &cfg);
    srv->http2 = up_node_option(env, argv[0], "http2", 1) != 0 && up_http2_available();
    srv->meta_len = UP_NODE_META_SIZE(cfg.max_headers);
    napi_value buffer, meta, name;
    void *mem;
    if (napi_create_arraybuffer(env, srv->meta_len * sizeof(int32_t), &mem, &buffer) != napi_ok ||
        napi_create_typedarray(env, napi_int32_array, srv->meta_len, buffer, 0, &meta) != napi_ok ||
        napi_create_reference(env, meta, 1, &srv->meta_ref) != napi_ok ||
        napi_create_reference(env, argv[1], 1, &srv->on_request) != napi_ok ||
        napi_create_reference(env, argv[2], 1, &srv->on_log) != napi_ok ||
        napi_create_string_utf8(env, "up.request", NAPI_AUTO_LENGTH, &name) != napi_ok ||
        napi_async_init(env, NULL, name, &srv->async) != napi_ok) {
        free_server(env, srv, NULL);
        return throw_error(env, "createServer: out of JavaScript resources");
    }
    srv->meta = mem;
    srv->loop = up_loop_uv_new(uv);
    if (srv->loop == NULL) {
        free_server(env, srv, NULL);
        return throw_error(env, "createServer: cannot make the loop's handles");
    }
    up_server_handler_t handler = {
        .on_request = up_node_on_request, .on_log = on_log, .user = srv,
        .on_served = up_node_on_served};
    srv->server = up_server_new(srv->loop, &cfg, &handler);
    int no_static = 0;
    srv->static_files = up_node_static_new(env, argv[0], &no_static);
    if (srv->static_files == NULL && !no_static) {
        free_server(env, srv, NULL);
        return NULL; /* its exception says which setting is bad */
    }
    if (srv->static_files != NULL)
        up_static_install(srv->static_files, srv->server);
    napi_set_instance_data(env, srv, free_server, NULL);
    return meta;
}

static up_node_server_t *started(napi_env env)
{
    up_node_server_t *srv = up_node_server_of(env);
    if (srv == NULL)
        throw_error(env, "no server: call createServer first");
    return srv;
}

/* listen(host, port): the port bound (the one the kernel picked for 0). Throws with the
 * engine's message ("Address already in use") when it cannot. */
static napi_value listen_on(napi_env env, napi_callback_info info)
{
    size_t argc = 2;
    napi_value argv[2], result;
    char host[MAX_HOST], port[MAX_PORT];
    size_t len;
    int32_t port_number;
    up_node_server_t *srv = started(env);
    if (srv == NULL)
        return NULL;
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 2 ||
        napi_get_value_string_utf8(env, argv[0], host, sizeof(host), &len) != napi_ok ||
        napi_get_value_int32(env, argv[1], &port_number) != napi_ok)
        return throw_error(env, "listen(host, port)");
    snprintf(port, sizeof(port), "%d", port_number);
    const char *err = NULL;
    if (up_server_listen_with(srv->server, host, port, &up_transport_tcp, NULL, protocol_of(srv),
                              &err) != 0)
        return throw_error(env, err);
    napi_create_int32(env, atoi(srv->server->listeners->port), &result);
    return result;
}

/* adopt(fd, tls): serves a listening socket made elsewhere (the cluster's shared one), with
 * TLS when tls is its settings (tls.c), plain TCP when it is absent or null. */
static napi_value adopt(napi_env env, napi_callback_info info)
{
    size_t argc = 2;
    napi_value argv[2];
    napi_valuetype tls_type = napi_undefined;
    int32_t fd;
    up_node_server_t *srv = started(env);
    if (srv == NULL)
        return NULL;
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 ||
        napi_get_value_int32(env, argv[0], &fd) != napi_ok ||
        (argc > 1 && napi_typeof(env, argv[1], &tls_type) != napi_ok))
        return throw_error(env, "adopt(fd, tls)");
    const char *err = NULL;
    if (tls_type == napi_undefined || tls_type == napi_null) {
        if (up_server_adopt_listener_with(srv->server, fd, &up_transport_tcp, NULL,
                                          protocol_of(srv), &err) != 0)
            return throw_error(env, err);
        return NULL;
    }
    up_tls_context_t *ctx = up_node_tls_context(env, argv[1]);
    if (ctx == NULL)
        return NULL; /* its exception says why */
    int failed = up_server_adopt_listener_with(srv->server, fd, &up_transport_tls, ctx,
                                               protocol_of(srv), &err);
    up_tls_context_release(ctx); /* the listener holds its own reference */
    if (failed != 0)
        return throw_error(env, err);
    return NULL;
}

static napi_value stop(napi_env env, napi_callback_info info)
{
    (void)info;
    up_node_server_t *srv = started(env);
    if (srv != NULL)
        up_server_stop(srv->server);
    return NULL;
}

static napi_value close_all(napi_env env, napi_callback_info info)
{
    (void)info;
    up_node_server_t *srv = started(env);
    if (srv != NULL)
        up_server_close_all(srv->server);
    return NULL;
}

static napi_value num_conns(napi_env env, napi_callback_info info)
{
    (void)info;
    napi_value result;
    up_node_server_t *srv = started(env);
    if (srv == NULL)
        return NULL;
    napi_create_double(env, (double)up_server_num_conns(srv->server), &result);
    return result;
}

static napi_value init(napi_env env, napi_value exports)
{
    napi_property_descriptor props[] = {
        {"createServer", NULL, create_server, NULL, NULL, NULL, napi_default_jsproperty, NULL},
        {"listen", NULL, listen_on, NULL, NULL, NULL, napi_default_jsproperty, NULL},
        {"adopt", NULL, adopt, NULL, NULL, NULL, napi_default_jsproperty, NULL},
        {"stop", NULL, stop, NULL, NULL, NULL, napi_default_jsproperty, NULL},
        {"closeAll", NULL, close_all, NULL, NULL, NULL, napi_default_jsproperty, NULL},
        {"numConns", NULL, num_conns, NULL, NULL, NULL, napi_default_jsproperty, NULL},
    };
    if (napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props) != napi_ok ||
        up_node_define_exchange(env, exports) != napi_ok ||
        up_node_define_sendfile(env, exports) != napi_ok ||
        up_node_define_hijack(env, exports) != napi_ok ||
        up_node_define_served(env, exports) != napi_ok ||
        up_node_define_upgrades(env, exports) != napi_ok ||
        up_node_define_tls(env, exports) != napi_ok ||
        up_node_define_restart(env, exports) != napi_ok)
        return NULL;
    return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
