#ifndef UP_FUZZ_H
#define UP_FUZZ_H

/* What the fuzz targets share: a check that crashes loudly, exactly-sized copies, and a cheap
 * random sequence seeded from the input, so that how an input is cut into pieces is decided by
 * the input itself and a saved crash replays the same way. */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A broken invariant: say which one, then abort so libFuzzer saves the input and prints the
 * stack. Always on, whatever NDEBUG says. */
#define FUZZ_CHECK(cond)                                                                          \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);             \
            abort();                                                                              \
        }                                                                                         \
    } while (0)

/* A heap block of exactly n bytes holding src, so AddressSanitizer reports a read of even one
 * byte past the data. (malloc(0) may return NULL, hence the one spare byte for empty input.) */
static inline char *fuzz_copy(const uint8_t *src, size_t n)
{
    char *p = malloc(n > 0 ? n : 1);
    FUZZ_CHECK(p != NULL);
    if (n > 0)
        memcpy(p, src, n);
    return p;
}

/* FNV-1a over the input: the seed of fuzz_next. Never 0, which xorshift could not leave. */
static inline uint32_t fuzz_seed(const uint8_t *data, size_t size)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 16777619u;
    return h != 0 ? h : 1;
}

/* xorshift32: good enough to pick cut points, and the same on every machine. */
static inline uint32_t fuzz_next(uint32_t *state)
{
    uint32_t x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *state = x;
}

/* The length of the next piece: 1 to span bytes, no more than what is left. */
static inline size_t fuzz_piece(uint32_t *state, size_t span, size_t left)
{
    size_t n = 1 + fuzz_next(state) % (span > 0 ? span : 1);
    return n < left ? n : left;
}

#endif
