/* The cached Date header (date.c): the value for a second is RFC 9110 §5.6.7's IMF-fixdate, and
 * a thread copying it while the loop thread moves it on never sees a torn value (part of one
 * second and part of another). HTTP-dates are parsed in all three of §5.6.7's forms, each case
 * read whole and every prefix of it right before an unmapped page. */

#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include "base/date.h"
#include "test.h"

/* Simulated seconds far enough apart that two consecutive values differ in the day, the month,
 * the year or the time of day: a copy that mixes two of them matches no value. */
#define FIRST_SECOND ((time_t)784111777) /* Sun, 06 Nov 1994 08:49:37 GMT */
#define STRIDE ((time_t)(32 * 86400 + 3661))
#define NUM_SECONDS 40000

static char expected[NUM_SECONDS][UP_DATE_LEN + 1];

static void fixdate(char *dst, time_t t)
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(dst, UP_DATE_LEN + 1, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

static void test_formats_imf_fixdate(void)
{
    static const struct {
        time_t t;
        const char *text;
    } cases[] = {
        {784111777, "Sun, 06 Nov 1994 08:49:37 GMT"},
        {0, "Thu, 01 Jan 1970 00:00:00 GMT"},
        {951782400, "Tue, 29 Feb 2000 00:00:00 GMT"},
        {4102444799, "Thu, 31 Dec 2099 23:59:59 GMT"},
    };
    up_date_t d;
    up_date_init(&d);
    char now[UP_DATE_LEN + 1] = "", want[UP_DATE_LEN + 1];
    fixdate(want, time(NULL));
    up_date_copy(&d, now);
    CHECK(strlen(now) == UP_DATE_LEN, "init sets the current second: \"%s\" (now %s)", now, want);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char got[UP_DATE_LEN + 1] = "";
        up_date_refresh_at(&d, cases[i].t);
        up_date_copy(&d, got);
        CHECK(strcmp(got, cases[i].text) == 0, "second %lld: \"%s\", want \"%s\"",
              (long long)cases[i].t, got, cases[i].text);
    }
}

typedef struct reader_t {
    up_date_t *d;
    atomic_int *writer_done;
    long copies;
    long torn; /* copies that matched no value, or went back in time */
    char first_torn[UP_DATE_LEN + 1];
} reader_t;

/* Copies the value until the writer is done; each copy must be the value of a second at or
 * after the previous copy's. */
static void *reader_run(void *arg)
{
    reader_t *r = arg;
    size_t at = 0;
    for (int last = 0; !last;) {
        last = atomic_load(r->writer_done);
        char got[UP_DATE_LEN + 1] = "";
        up_date_copy(r->d, got);
        r->copies++;
        size_t k = at;
        while (k < NUM_SECONDS && memcmp(got, expected[k], UP_DATE_LEN) != 0)
            k++;
        if (k == NUM_SECONDS) {
            if (r->torn++ == 0)
                memcpy(r->first_torn, got, sizeof(got));
            continue;
        }
        at = k;
    }
    return NULL;
}

static void test_copy_while_refreshed_is_never_torn(void)
{
    for (int k = 0; k < NUM_SECONDS; k++)
        fixdate(expected[k], FIRST_SECOND + (time_t)k * STRIDE);
    up_date_t d;
    up_date_init(&d);
    up_date_refresh_at(&d, FIRST_SECOND);
    atomic_int writer_done = 0;
    reader_t readers[2] = {{.d = &d, .writer_done = &writer_done},
                           {.d = &d, .writer_done = &writer_done}};
    pthread_t threads[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&threads[i], NULL, reader_run, &readers[i]);
    for (int k = 1; k < NUM_SECONDS; k++)
        up_date_refresh_at(&d, FIRST_SECOND + (time_t)k * STRIDE);
    atomic_store(&writer_done, 1);
    for (int i = 0; i < 2; i++) {
        pthread_join(threads[i], NULL);
        CHECK(readers[i].torn == 0, "reader %d: %ld of %ld copies torn, the first \"%s\"", i,
              readers[i].torn, readers[i].copies, readers[i].first_torn);
    }
    char got[UP_DATE_LEN + 1] = "";
    up_date_copy(&d, got);
    CHECK(strcmp(got, expected[NUM_SECONDS - 1]) == 0, "the last value stays: \"%s\"", got);
}

typedef struct parse_case_t {
    const char *name;
    const char *text;
    int ok;
    time_t t;
} parse_case_t;

/* "now" for the RFC 850 two-digit years: 2024-05-29. */
#define PARSE_NOW ((time_t)1717000000)

static const parse_case_t parse_cases[] = {
    {"IMF-fixdate", "Sun, 06 Nov 1994 08:49:37 GMT", 1, 784111777},
    {"RFC 850", "Sunday, 06-Nov-94 08:49:37 GMT", 1, 784111777},
    {"asctime", "Sun Nov  6 08:49:37 1994", 1, 784111777},
    {"asctime, two-digit day", "Wed Nov 16 08:49:37 1994", 1, 784975777},
    {"epoch", "Thu, 01 Jan 1970 00:00:00 GMT", 1, 0},
    {"leap day", "Tue, 29 Feb 2000 00:00:00 GMT", 1, 951782400},
    {"leap second counts as :59", "Sat, 31 Dec 2016 23:59:60 GMT", 1, 1483228799},
    {"RFC 850 year in this century", "Wednesday, 29-May-24 16:26:40 GMT", 1, 1717000000},
    {"RFC 850 year over 50 years ahead is the last century", "Friday, 31-Dec-99 23:59:59 GMT", 1,
     946684799},
    {"the day name is not checked against the date", "Mon, 06 Nov 1994 08:49:37 GMT", 1, 784111777},
    {"lower-case month", "Sun, 06 nov 1994 08:49:37 GMT", 0, 0},
    {"no GMT", "Sun, 06 Nov 1994 08:49:37 UTC", 0, 0},
    {"one-digit day", "Sun, 6 Nov 1994 08:49:37 GMT", 0, 0},
    {"hour 24", "Sun, 06 Nov 1994 24:00:00 GMT", 0, 0},
    {"minute 60", "Sun, 06 Nov 1994 08:60:00 GMT", 0, 0},
    {"Feb 29 of a common year", "Tue, 29 Feb 2022 00:00:00 GMT", 0, 0},
    {"Feb 29 of 1900", "Thu, 29 Feb 1900 00:00:00 GMT", 0, 0},
    {"April 31", "Thu, 31 Apr 2024 00:00:00 GMT", 0, 0},
    {"day 0", "Sun, 00 Nov 1994 08:49:37 GMT", 0, 0},
    {"no comma", "Sun  06 Nov 1994 08:49:37 GMT", 0, 0},
    {"spaces around", " Sun, 06 Nov 1994 08:49:37 GMT", 0, 0},
    {"unknown day", "Sux, 06 Nov 1994 08:49:37 GMT", 0, 0},
    {"RFC 850 short day name", "Sun, 06-Nov-94 08:49:37 GMT", 0, 0},
    {"RFC 850 four-digit year", "Sunday, 06-Nov-1994 08:49:37 GMT", 0, 0},
    {"asctime zero-padded day", "Sun Nov 06 08:49:37 1994", 1, 784111777},
    {"asctime missing year digit", "Sun Nov  6 08:49:37 199", 0, 0},
    {"a number", "784111777", 0, 0},
    {"empty", "", 0, 0},
};

static void test_parses_http_dates(void)
{
    for (size_t i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++) {
        const parse_case_t *c = &parse_cases[i];
        size_t len = strlen(c->text);
        char *in = guarded_copy(c->text, len);
        time_t t = -1;
        int r = up_date_parse(in, len, PARSE_NOW, &t);
        CHECK((r == 0) == c->ok, "%s: %s", c->name, r == 0 ? "parsed" : "refused");
        if (r == 0 && c->ok)
            CHECK(t == c->t, "%s: %lld, want %lld", c->name, (long long)t, (long long)c->t);
        guarded_free(in, len);
        for (size_t n = 0; n < len; n++) {
            in = guarded_copy(c->text, n);
            up_date_parse(in, n, PARSE_NOW, &t);
            guarded_free(in, n);
        }
    }
    char text[UP_DATE_LEN + 1];
    up_date_format(784111777, text);
    CHECK(strcmp(text, "Sun, 06 Nov 1994 08:49:37 GMT") == 0, "format: \"%s\"", text);
    time_t t;
    for (time_t s = 0; s < (time_t)4102444800; s += 86400 * 97 + 3607) {
        up_date_format(s, text);
        CHECK(up_date_parse(text, UP_DATE_LEN, PARSE_NOW, &t) == 0 && t == s,
              "round trip of %lld: \"%s\"", (long long)s, text);
    }
}

int main(void)
{
    test_formats_imf_fixdate();
    test_parses_http_dates();
    test_copy_while_refreshed_is_never_torn();
    return test_report("date");
}
