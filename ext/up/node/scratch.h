#ifndef UP_NODE_SCRATCH_H
#define UP_NODE_SCRATCH_H

/* Scratch memory for what JavaScript hands the addon: a String's bytes copied out of V8 for the
 * length of one Node-API call, a Buffer's used where it lies. One per owner (the server's
 * exchanges, the upgrades), reused from call to call; JavaScript's thread only. */

#include <node_api.h>
#include <stddef.h>

/* Room for a message about what JavaScript handed over (fields.h), with the bytes it shows. */
#define UP_NODE_MESSAGE_MAX 512

typedef struct up_node_scratch_t {
    char *base;
    size_t cap;
    char message[UP_NODE_MESSAGE_MAX]; /* for the length of the call, as base's bytes */
} up_node_scratch_t;

/* At least size bytes at s->base; what it held is kept (a header name stays below its value),
 * but base may move. */
char *up_node_scratch_reserve(up_node_scratch_t *s, size_t size);
/* After a call: memory grown past what calls usually need (a large body) is given back. */
void up_node_scratch_trim(up_node_scratch_t *s);
void up_node_scratch_free(up_node_scratch_t *s);

/* The bytes of a String (UTF-8, or latin1 when utf8 is 0: one char a byte) or a Buffer: the
 * Buffer's own memory, or the string's copied into s at offset at (NUL-terminated). Returns 0,
 * or -1 for another value. */
int up_node_scratch_bytes(napi_env env, up_node_scratch_t *s, napi_value v, int utf8, size_t at,
                          const char **data, size_t *len);

#endif
