#include <string.h>
#include "base/date.h"

static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

static void format(char *dst, time_t t)
{
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

void up_date_format(time_t t, char *dst)
{
    format(dst, t);
}

/* ---------------------------------------------------------------- parsing */

/* Days from 1970-01-01 to y-m-d of the proleptic Gregorian calendar (m 1..12), without the
 * time zone and locale that timegm and mktime would consult. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int is_leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* n digits at s as a number, or -1. */
static int digits(const char *s, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

/* The month named by the 3 bytes at s (case-sensitive, as the grammar says), 1..12, or 0. */
static int month_of(const char *s)
{
    for (int i = 0; i < 12; i++) {
        if (memcmp(s, months[i], 3) == 0)
            return i + 1;
    }
    return 0;
}

static int day_name_of(const char *s)
{
    for (int i = 0; i < 7; i++) {
        if (memcmp(s, days[i], 3) == 0)
            return 1;
    }
    return 0;
}

/* "HH:MM:SS" at s into seconds of the day, or -1. A leap second (60) is allowed by the grammar
 * (RFC 9110 §5.6.7) and counted as the second before it. */
static int time_of_day(const char *s)
{
    if (s[2] != ':' || s[5] != ':')
        return -1;
    int h = digits(s, 2), m = digits(s + 3, 2), sec = digits(s + 6, 2);
    if (h < 0 || m < 0 || sec < 0 || h > 23 || m > 59 || sec > 60)
        return -1;
    return h * 3600 + m * 60 + (sec == 60 ? 59 : sec);
}

static int make_time(int64_t y, int mon, int d, int secs, time_t *out)
{
    static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (mon < 1 || d < 1 || secs < 0)
        return -1;
    if (d > mdays[mon - 1] + (mon == 2 && is_leap(y)))
        return -1;
    *out = (time_t)(days_from_civil(y, mon, d) * 86400 + secs);
    return 0;
}

/* IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT". */
static int parse_imf(const char *s, time_t *out)
{
    if (!day_name_of(s) || memcmp(s + 3, ", ", 2) != 0 || s[7] != ' ' || s[11] != ' ' ||
        s[16] != ' ' || memcmp(s + 25, " GMT", 4) != 0)
        return -1;
    int d = digits(s + 5, 2), y = digits(s + 12, 4);
    if (d < 0 || y < 0)
        return -1;
    return make_time(y, month_of(s + 8), d, time_of_day(s + 17), out);
}

/* rfc850-date: "Sunday, 06-Nov-94 08:49:37 GMT", the day's full name. */
static int parse_rfc850(const char *s, size_t len, time_t now, time_t *out)
{
    static const char *const long_days[7] = {"Sunday", "Monday", "Tuesday", "Wednesday",
                                             "Thursday", "Friday", "Saturday"};
    size_t name = 0;
    for (int i = 0; i < 7 && name == 0; i++) {
        size_t n = strlen(long_days[i]);
        if (len > n && memcmp(s, long_days[i], n) == 0)
            name = n;
    }
    if (name == 0 || len != name + 24)
        return -1;
    s += name;
    if (memcmp(s, ", ", 2) != 0 || s[4] != '-' || s[8] != '-' || s[11] != ' ' ||
        memcmp(s + 20, " GMT", 4) != 0)
        return -1;
    int d = digits(s + 2, 2), yy = digits(s + 9, 2);
    if (d < 0 || yy < 0)
        return -1;
    struct tm tm;
    gmtime_r(&now, &tm);
    int64_t this_year = (int64_t)tm.tm_year + 1900;
    int64_t y = this_year - this_year % 100 + yy;
    if (y > this_year + 50)
        y -= 100;
    return make_time(y, month_of(s + 5), d, time_of_day(s + 12), out);
}

/* asctime-date: "Sun Nov  6 08:49:37 1994". */
static int parse_asctime(const char *s, time_t *out)
{
    if (!day_name_of(s) || s[3] != ' ' || s[7] != ' ' || s[10] != ' ' || s[19] != ' ')
        return -1;
    int d = s[8] == ' ' ? digits(s + 9, 1) : digits(s + 8, 2);
    int y = digits(s + 20, 4);
    if (d < 0 || y < 0)
        return -1;
    return make_time(y, month_of(s + 4), d, time_of_day(s + 11), out);
}

int up_date_parse(const char *s, size_t len, time_t now, time_t *out)
{
    if (len == UP_DATE_LEN)
        return parse_imf(s, out);
    if (len == 24)
        return parse_asctime(s, out);
    if (len >= 30 && len <= 33)
        return parse_rfc850(s, len, now, out);
    return -1;
}
