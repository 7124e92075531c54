#include "scratch.h"

#include <stdbool.h>
#include <stdlib.h>
#include "base/memory.h"

/* Below this, scratch memory is kept between calls. */
#define SCRATCH_KEEP (1024 * 1024)
#define SCRATCH_MIN 4096

char *up_node_scratch_reserve(up_node_scratch_t *s, size_t size)
{
    if (s->cap < size) {
        size_t cap = s->cap < SCRATCH_MIN ? SCRATCH_MIN : s->cap;
        while (cap < size)
            cap *= 2;
        s->base = up_realloc(s->base, cap);
        s->cap = cap;
    }
    return s->base;
}

void up_node_scratch_trim(up_node_scratch_t *s)
{
    if (s->cap > SCRATCH_KEEP)
        up_node_scratch_free(s);
}

void up_node_scratch_free(up_node_scratch_t *s)
{
    free(s->base);
    s->base = NULL;
    s->cap = 0;
}

int up_node_scratch_bytes(napi_env env, up_node_scratch_t *s, napi_value v, int utf8, size_t at,
                          const char **data, size_t *len)
{
    bool is_buffer = false;
    napi_is_buffer(env, v, &is_buffer);
    if (is_buffer) {
        void *mem;
        if (napi_get_buffer_info(env, v, &mem, len) != napi_ok)
            return -1;
        *data = mem;
        return 0;
    }
    size_t n;
    napi_status st = utf8 ? napi_get_value_string_utf8(env, v, NULL, 0, &n)
                          : napi_get_value_string_latin1(env, v, NULL, 0, &n);
    if (st != napi_ok)
        return -1;
    char *buf = up_node_scratch_reserve(s, at + n + 1) + at;
    if (utf8)
        napi_get_value_string_utf8(env, v, buf, n + 1, len);
    else
        napi_get_value_string_latin1(env, v, buf, n + 1, len);
    *data = buf;
    return 0;
}
