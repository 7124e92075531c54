/* One request through JavaScript, and the response calls JavaScript makes for it.
 *
 * The request reaches JavaScript in one call: the head as one latin1 string (the bytes from
 * the method to the last header field, as read), with the slices the engine parsed as offsets
 * in the meta Int32Array (addon.h), plus the body and the client's address. JavaScript cuts
 * the strings it needs out of the head (V8 makes a slice without copying), so no string is
 * made here per header field and no object per request.
 *
 * The response comes back in one call for an Array body (respond: status, a flat Array of
 * field names and values, the whole body). Streams go through head / write / finish. An
 * exchange still open when the request call returns is deferred (up_server_handler_t), and
 * finishing it later returns it to the loop. A JavaScript exception that escapes the call
 * becomes a logged 500. */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "addon.h"
#include "fields.h"
#include "base/memory.h"
#include "http1/response.h"
#include "upgrades.h"

/* A thrown value's description in the log, at most (a stack trace fits). */
#define MAX_THROWN_LOG (16 * 1024)
/* The largest body JavaScript is handed: its length travels in an Int32Array, and a String
 * (what rack.input reads from on Node) cannot be much longer anyway. */
#define MAX_BODY_TO_JS INT32_MAX

/* ---------------------------------------------------------------- slots */

/* Returns the token of a new slot for ex, or -1 when UP_NODE_MAX_SLOTS are taken. */
static int64_t take_slot(up_node_server_t *srv, up_exchange_t *ex)
{
    if (srv->free_slot == srv->num_slots) {
        if (srv->num_slots == UP_NODE_MAX_SLOTS)
            return -1;
        uint32_t grown = srv->num_slots == 0 ? 64 : srv->num_slots * 2;
        srv->slots = up_realloc(srv->slots, grown * sizeof(*srv->slots));
        for (uint32_t i = srv->num_slots; i < grown; i++)
            srv->slots[i] = (up_node_slot_t){.next_free = i + 1};
        srv->free_slot = srv->num_slots;
        srv->num_slots = grown;
        /* The last new slot's next_free == num_slots: the end of the list. */
    }
    uint32_t i = srv->free_slot;
    up_node_slot_t *slot = &srv->slots[i];
    srv->free_slot = slot->next_free;
    slot->ex = ex;
    slot->finished = 0;
    slot->deferred = 0;
    return (int64_t)(i | (slot->generation << UP_NODE_SLOT_BITS));
}

static void release_slot(up_node_server_t *srv, up_node_slot_t *slot)
{
    slot->ex = NULL;
    slot->generation = (slot->generation + 1) & ((1u << (32 - UP_NODE_SLOT_BITS)) - 1);
    slot->next_free = srv->free_slot;
    srv->free_slot = (uint32_t)(slot - srv->slots);
}

/* The exchange is complete: a deferred one goes back to the loop (through the mail, since
 * JavaScript may be finishing it from inside another connection's request call). */
static void finish_slot(up_node_server_t *srv, up_node_slot_t *slot)
{
    slot->finished = 1;
    up_node_served(srv, slot->ex, slot->started_ns);
    if (slot->deferred) {
        up_exchange_return(slot->ex);
        release_slot(srv, slot);
    }
}

/* ---------------------------------------------------------------- JavaScript calls */

static void call_log(up_node_server_t *srv, napi_value line)
{
    napi_env env = srv->env;
    napi_value fn, recv, result;
    napi_get_reference_value(env, srv->on_log, &fn);
    napi_get_global(env, &recv); /* napi_make_callback wants an object */
    if (napi_make_callback(env, srv->async, recv, fn, 1, &line, &result) != napi_ok) {
        napi_value ignored;
        napi_get_and_clear_last_exception(env, &ignored); /* a broken logger stops nothing */
    }
}

void up_node_log(up_node_server_t *srv, const char *line)
{
    napi_handle_scope scope;
    napi_value str;
    napi_open_handle_scope(srv->env, &scope);
    if (napi_create_string_utf8(srv->env, line, NAPI_AUTO_LENGTH, &str) == napi_ok)
        call_log(srv, str);
    napi_close_handle_scope(srv->env, scope);
}

/* A thrown value in the log: its stack when it has one, else its String(), cut at
 * MAX_THROWN_LOG bytes. */
static void log_thrown(up_node_server_t *srv, napi_value error)
{
    napi_env env = srv->env;
    napi_value stack, text;
    napi_valuetype type = napi_undefined;
    char line[MAX_THROWN_LOG];
    size_t len = 0;
    int n = snprintf(line, sizeof(line), "error in up's request handler: ");
    if (napi_get_named_property(env, error, "stack", &stack) == napi_ok)
        napi_typeof(env, stack, &type);
    if (type == napi_string)
        text = stack;
    else if (napi_coerce_to_string(env, error, &text) != napi_ok)
        text = NULL;
    if (text == NULL ||
        napi_get_value_string_utf8(env, text, line + n, sizeof(line) - (size_t)n, &len) != napi_ok) {
        napi_value ignored;
        napi_get_and_clear_last_exception(env, &ignored);
        snprintf(line + n, sizeof(line) - (size_t)n, "(a value that cannot be shown)");
    }
    up_node_log(srv, line);
}

/* A 500 unless bytes of the response may be out already; then the connection closes after
 * them, so the client cannot take a cut response for a whole one. */
static void fail_response(up_exchange_t *ex)
{
    if (up_response_rollback(ex))
        up_response_send_simple(ex, 500, "Internal Server Error", 0);
}

/* off/len of s in the head that starts at base and is head_len long; -1 when outside. */
static void put_slice(int32_t *meta, int at, up_slice_t s, const char *base, size_t head_len)
{
    if (s.len == 0) {
        meta[at] = 0;
        meta[at + 1] = 0;
        return;
    }
    if (s.base < base || (size_t)(s.base - base) + s.len > head_len) {
        meta[at] = -1;
        meta[at + 1] = (int32_t)s.len;
        return;
    }
    meta[at] = (int32_t)(s.base - base);
    meta[at + 1] = (int32_t)s.len;
}

static const char *slice_end(up_slice_t s, const char *end)
{
    return s.len > 0 && s.base + s.len > end ? s.base + s.len : end;
}

static const char *slice_start(up_slice_t s, const char *start)
{
    return s.len > 0 && s.base < start ? s.base : start;
}

up_request_result_t up_node_on_request(up_exchange_t *ex, void *user)
{
    up_node_server_t *srv = user;
    napi_env env = srv->env;
    const up_request_t *req = ex->req;
    if (srv->upgrades != NULL)
        up_node_run_events(srv->upgrades);
    const up_http1_request_t *head = &req->head;
    if (req->body.len > MAX_BODY_TO_JS) {
        up_response_send_simple(ex, 413, "Content Too Large", 1);
        up_node_served(srv, ex, up_node_now_ns());
        return UP_REQUEST_DONE;
    }
    int64_t token = take_slot(srv, ex);
    if (token < 0) {
        up_response_send_simple(ex, 503, "Service Unavailable", 1);
        up_node_served(srv, ex, up_node_now_ns());
        return UP_REQUEST_DONE;
    }
    up_node_slot_t *slot = &srv->slots[token & (UP_NODE_MAX_SLOTS - 1)];
    slot->started_ns = srv->access_log != NULL ? up_node_now_ns() : 0;

    /* The head as read: from the method to the end of the last slice. The parser's slices
     * are all in it but an absolute-form target's empty path (a static "/"). */
    const char *base = head->method.base, *end = slice_end(head->target, base + head->method.len);
    end = slice_end(head->host, end);
    for (size_t i = 0; i < head->num_headers; i++) {
        end = slice_end(head->headers[i].name, end);
        end = slice_end(head->headers[i].value, end);
    }
    if (req->http2) {
        /* A stream's fields sit in one buffer in the order the client sent them (http2.c):
         * the head string starts at the first, whichever it is. */
        base = slice_start(head->host, slice_start(head->target, base));
        for (size_t i = 0; i < head->num_headers; i++) {
            base = slice_start(head->headers[i].name, base);
            base = slice_start(head->headers[i].value, base);
        }
    }
    size_t head_len = (size_t)(end - base);
    int32_t *meta = srv->meta;
    meta[UP_NODE_META_TOKEN] = (int32_t)token;
    meta[UP_NODE_META_MINOR_VERSION] = head->minor_version;
    meta[UP_NODE_META_NUM_HEADERS] = (int32_t)head->num_headers;
    put_slice(meta, UP_NODE_META_METHOD, head->method, base, head_len);
    put_slice(meta, UP_NODE_META_TARGET, head->target, base, head_len);
    put_slice(meta, UP_NODE_META_PATH, head->path, base, head_len);
    put_slice(meta, UP_NODE_META_QUERY, head->query, base, head_len);
    put_slice(meta, UP_NODE_META_HOST, head->host, base, head_len);
    meta[UP_NODE_META_ABSOLUTE] = head->target_form == UP_HTTP1_TARGET_ABSOLUTE;
    meta[UP_NODE_META_CHUNKED] = head->chunked;
    meta[UP_NODE_META_BODY_FD] = req->body.fd;
    meta[UP_NODE_META_BODY_LENGTH] = (int32_t)req->body.len; /* at most MAX_BODY_TO_JS */
    meta[UP_NODE_META_UPGRADE] = (int32_t)req->upgrade;
    meta[UP_NODE_META_HTTP2] = req->http2;
    for (size_t i = 0; i < head->num_headers; i++) {
        put_slice(meta, UP_NODE_META_HEADERS + 4 * (int)i, head->headers[i].name, base, head_len);
        put_slice(meta, UP_NODE_META_HEADERS + 4 * (int)i + 2, head->headers[i].value, base,
                  head_len);
    }

    napi_handle_scope scope;
    napi_open_handle_scope(env, &scope);
    napi_value argv[5], fn, recv, result;
    napi_create_string_latin1(env, base, head_len, &argv[0]);
    if (req->body.mem != NULL && req->body.len > 0)
        napi_create_string_latin1(env, req->body.mem, (size_t)req->body.len, &argv[1]);
    else
        napi_get_undefined(env, &argv[1]);
    napi_create_string_latin1(env, ex->conn->remote_addr, NAPI_AUTO_LENGTH, &argv[2]);
    if (head->host.len == 0) {
        /* SERVER_NAME and SERVER_PORT then come from where the request came in. */
        const up_listener_t *l = ex->conn->listener;
        char where[sizeof(l->host) + sizeof(l->port) + 1];
        int n = snprintf(where, sizeof(where), "%s %s", l->host, l->port);
        napi_create_string_latin1(env, where, (size_t)n, &argv[3]);
    } else {
        napi_get_undefined(env, &argv[3]);
    }
    napi_get_boolean(env, ex->conn->transport->secure, &argv[4]); /* rack.url_scheme https */
    napi_get_reference_value(env, srv->on_request, &fn);
    napi_get_global(env, &recv); /* napi_make_callback wants an object */
    napi_status status = napi_make_callback(env, srv->async, recv, fn, 5, argv, &result);
    if (status != napi_ok) {
        napi_value error;
        if (napi_get_and_clear_last_exception(env, &error) == napi_ok)
            log_thrown(srv, error);
        if (!slot->finished) {
            fail_response(ex);
            finish_slot(srv, slot); /* not deferred yet: the slot is released below */
        }
    }
    napi_close_handle_scope(env, scope);
    if (slot->finished) {
        release_slot(srv, slot);
        return UP_REQUEST_DONE;
    }
    slot->deferred = 1;
    return UP_REQUEST_DEFERRED;
}

/* ---------------------------------------------------------------- response calls */

/* The slot a token names, or NULL (an exception is pending) when it names none now. */
static up_node_slot_t *slot_of(napi_env env, up_node_server_t *srv, napi_value v)
{
    uint32_t token;
    if (srv == NULL || napi_get_value_uint32(env, v, &token) != napi_ok) {
        napi_throw_type_error(env, NULL, "not an exchange token");
        return NULL;
    }
    uint32_t i = token & (UP_NODE_MAX_SLOTS - 1);
    if (i >= srv->num_slots || srv->slots[i].ex == NULL ||
        srv->slots[i].generation != token >> UP_NODE_SLOT_BITS || srv->slots[i].finished) {
        napi_throw_error(env, NULL, "the exchange is over");
        return NULL;
    }
    return &srv->slots[i];
}

/* Starts the response with the header fields of the flat [name, value, ...] Array. Returns
 * NULL, or what is wrong (nothing is staged then). */
static const char *start_response(napi_env env, up_node_server_t *srv, up_exchange_t *ex,
                                  napi_value status_v, napi_value fields)
{
    int32_t status;
    uint32_t n = 0;
    if (napi_get_value_int32(env, status_v, &status) != napi_ok ||
        up_response_start(ex, status) != UP_RESPONSE_OK)
        return "invalid status";
    if (napi_get_array_length(env, fields, &n) != napi_ok)
        return "header fields must be an Array";
    return up_node_fields_add(env, &srv->scratch, ex, fields, n, NULL, NULL);
}

static napi_value error_string(napi_env env, const char *what)
{
    napi_value v;
    napi_create_string_utf8(env, what, NAPI_AUTO_LENGTH, &v);
    return v;
}

/* respond(token, status, fields, body, utf8): the whole response. Returns undefined, or
 * what is wrong with it as a string (then nothing was sent: the caller reports it and fails
 * the exchange). */
static napi_value respond(napi_env env, napi_callback_info info)
{
    size_t argc = 5;
    napi_value argv[5];
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    up_node_server_t *srv = up_node_server_of(env);
    up_node_slot_t *slot = argc == 5 ? slot_of(env, srv, argv[0]) : NULL;
    if (slot == NULL)
        return NULL;
    up_exchange_t *ex = slot->ex;
    bool utf8 = false;
    napi_get_value_bool(env, argv[4], &utf8);
    const char *err = start_response(env, srv, ex, argv[1], argv[2]);
    const char *body = NULL;
    size_t len = 0;
    if (err == NULL &&
        up_node_scratch_bytes(env, &srv->scratch, argv[3], utf8, 0, &body, &len) != 0)
        err = "the body is not a String";
    if (err == NULL && (up_response_end_head(ex, (int64_t)len) != UP_RESPONSE_OK ||
                        (len > 0 && up_response_write(ex, body, len) == UP_RESPONSE_E_STATE)))
        err = "the response cannot be written";
    up_node_scratch_trim(&srv->scratch);
    if (err != NULL) {
        up_response_rollback(ex);
        return error_string(env, err);
    }
    up_response_finish(ex);
    finish_slot(srv, slot);
    return NULL;
}

/* head(token, status, fields): a streamed response's head (chunked unless a length is set). */
static napi_value head(napi_env env, napi_callback_info info)
{
    size_t argc = 3;
    napi_value argv[3];
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    up_node_server_t *srv = up_node_server_of(env);
    up_node_slot_t *slot = argc == 3 ? slot_of(env, srv, argv[0]) : NULL;
    if (slot == NULL)
        return NULL;
    const char *err = start_response(env, srv, slot->ex, argv[1], argv[2]);
    if (err == NULL && up_response_end_head(slot->ex, -1) != UP_RESPONSE_OK)
        err = "the response cannot be written";
    if (err != NULL) {
        up_response_rollback(slot->ex);
        return error_string(env, err);
    }
    return NULL;
}

/* write(token, part, utf8): one streamed part, sent at once. Returns false when the client is
 * gone (the producer stops), else true. */
static napi_value write_part(napi_env env, napi_callback_info info)
{
    size_t argc = 3;
    napi_value argv[3], result;
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    up_node_server_t *srv = up_node_server_of(env);
    up_node_slot_t *slot = argc == 3 ? slot_of(env, srv, argv[0]) : NULL;
    if (slot == NULL)
        return NULL;
    bool utf8 = false;
    napi_get_value_bool(env, argv[2], &utf8);
    const char *data;
    size_t len;
    if (up_node_scratch_bytes(env, &srv->scratch, argv[1], utf8, 0, &data, &len) != 0) {
        napi_throw_type_error(env, NULL, "a body part must be a String or a Buffer");
        return NULL;
    }
    int ok = up_response_write(slot->ex, data, len) == UP_RESPONSE_OK &&
             up_response_send(slot->ex) == 0;
    up_node_scratch_trim(&srv->scratch);
    napi_get_boolean(env, ok, &result);
    return result;
}

/* finish(token): the end of a streamed body; the exchange is over. */
static napi_value finish(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value argv[1];
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    up_node_server_t *srv = up_node_server_of(env);
    up_node_slot_t *slot = argc == 1 ? slot_of(env, srv, argv[0]) : NULL;
    if (slot == NULL)
        return NULL;
    up_response_finish(slot->ex);
    finish_slot(srv, slot);
    return NULL;
}

/* fail(token): the app failed; a 500 if nothing was sent yet. The exchange is over. */
static napi_value fail(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value argv[1];
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    up_node_server_t *srv = up_node_server_of(env);
    up_node_slot_t *slot = argc == 1 ? slot_of(env, srv, argv[0]) : NULL;
    if (slot == NULL)
        return NULL;
    fail_response(slot->ex);
    finish_slot(srv, slot);
    return NULL;
}

/* earlyHints(token, fields): a 103 with these fields, sent at once (HTTP/1.1 only: the caller
 * checks). Returns undefined, or what is wrong as a string. */
static napi_value early_hints(napi_env env, napi_callback_info info)
{
    size_t argc = 2;
    napi_value argv[2], status;
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    up_node_server_t *srv = up_node_server_of(env);
    up_node_slot_t *slot = argc == 2 ? slot_of(env, srv, argv[0]) : NULL;
    if (slot == NULL)
        return NULL;
    napi_create_int32(env, 103, &status);
    const char *err = start_response(env, srv, slot->ex, status, argv[1]);
    if (err == NULL && up_response_end_head(slot->ex, -1) != UP_RESPONSE_OK)
        err = "the hints cannot be written";
    if (err != NULL) {
        up_response_rollback(slot->ex);
        return error_string(env, err);
    }
    up_response_send(slot->ex);
    return NULL;
}

napi_status up_node_define_exchange(napi_env env, napi_value exports)
{
    napi_property_descriptor props[] = {
        {"respond", NULL, respond, NULL, NULL, NULL, napi_default_jsproperty, NULL},
        {"head", NULL, head, NULL, NULL, NULL, napi_default_jsproperty, NULL},
        {"write", NULL, write_part, NULL, NULL, NULL, napi_default_jsproperty, NULL},
        {"finish", NULL, finish, NULL, NULL, NULL, napi_default_jsproperty, NULL},
        {"fail", NULL, fail, NULL, NULL, NULL, napi_default_jsproperty, NULL},
        {"earlyHints", NULL, early_hints, NULL, NULL, NULL, napi_default_jsproperty, NULL},
    };
    return napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
}

up_node_slot_t *up_node_exchange_slot(napi_env env, up_node_server_t *srv, napi_value token)
{
    return slot_of(env, srv, token);
}

void up_node_exchange_finish(up_node_server_t *srv, up_node_slot_t *slot)
{
    finish_slot(srv, slot);
}

const char *up_node_exchange_start(napi_env env, up_node_server_t *srv, up_node_slot_t *slot,
                                   napi_value status, napi_value fields)
{
    return start_response(env, srv, slot->ex, status, fields);
}
