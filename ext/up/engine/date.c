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

void up_date_init(up_date_t *d)
{
    d->second = time(NULL);
    format(d->slots[0], d->second);
    atomic_init(&d->current, 0);
}

void up_date_refresh(up_date_t *d)
{
    time_t now = time(NULL);
    if (now == d->second)
        return;
    d->second = now;
    int next = 1 - atomic_load_explicit(&d->current, memory_order_relaxed);
    format(d->slots[next], now);
    atomic_store_explicit(&d->current, next, memory_order_release);
}

void up_date_copy(up_date_t *d, char *dst)
{
    int i = atomic_load_explicit(&d->current, memory_order_acquire);
    memcpy(dst, d->slots[i], UP_DATE_LEN);
}
