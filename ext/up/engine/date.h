#ifndef UP_DATE_H
#define UP_DATE_H

/* The cached value of the Date response header (RFC 9110 §6.6.1), refreshed once a second by
 * the loop's tick so no request pays a syscall or a strftime for it.
 *
 * Written only by the loop thread, read by app threads too: two slots and an atomic index, the
 * writer fills the slot readers are not told about, then flips. */

#include <stdatomic.h>
#include <time.h>

#define UP_DATE_LEN 29 /* "Sun, 06 Nov 1994 08:49:37 GMT" */

typedef struct up_date_t {
    char slots[2][UP_DATE_LEN + 1];
    atomic_int current;
    time_t second;
} up_date_t;

void up_date_init(up_date_t *d);
/* Loop thread only; cheap when the second has not changed. */
void up_date_refresh(up_date_t *d);
/* Copies the UP_DATE_LEN bytes of the current value to dst. */
void up_date_copy(up_date_t *d, char *dst);

#endif
