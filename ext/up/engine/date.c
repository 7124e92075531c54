#include <string.h>
#include "date.h"

static void format(char *dst, time_t t)
{
    static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    struct tm tm;
    gmtime_r(&t, &tm);
    memcpy(dst, days[tm.tm_wday], 3);
    dst[3] = ',';
    dst[4] = ' ';
    dst[5] = (char)('0' + tm.tm_mday / 10);
    dst[6] = (char)('0' + tm.tm_mday % 10);
    dst[7] = ' ';
    memcpy(dst + 8, months[tm.tm_mon], 3);
    dst[11] = ' ';
    int year = tm.tm_year + 1900;
    dst[12] = (char)('0' + year / 1000 % 10);
    dst[13] = (char)('0' + year / 100 % 10);
    dst[14] = (char)('0' + year / 10 % 10);
    dst[15] = (char)('0' + year % 10);
    dst[16] = ' ';
    dst[17] = (char)('0' + tm.tm_hour / 10);
    dst[18] = (char)('0' + tm.tm_hour % 10);
    dst[19] = ':';
    dst[20] = (char)('0' + tm.tm_min / 10);
    dst[21] = (char)('0' + tm.tm_min % 10);
    dst[22] = ':';
    dst[23] = (char)('0' + tm.tm_sec / 10);
    dst[24] = (char)('0' + tm.tm_sec % 10);
    memcpy(dst + 25, " GMT", 4);
    dst[UP_DATE_LEN] = '\0';
}

_Static_assert(UP_DATE_LEN + 1 <= sizeof(uint64_t) * UP_DATE_WORDS, "UP_DATE_WORDS too small");

void up_date_init(up_date_t *d)
{
    atomic_init(&d->seq, 0);
    for (int i = 0; i < UP_DATE_WORDS; i++)
        atomic_init(&d->words[i], 0);
    d->second = (time_t)-1; /* no second yet: the refresh always writes */
    up_date_refresh(d);
}

void up_date_refresh(up_date_t *d)
{
    up_date_refresh_at(d, time(NULL));
}

/* The words are stored with release so that a reader that sees any of them also sees the odd
 * count stored before them, and retries. (Release stores rather than a fence: TSan does not
 * model fences, and on x86 both are plain moves.) */
void up_date_refresh_at(up_date_t *d, time_t now)
{
    if (now == d->second)
        return;
    d->second = now;
    uint64_t words[UP_DATE_WORDS] = {0};
    format((char *)words, now);
    uint64_t seq = atomic_load_explicit(&d->seq, memory_order_relaxed);
    atomic_store_explicit(&d->seq, seq + 1, memory_order_relaxed);
    for (int i = 0; i < UP_DATE_WORDS; i++)
        atomic_store_explicit(&d->words[i], words[i], memory_order_release);
    atomic_store_explicit(&d->seq, seq + 2, memory_order_release);
}

/* The acquire loads of the words keep the second load of the count after them. The writer
 * holds the count odd for a few stores once a second, so a retry is rare and short. */
void up_date_copy(up_date_t *d, char *dst)
{
    uint64_t words[UP_DATE_WORDS], before, after;
    do {
        before = atomic_load_explicit(&d->seq, memory_order_acquire);
        for (int i = 0; i < UP_DATE_WORDS; i++)
            words[i] = atomic_load_explicit(&d->words[i], memory_order_acquire);
        after = atomic_load_explicit(&d->seq, memory_order_relaxed);
    } while ((before & 1) != 0 || before != after);
    memcpy(dst, words, UP_DATE_LEN);
}
