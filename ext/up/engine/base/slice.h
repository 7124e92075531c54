#ifndef UP_SLICE_H
#define UP_SLICE_H

#include <stddef.h>
#include <string.h>

/* A borrowed run of bytes: the engine hands these out instead of copies. The memory belongs to
 * whoever filled it (normally a connection's read buffer) and is valid until that owner moves
 * on to the next request. */
typedef struct up_slice_t {
    const char *base;
    size_t len;
} up_slice_t;

#define UP_SLICE_LIT(s) ((up_slice_t){(s), sizeof(s) - 1})

static inline up_slice_t up_slice(const char *base, size_t len)
{
    return (up_slice_t){base, len};
}

static inline int up_slice_eq(up_slice_t s, const char *lit, size_t lit_len)
{
    return s.len == lit_len && memcmp(s.base, lit, lit_len) == 0;
}

/* ASCII case-insensitive comparison with a lower-case literal: header names, tokens. */
static inline int up_lower_eq(const char *s, size_t len, const char *lower, size_t lower_len)
{
    if (len != lower_len)
        return 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c + 32);
        if (c != lower[i])
            return 0;
    }
    return 1;
}

#define UP_LOWER_EQ(s, len, lit) up_lower_eq((s), (len), (lit), sizeof(lit) - 1)

#endif
