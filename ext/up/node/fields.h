#ifndef UP_NODE_FIELDS_H
#define UP_NODE_FIELDS_H

/* The app's response header fields into the engine's response, as JavaScript hands them over:
 * a flat Array [name, value, ...] of Strings (node/up/exchange.js and websocket.js flatten
 * the Rack headers). One walk for every response call that takes fields: a response's head
 * (exchange.c), an upgrade's 101 or event stream (websocket.c), a file's (sendfile.c); they
 * differ only in the fields they leave out. */

#include <node_api.h>
#include <stddef.h>
#include <stdint.h>
#include "core/conn.h"
#include "core/exchange.h"
#include "scratch.h"

/* Whether a walk leaves the field named name (len bytes, not NUL-terminated) out. */
typedef int (*up_node_fields_skip_t)(const char *name, size_t len, void *arg);

/* Adds each (name, value) of fields (n elements; an odd last one is ignored) to ex's
 * response, after up_response_start, but those skip(name, len, arg) leaves out (skip NULL:
 * none); a skipped field's value is never read. Each String's bytes (one char a byte) are
 * copied into s for the call, the name below its value. Returns NULL, or what is wrong in
 * up_ruby's words (`invalid content-length "abc"`, `invalid response header name "a b"`, `the
 * value of response header "x" has CR, LF or NUL`), held in s->message until the next walk with
 * s; the fields before it are staged, and the caller rolls the response back. JavaScript's
 * thread, inside a Node-API call. */
const char *up_node_fields_add(napi_env env, up_node_scratch_t *s, up_exchange_t *ex,
                               napi_value fields, uint32_t n, up_node_fields_skip_t skip,
                               void *arg);

#endif
