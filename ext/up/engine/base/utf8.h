#ifndef UP_UTF8_H
#define UP_UTF8_H

/* An incremental UTF-8 validator (RFC 3629 §4, the Unicode Standard's table of well-formed byte
 * sequences). WebSocket text messages must be UTF-8 (RFC 6455 §8.1), and they arrive in pieces
 * cut anywhere, even inside a character: the state carries an open sequence from one piece to
 * the next, across frames of a fragmented message too.
 *
 * Fail fast: a piece is rejected at the first byte that can neither start nor continue a valid
 * sequence, not at the end of the message, so a connection sending garbage is closed (1007) as
 * soon as it shows. Overlong forms, UTF-16 surrogates (U+D800..U+DFFF) and code points past
 * U+10FFFF are invalid; noncharacters (U+FFFE, ...) are valid UTF-8 and accepted.
 *
 * Pure functions on a caller-owned state: no allocation, no global state, any thread. */

#include <stddef.h>
#include <stdint.h>

typedef uint8_t up_utf8_state_t;

/* The state before the first byte, and after any number of complete characters. */
#define UP_UTF8_ACCEPT 0
/* The state after an invalid byte; it never changes again. */
#define UP_UTF8_REJECT 96

/* Validates p[0..n) following whatever *s says came before, and updates *s.
 *
 * Returns n when every byte can be part of valid UTF-8 so far (a character may still be open at
 * the end: up_utf8_complete tells). Returns less than n when p[ret] is the first byte that makes
 * the text invalid: *s is then UP_UTF8_REJECT and every later call returns 0. */
size_t up_utf8_validate(up_utf8_state_t *s, const char *p, size_t n);

/* 1 when the bytes validated so far end on a character boundary and none was invalid: a text
 * message is valid when this holds at its end. 0 otherwise (an open or a rejected sequence). */
static inline int up_utf8_complete(up_utf8_state_t s)
{
    return s == UP_UTF8_ACCEPT;
}

static inline int up_utf8_failed(up_utf8_state_t s)
{
    return s == UP_UTF8_REJECT;
}

/* 1 when p[0..n) on its own is complete, valid UTF-8. */
int up_utf8_valid(const char *p, size_t n);

#endif
