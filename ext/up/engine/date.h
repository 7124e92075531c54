#ifndef UP_DATE_H
#define UP_DATE_H

/* The cached value of the Date response header (RFC 9110 §6.6.1), refreshed once a second by
 * the loop's tick so no request pays a syscall or a strftime for it.
 *
 * Written only by the loop thread, read by app threads too, with no lock: a sequence lock over
 * the text kept in atomic 64-bit words. The writer makes the count odd, stores the words and
 * makes it even again; a reader that saw an odd count, or a different count after its copy,
 * copies again. Two slots flipped by an index are not enough: a reader still copying one slot
 * two refreshes later reads it while it is rewritten. */

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#define UP_DATE_LEN 29  /* "Sun, 06 Nov 1994 08:49:37 GMT" */
#define UP_DATE_WORDS 4 /* UP_DATE_LEN bytes and a NUL, in 64-bit words */

typedef struct up_date_t {
    _Atomic uint64_t seq; /* odd while the words are being rewritten */
    _Atomic uint64_t words[UP_DATE_WORDS];
    time_t second; /* the second the words show; loop thread only */
} up_date_t;

void up_date_init(up_date_t *d);
/* Loop thread only; cheap when the second has not changed. */
void up_date_refresh(up_date_t *d);
/* The same for the second `now` (the tick passes time(NULL); tests pass seconds of their own). */
void up_date_refresh_at(up_date_t *d, time_t now);
/* Copies the UP_DATE_LEN bytes of the current value to dst. Any thread; no lock, no syscall. */
void up_date_copy(up_date_t *d, char *dst);

#endif
