/* The incremental UTF-8 validator; see utf8.h for the contract.
 *
 * A finite automaton over byte classes. Each state says how many continuation bytes are still
 * due and which range the next one must fall in: the ranges after E0, ED, F0 and F4 are narrower
 * than 80..BF, and that is what rules out overlong forms, surrogates and code points past
 * U+10FFFF (RFC 3629 §4) without decoding a single code point. A state is a row offset into the
 * transition table, so a step is one load from each of two small tables. Runs of ASCII, the bulk
 * of most text, are skipped eight bytes at a time. */

#include <string.h>
#include "base/utf8.h"

/* Byte classes: which bytes behave the same in every state. */
enum {
    C_ASCII = 0, /* 00..7F */
    C_CONT_LOW,  /* 80..8F */
    C_CONT_MID,  /* 90..9F */
    C_CONT_HIGH, /* A0..BF */
    C_NEVER,     /* C0, C1 (overlong two-byte leads), F5..FF (past U+10FFFF or not UTF-8) */
    C_LEAD2,     /* C2..DF */
    C_E0,        /* E0: next A0..BF, or it would be overlong */
    C_LEAD3,     /* E1..EC, EE, EF */
    C_ED,        /* ED: next 80..9F, or it would be a surrogate */
    C_F0,        /* F0: next 90..BF, or it would be overlong */
    C_LEAD4,     /* F1..F3 */
    C_F4,        /* F4: next 80..8F, or it would be past U+10FFFF */
    NUM_CLASSES
};

#define RANGE4(c) c, c, c, c
#define RANGE16(c) RANGE4(c), RANGE4(c), RANGE4(c), RANGE4(c)

static const uint8_t byte_class[256] = {
    /* 00..7F */
    RANGE16(C_ASCII), RANGE16(C_ASCII), RANGE16(C_ASCII), RANGE16(C_ASCII),
    RANGE16(C_ASCII), RANGE16(C_ASCII), RANGE16(C_ASCII), RANGE16(C_ASCII),
    /* 80..BF */
    RANGE16(C_CONT_LOW), RANGE16(C_CONT_MID), RANGE16(C_CONT_HIGH), RANGE16(C_CONT_HIGH),
    /* C0..DF */
    C_NEVER, C_NEVER, C_LEAD2, C_LEAD2, RANGE4(C_LEAD2), RANGE4(C_LEAD2), RANGE4(C_LEAD2),
    RANGE16(C_LEAD2),
    /* E0..EF */
    C_E0, C_LEAD3, C_LEAD3, C_LEAD3, RANGE4(C_LEAD3), RANGE4(C_LEAD3),
    C_LEAD3, C_ED, C_LEAD3, C_LEAD3,
    /* F0..FF */
    C_F0, C_LEAD4, C_LEAD4, C_LEAD4, C_F4, C_NEVER, C_NEVER, C_NEVER, RANGE4(C_NEVER),
    RANGE4(C_NEVER),
};

/* States, as offsets of their rows in the table below. */
enum {
    S_ACCEPT = UP_UTF8_ACCEPT,
    S_1 = 1 * NUM_CLASSES,       /* one continuation byte due, 80..BF */
    S_2 = 2 * NUM_CLASSES,       /* two due, the next 80..BF */
    S_2_E0 = 3 * NUM_CLASSES,    /* two due, the next A0..BF */
    S_2_ED = 4 * NUM_CLASSES,    /* two due, the next 80..9F */
    S_3 = 5 * NUM_CLASSES,       /* three due, the next 80..BF */
    S_3_F0 = 6 * NUM_CLASSES,    /* three due, the next 90..BF */
    S_3_F4 = 7 * NUM_CLASSES,    /* three due, the next 80..8F */
    S_REJECT = 8 * NUM_CLASSES,
};

_Static_assert(S_REJECT == UP_UTF8_REJECT, "utf8.h names the reject state");

#define R S_REJECT
static const uint8_t transition[9 * NUM_CLASSES] = {
    /*           ASCII     80..8F  90..9F  A0..BF  never lead2 E0      lead3 ED      F0      lead4 F4 */
    /* accept */ S_ACCEPT, R,      R,      R,      R,    S_1,  S_2_E0, S_2,  S_2_ED, S_3_F0, S_3,  S_3_F4,
    /* 1 */      R,        S_ACCEPT, S_ACCEPT, S_ACCEPT, R, R, R,    R,    R,      R,      R,    R,
    /* 2 */      R,        S_1,    S_1,    S_1,    R,    R,    R,      R,    R,      R,      R,    R,
    /* 2 E0 */   R,        R,      R,      S_1,    R,    R,    R,      R,    R,      R,      R,    R,
    /* 2 ED */   R,        S_1,    S_1,    R,      R,    R,    R,      R,    R,      R,      R,    R,
    /* 3 */      R,        S_2,    S_2,    S_2,    R,    R,    R,      R,    R,      R,      R,    R,
    /* 3 F0 */   R,        R,      S_2,    S_2,    R,    R,    R,      R,    R,      R,      R,    R,
    /* 3 F4 */   R,        S_2,    R,      R,      R,    R,    R,      R,    R,      R,      R,    R,
    /* reject */ R,        R,      R,      R,      R,    R,    R,      R,    R,      R,      R,    R,
};
#undef R

#define HIGH_BITS 0x8080808080808080ull

size_t up_utf8_validate(up_utf8_state_t *s, const char *p, size_t n)
{
    const unsigned char *u = (const unsigned char *)p;
    unsigned state = *s;
    size_t i = 0;

    if (state == S_REJECT)
        return 0;
    while (i < n) {
        if (state == S_ACCEPT) {
            /* Between characters: skip ASCII a word at a time, then byte by byte up to the
             * first byte with its high bit set. */
            while (n - i >= 8) {
                uint64_t word;
                memcpy(&word, u + i, 8);
                if (word & HIGH_BITS)
                    break;
                i += 8;
            }
            while (i < n && u[i] < 0x80)
                i++;
            if (i == n)
                break;
        }
        state = transition[state + byte_class[u[i]]];
        if (state == S_REJECT) {
            *s = S_REJECT;
            return i;
        }
        i++;
    }
    *s = (up_utf8_state_t)state;
    return n;
}

int up_utf8_valid(const char *p, size_t n)
{
    up_utf8_state_t s = UP_UTF8_ACCEPT;
    return up_utf8_validate(&s, p, n) == n && up_utf8_complete(s);
}
