/* HTTPS for `up`: the engine's TLS context (tls.h) of one listener, made from the
 * settings Up::TLSSettings gave its bind (Up::Node::AddonLauncher passes them as JSON,
 * node/up/certificates.js adds the key's passphrase and hands them to adopt), and made again
 * from the same files on HUP (reloadTLS). */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "addon.h"
#include "base/memory.h"
#include "transport/tls.h"

/* A path or passphrase longer than this is refused (PATH_MAX on Linux). */
#define MAX_SETTING 4096
/* Listeners one reloadTLS may name: more than any bind list makes. */
#define UP_NODE_MAX_TLS_LISTENERS 4096

/* The strings a config points at, freed together: three per certificate and a host name per
 * SNI certificate, the passphrase and the ticket secret. */
typedef struct strings_t {
    char *items[4 * (UP_TLS_MAX_HOSTS + 1) + 1];
    size_t count;
} strings_t;

/* obj[name] as a new string, NULL when absent or null; *bad set when it is not a string or too
 * long. */
static const char *string_of(napi_env env, napi_value obj, const char *name, strings_t *keep,
                             int *bad)
{
    napi_value v;
    napi_valuetype type;
    size_t len;
    if (napi_get_named_property(env, obj, name, &v) != napi_ok ||
        napi_typeof(env, v, &type) != napi_ok) {
        *bad = 1;
        return NULL;
    }
    if (type == napi_undefined || type == napi_null)
        return NULL;
    if (type != napi_string || napi_get_value_string_utf8(env, v, NULL, 0, &len) != napi_ok ||
        len >= MAX_SETTING || keep->count >= sizeof(keep->items) / sizeof(keep->items[0])) {
        *bad = 1;
        return NULL;
    }
    char *s = up_malloc(len + 1);
    napi_get_value_string_utf8(env, v, s, len + 1, &len);
    keep->items[keep->count++] = s;
    return s;
}

static void read_cert(napi_env env, napi_value obj, up_tls_cert_t *cert, strings_t *keep, int *bad)
{
    cert->cert_file = string_of(env, obj, "cert_file", keep, bad);
    cert->key_file = string_of(env, obj, "key_file", keep, bad);
    cert->ca_file = string_of(env, obj, "ca_file", keep, bad);
    if (cert->cert_file == NULL || cert->key_file == NULL)
        *bad = 1;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* ticket_secret: UP_TLS_TICKET_SECRET_SIZE bytes as lowercase hex. */
static int read_secret(const char *hex, unsigned char *out)
{
    if (hex == NULL || strlen(hex) != 2 * UP_TLS_TICKET_SECRET_SIZE)
        return -1;
    for (size_t i = 0; i < UP_TLS_TICKET_SECRET_SIZE; i++) {
        int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out[i] = (unsigned char)(hi << 4 | lo);
    }
    return 0;
}

static void read_hosts(napi_env env, napi_value settings, up_tls_cert_t *hosts, size_t *num,
                       strings_t *keep, int *bad)
{
    napi_value list, entry;
    bool is_array = false;
    uint32_t n = 0;
    *num = 0;
    if (napi_get_named_property(env, settings, "hosts", &list) != napi_ok ||
        napi_is_array(env, list, &is_array) != napi_ok || !is_array ||
        napi_get_array_length(env, list, &n) != napi_ok || n > UP_TLS_MAX_HOSTS) {
        *bad = 1;
        return;
    }
    for (uint32_t i = 0; i < n && !*bad; i++) {
        if (napi_get_element(env, list, i, &entry) != napi_ok) {
            *bad = 1;
            return;
        }
        hosts[i].host = string_of(env, entry, "host", keep, bad);
        read_cert(env, entry, &hosts[i], keep, bad);
        if (hosts[i].host == NULL)
            *bad = 1;
    }
    *num = n;
}

up_tls_context_t *up_node_tls_context(napi_env env, napi_value settings)
{
    strings_t *keep = up_calloc(1, sizeof(*keep));
    up_tls_cert_t *hosts = up_calloc(UP_TLS_MAX_HOSTS, sizeof(*hosts));
    up_tls_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    int bad = 0;
    read_cert(env, settings, &cfg.cert, keep, &bad);
    read_hosts(env, settings, hosts, &cfg.num_hosts, keep, &bad);
    cfg.hosts = hosts;
    cfg.key_password = string_of(env, settings, "key_password", keep, &bad);
    if (read_secret(string_of(env, settings, "ticket_secret", keep, &bad), cfg.ticket_secret) != 0)
        bad = 1;
    up_tls_context_t *ctx = NULL;
    char err[512];
    if (bad) {
        napi_throw_error(env, NULL, "bad TLS settings (cert_file, key_file, ca_file, hosts, "
                                    "key_password, ticket_secret)");
    } else {
        ctx = up_tls_context_new(&cfg, err, sizeof(err));
        if (ctx == NULL)
            napi_throw_error(env, NULL, err);
    }
    for (size_t i = 0; i < keep->count; i++)
        free(keep->items[i]);
    free(keep);
    free(hosts);
    return ctx;
}

/* The TLS listener on fd, or NULL. */
static up_listener_t *tls_listener(up_context_t *server, int32_t fd)
{
    for (up_listener_t *l = server->listeners; l != NULL; l = l->next)
        if (l->watcher.fd == fd && l->transport == &up_transport_tls)
            return l;
    return NULL;
}

/* reloadTLS([[fd, settings], ...]): loads every listener's certificates again from their
 * files, all or none: when one does not load, nothing changes and the exception says why in
 * one line (the engine's message, naming the file). Otherwise each listener serves its new
 * context from the loop's next wake-up; connections open go on with theirs. Returns the
 * default certificate's subject of each, in order ("CN = localhost"). */
static napi_value reload_tls(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value list, entry, fd_value, settings, result;
    bool is_array = false;
    uint32_t n = 0;
    up_node_server_t *srv = up_node_server_of(env);
    if (srv == NULL || srv->server == NULL) {
        napi_throw_error(env, NULL, "reloadTLS before createServer");
        return NULL;
    }
    if (napi_get_cb_info(env, info, &argc, &list, NULL, NULL) != napi_ok || argc < 1 ||
        napi_is_array(env, list, &is_array) != napi_ok || !is_array ||
        napi_get_array_length(env, list, &n) != napi_ok || n > UP_NODE_MAX_TLS_LISTENERS) {
        napi_throw_error(env, NULL, "reloadTLS([[fd, settings], ...])");
        return NULL;
    }
    up_tls_context_t **made = up_calloc(n ? n : 1, sizeof(*made));
    up_listener_t **listeners = up_calloc(n ? n : 1, sizeof(*listeners));
    uint32_t count = 0;
    for (; count < n; count++) {
        int32_t fd;
        if (napi_get_element(env, list, count, &entry) != napi_ok ||
            napi_get_element(env, entry, 0, &fd_value) != napi_ok ||
            napi_get_element(env, entry, 1, &settings) != napi_ok ||
            napi_get_value_int32(env, fd_value, &fd) != napi_ok) {
            napi_throw_error(env, NULL, "reloadTLS([[fd, settings], ...])");
            break;
        }
        listeners[count] = tls_listener(srv->server, fd);
        if (listeners[count] == NULL) {
            napi_throw_error(env, NULL, "reloadTLS: no TLS listener on that fd");
            break;
        }
        made[count] = up_node_tls_context(env, settings);
        if (made[count] == NULL)
            break; /* its exception says why */
    }
    result = NULL;
    if (count == n && napi_create_array_with_length(env, n, &result) == napi_ok) {
        for (uint32_t i = 0; i < n; i++) {
            char subject[256];
            napi_value text;
            up_server_any_replace_context(srv->server, &up_transport_tls,
                                          listeners[i]->transport_ctx, made[i]);
            if (up_tls_context_subject(made[i], NULL, subject, sizeof(subject)) != 0)
                snprintf(subject, sizeof(subject), "?");
            if (napi_create_string_utf8(env, subject, NAPI_AUTO_LENGTH, &text) == napi_ok)
                napi_set_element(env, result, i, text);
        }
    }
    for (uint32_t i = 0; i < count; i++)
        up_tls_context_release(made[i]); /* the listener takes its own reference */
    free(made);
    free(listeners);
    return result;
}

napi_status up_node_define_tls(napi_env env, napi_value exports)
{
    napi_property_descriptor props[] = {
        {"reloadTLS", NULL, reload_tls, NULL, NULL, NULL, napi_default_jsproperty, NULL},
    };
    return napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
}
