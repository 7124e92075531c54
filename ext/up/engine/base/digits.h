#ifndef UP_DIGITS_H
#define UP_DIGITS_H

#include <stdint.h>

/* v in the given base (10 or 16) written backwards from end (24 bytes hold any uint64_t);
 * returns where its digits start. snprintf costs a few hundred instructions a number, and the
 * writers format one or two a response. */
static inline char *up_format_u64(char *end, uint64_t v, unsigned base)
{
    static const char digits[] = "0123456789abcdef";
    char *p = end;
    do {
        *--p = digits[v % base];
        v /= base;
    } while (v != 0);
    return p;
}

#endif
