/* The requests the server finished, as the control endpoint and the access log see them:
 * counted (stats), and written to the access log (engine/http1/access_log.h) when --access-log
 * asks for one. Off, the log costs a NULL check a request. Like the rest of the addon, this
 * runs on the loop thread (Node's main thread). */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "addon.h"
#include "base/memory.h"

#define MAX_PATH_ARG 4096

static napi_value throw_error(napi_env env, const char *message)
{
    napi_throw_error(env, NULL, message);
    return NULL;
}

uint64_t up_node_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void up_node_served(up_node_server_t *srv, up_exchange_t *ex, uint64_t started_ns)
{
    srv->requests++;
    if (srv->access_log != NULL)
        up_access_log_request(srv->access_log, ex, up_node_now_ns() - started_ns);
}

void up_node_on_served(up_exchange_t *ex, void *user)
{
    up_node_server_t *srv = user;
    srv->static_served++;
    up_node_served(srv, ex, up_node_now_ns());
}

void up_node_access_log_free(up_node_server_t *srv)
{
    if (srv->access_log == NULL)
        return;
    up_access_log_destroy(srv->access_log);
    free(srv->access_log);
    srv->access_log = NULL;
}

/* openAccessLog(path): lines from now on go to path (appended). Throws "PATH: strerror". */
static napi_value open_access_log(napi_env env, napi_callback_info info)
{
    size_t argc = 1, len;
    napi_value argv[1];
    char path[MAX_PATH_ARG];
    up_node_server_t *srv = up_node_server_of(env);
    if (srv == NULL)
        return throw_error(env, "no server: call createServer first");
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 ||
        napi_get_value_string_utf8(env, argv[0], path, sizeof(path), &len) != napi_ok ||
        len == sizeof(path) - 1)
        return throw_error(env, "openAccessLog(path)");
    if (srv->access_log != NULL)
        return throw_error(env, "openAccessLog: the access log is open already");
    up_access_log_t *log = up_calloc(1, sizeof(*log));
    up_access_log_init(log);
    if (up_access_log_open(log, path) != 0) {
        char message[MAX_PATH_ARG + 128];
        snprintf(message, sizeof(message), "%s: %s", path, strerror(errno));
        up_access_log_destroy(log);
        free(log);
        return throw_error(env, message);
    }
    srv->access_log = log;
    return NULL;
}

/* flushAccessLog(): what is buffered goes to the file (JavaScript calls it once a second). */
static napi_value flush_access_log(napi_env env, napi_callback_info info)
{
    (void)info;
    up_node_server_t *srv = up_node_server_of(env);
    if (srv != NULL && srv->access_log != NULL)
        up_access_log_flush(srv->access_log, 1);
    return NULL;
}

/* reopenAccessLog(): after a rotation (HUP). Returns undefined, or why the file could not be
 * opened again by its name (the old one stays in use). */
static napi_value reopen_access_log(napi_env env, napi_callback_info info)
{
    (void)info;
    napi_value result;
    up_node_server_t *srv = up_node_server_of(env);
    if (srv == NULL || srv->access_log == NULL || up_access_log_reopen(srv->access_log) == 0)
        return NULL;
    napi_create_string_utf8(env, strerror(errno), NAPI_AUTO_LENGTH, &result);
    return result;
}

/* closeAccessLog(): writes what is buffered and closes the file (at the stop). */
static napi_value close_access_log(napi_env env, napi_callback_info info)
{
    (void)info;
    up_node_server_t *srv = up_node_server_of(env);
    if (srv != NULL)
        up_node_access_log_free(srv);
    return NULL;
}

static void set_number(napi_env env, napi_value obj, const char *name, double value)
{
    napi_value v;
    napi_create_double(env, value, &v);
    napi_set_named_property(env, obj, name, v);
}

/* stats(): { requests: finished since start (static files included), static_files: those the
 * engine answered from files, connections: open now }. */
static napi_value stats(napi_env env, napi_callback_info info)
{
    (void)info;
    napi_value result;
    up_node_server_t *srv = up_node_server_of(env);
    if (srv == NULL)
        return throw_error(env, "no server: call createServer first");
    napi_create_object(env, &result);
    set_number(env, result, "requests", (double)srv->requests);
    set_number(env, result, "static_files", (double)srv->static_served);
    set_number(env, result, "connections", (double)up_server_num_conns(srv->server));
    return result;
}

napi_status up_node_define_served(napi_env env, napi_value exports)
{
    napi_property_descriptor props[] = {
        {"openAccessLog", NULL, open_access_log, NULL, NULL, NULL, napi_default_jsproperty, NULL},
        {"flushAccessLog", NULL, flush_access_log, NULL, NULL, NULL, napi_default_jsproperty,
         NULL},
        {"reopenAccessLog", NULL, reopen_access_log, NULL, NULL, NULL, napi_default_jsproperty,
         NULL},
        {"closeAccessLog", NULL, close_access_log, NULL, NULL, NULL, napi_default_jsproperty,
         NULL},
        {"stats", NULL, stats, NULL, NULL, NULL, napi_default_jsproperty, NULL},
    };
    return napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
}
