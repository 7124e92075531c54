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
#include <stddef.h>
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

/* ---- HTTP-dates as values (Last-Modified, If-Modified-Since: RFC 9110 §5.6.7) ------------ */

/* Writes t as an IMF-fixdate (UP_DATE_LEN bytes) and a NUL into dst. Any thread. */
void up_date_format(time_t t, char *dst);
/* Parses an HTTP-date in any of its three forms (IMF-fixdate, the obsolete RFC 850 form, and
 * asctime's), as RFC 9110 §5.6.7 asks recipients to: s[0..len), nothing around it. An RFC 850
 * two-digit year more than 50 years after now is taken in the century before. Returns 0 with
 * *out set, or -1 when s is not a valid HTTP-date (a day or time out of range included). Pure:
 * any thread. */
int up_date_parse(const char *s, size_t len, time_t now, time_t *out);

#endif
