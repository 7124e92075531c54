/* A file as the app's response on `up`: the x-sendfile field, or a body with to_path
 * (node/up/exchange.js decides which). The engine sends it as it does for up_ruby
 * (file_response.h): the body by sendfile, Range, conditional requests and If-Range from the
 * request head it still holds, the app's content-type, etag and last-modified counted, HEAD
 * without a body. The path never reaches JavaScript's side of the wire. */

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "addon.h"
#include "fields.h"
#include "base/memory.h"
#include "handlers/file_response.h"
#include "http1/response.h"

/* The room for a last-modified or content-encoding of the app: an HTTP-date is 29 bytes, and a
 * longer value is no date the engine reads (file_response.c then uses the file's). */
#define SHORT_FIELD 64

static napi_value result_string(napi_env env, const char *what)
{
    napi_value v;
    napi_create_string_utf8(env, what, NAPI_AUTO_LENGTH, &v);
    return v;
}

/* A string's length in latin1 chars (one a byte), or -1 for another value. */
static int64_t latin1_length(napi_env env, napi_value v)
{
    size_t n;
    if (napi_get_value_string_latin1(env, v, NULL, 0, &n) != napi_ok)
        return -1;
    return (int64_t)n;
}

/* The app's fields the plan reads (file_response.h), each copied into a buffer here (one byte
 * more for the NUL napi writes). A content-type or etag slice keeps the value's own length,
 * which the plan compares with its limit before it reads the bytes; the other two are cut. */
typedef struct app_fields_t {
    up_file_app_t app;
    char type[UP_FILE_RESPONSE_MAX_TYPE + 1], etag[UP_FILE_RESPONSE_MAX_ETAG + 1];
    char last_modified[SHORT_FIELD + 1], encoding[SHORT_FIELD + 1];
} app_fields_t;

static void keep_field(napi_env env, napi_value v, char *buf, size_t size, int cut,
                       up_slice_t *out)
{
    int64_t n = latin1_length(env, v);
    size_t copied = 0;
    if (n < 0)
        return;
    napi_get_value_string_latin1(env, v, buf, size, &copied);
    out->base = buf;
    out->len = cut ? copied : (size_t)n;
}

/* Reads the four fields from the flat [name, value, ...] list, any case. */
static void read_app_fields(napi_env env, napi_value fields, uint32_t n, app_fields_t *a)
{
    for (uint32_t i = 0; i + 1 < n; i += 2) {
        napi_value name_v, value_v;
        char name[32];
        size_t len = 0;
        if (napi_get_element(env, fields, i, &name_v) != napi_ok ||
            napi_get_value_string_latin1(env, name_v, name, sizeof(name), &len) != napi_ok ||
            napi_get_element(env, fields, i + 1, &value_v) != napi_ok)
            continue;
        if (UP_LOWER_EQ(name, len, "content-type"))
            keep_field(env, value_v, a->type, sizeof(a->type), 0, &a->app.content_type);
        else if (UP_LOWER_EQ(name, len, "etag"))
            keep_field(env, value_v, a->etag, sizeof(a->etag), 0, &a->app.etag);
        else if (UP_LOWER_EQ(name, len, "last-modified"))
            keep_field(env, value_v, a->last_modified, sizeof(a->last_modified), 1,
                       &a->app.last_modified);
        else if (UP_LOWER_EQ(name, len, "content-encoding"))
            keep_field(env, value_v, a->encoding, sizeof(a->encoding), 1,
                       &a->app.content_encoding);
    }
}

/* The app's fields that the file's response leaves out (up_node_fields_skip_t): those
 * up_file_response_keeps does not let through. */
static int skip_unkept(const char *name, size_t len, void *arg)
{
    return !up_file_response_keeps(arg, name, len);
}

/* The x-sendfile path cannot be opened: the app's mistake, logged, and answered 404 when there
 * is no such file, 500 otherwise (as up_ruby answers it). */
static void refuse_path(up_node_server_t *srv, up_exchange_t *ex, const char *path, int e)
{
    char line[PATH_MAX + 128];
    snprintf(line, sizeof(line), "invalid response: x-sendfile \"%s\": %s", path, strerror(e));
    up_node_log(srv, line);
    int missing = e == ENOENT || e == ENOTDIR;
    up_response_send_simple(ex, missing ? 404 : 500, missing ? "Not Found" : "Internal Server Error",
                            0);
}

/* sendFile(token, status, fields, path, fromField): the file at path as the response, with the
 * app's status and flat [name, value, ...] fields. Returns undefined when the response was
 * made (the exchange is over); false, having done nothing, when path names no file that can be
 * opened and it came from a to_path (the caller sends the body another way); or what is wrong
 * as a string (nothing sent: the caller reports it and fails the exchange). A path from
 * x-sendfile that cannot be opened is answered here (refuse_path). */
static napi_value send_file(napi_env env, napi_callback_info info)
{
    size_t argc = 5;
    napi_value argv[5], result;
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    up_node_server_t *srv = up_node_server_of(env);
    up_node_slot_t *slot = argc == 5 ? up_node_exchange_slot(env, srv, argv[0]) : NULL;
    if (slot == NULL)
        return NULL;
    up_exchange_t *ex = slot->ex;
    int32_t status;
    uint32_t n = 0;
    bool from_field = false;
    char path[PATH_MAX];
    size_t path_len;
    if (napi_get_value_int32(env, argv[1], &status) != napi_ok ||
        napi_get_array_length(env, argv[2], &n) != napi_ok ||
        napi_get_value_string_utf8(env, argv[3], path, sizeof(path), &path_len) != napi_ok ||
        napi_get_value_bool(env, argv[4], &from_field) != napi_ok) {
        napi_throw_type_error(env, NULL, "sendFile(token, status, fields, path, fromField)");
        return NULL;
    }
    if (path_len == sizeof(path) - 1 || strlen(path) != path_len)
        return result_string(env, "the file's path is too long or holds a NUL");

    up_file_response_t f;
    if (up_file_response_open(&f, path) != 0) {
        if (!from_field) {
            napi_get_boolean(env, false, &result);
            return result;
        }
        refuse_path(srv, ex, path, errno);
        up_node_exchange_finish(srv, slot);
        return NULL;
    }
    app_fields_t a;
    memset(&a.app, 0, sizeof(a.app));
    a.app.status = status;
    read_app_fields(env, argv[2], n, &a);
    up_file_response_plan(&f, &ex->req->head, &a.app, time(NULL));
    const char *err = NULL;
    if (up_response_start(ex, f.status) != UP_RESPONSE_OK)
        err = "invalid status";
    else
        err = up_node_fields_add(env, &srv->scratch, ex, argv[2], n, skip_unkept, &f);
    up_node_scratch_trim(&srv->scratch);
    if (err != NULL) {
        up_file_response_release(&f);
        up_response_rollback(ex);
        return result_string(env, err);
    }
    up_file_response_send(&f, ex);
    up_node_exchange_finish(srv, slot);
    return NULL;
}

napi_status up_node_define_sendfile(napi_env env, napi_value exports)
{
    napi_property_descriptor props[] = {
        {"sendFile", NULL, send_file, NULL, NULL, NULL, napi_default_jsproperty, NULL},
    };
    return napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
}
