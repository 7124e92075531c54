/* libFuzzer target for the request fields the static file handler reads: Range
 * (ext/up/engine/handlers/range.c), HTTP-dates (date.c), entity-tag lists and If-Range
 * (precondition.c), Accept-Encoding (content_coding.c) and path globs (path_glob.c).
 *
 * The first byte chooses the parser and, for Range, the size of the representation (one of a
 * few, 0 included); the rest is a field value, read whole and as every prefix of it (up to
 * PREFIX_MAX bytes), each in its own exactly-sized block. It checks that:
 *
 * - Range: satisfiable ranges lie inside the representation, first <= last, at most
 *   UP_RANGE_MAX of them, none overlapping; UNSATISFIABLE only with no range; nothing for size 0
 *   but IGNORE or UNSATISFIABLE;
 * - HTTP-date: a date that parses formats back (IMF-fixdate) to a date that parses to the same
 *   second;
 * - entity-tag lists: the answer is -1, 0 or 1, a strong match implies a weak one, and "*"
 *   matches; the conditional evaluation gives one of its three results;
 * - Accept-Encoding: the chosen coding is identity or one the file has;
 * - globs: a pattern (the value's first half) compiled from the value matches in bounded time
 *   (no assertion but that it returns), and a pattern of the path itself always matches it. */

#include "base/date.h"
#include "handlers/content_coding.h"
#include "fuzz.h"
#include "base/path_glob.h"
#include "handlers/precondition.h"
#include "handlers/range.h"

#define PREFIX_MAX 256
#define ETAG "\"6650c3a1.0-400\""
#define NOW ((time_t)1717000000)

static const uint64_t sizes[] = {0, 1, 10, 1000, 1ull << 40};

static void fuzz_range(const char *v, size_t len, uint64_t size)
{
    up_range_set_t set;
    up_range_result_t r = up_range_parse(v, len, size, &set);
    FUZZ_CHECK(r == UP_RANGE_IGNORE || r == UP_RANGE_SATISFIABLE || r == UP_RANGE_UNSATISFIABLE);
    if (r != UP_RANGE_SATISFIABLE) {
        FUZZ_CHECK(set.count == 0);
        return;
    }
    FUZZ_CHECK(size > 0 && set.count > 0 && set.count <= UP_RANGE_MAX);
    for (int i = 0; i < set.count; i++) {
        FUZZ_CHECK(set.ranges[i].first <= set.ranges[i].last && set.ranges[i].last < size);
        for (int k = 0; k < i; k++)
            FUZZ_CHECK(set.ranges[i].last < set.ranges[k].first ||
                       set.ranges[k].last < set.ranges[i].first);
    }
}

static void fuzz_date(const char *v, size_t len)
{
    time_t t;
    if (up_date_parse(v, len, NOW, &t) != 0)
        return;
    char text[UP_DATE_LEN + 1];
    if (t < 0 || t > (time_t)253402300799) /* IMF-fixdate has four year digits */
        return;
    up_date_format(t, text);
    time_t again;
    FUZZ_CHECK(up_date_parse(text, UP_DATE_LEN, NOW, &again) == 0 && again == t);
}

static void fuzz_etags(const char *v, size_t len)
{
    int weak = up_etag_list_match(v, len, ETAG, sizeof(ETAG) - 1, 1);
    int strong = up_etag_list_match(v, len, ETAG, sizeof(ETAG) - 1, 0);
    FUZZ_CHECK(weak >= -1 && weak <= 1 && strong >= -1 && strong <= 1);
    FUZZ_CHECK(strong != 1 || weak == 1);
    FUZZ_CHECK((weak < 0) == (strong < 0));
    up_preconditions_t p;
    memset(&p, 0, sizeof(p));
    up_slice_t s = up_slice(v, len);
    up_field_lines_add(&p.if_none_match, s);
    up_field_lines_add(&p.if_match, s);
    up_field_lines_add(&p.if_modified_since, s);
    up_field_lines_add(&p.if_range, s);
    up_validators_t val = {ETAG, sizeof(ETAG) - 1, NOW - 100, NOW};
    up_precondition_result_t r = up_precondition_evaluate(&p, &val);
    FUZZ_CHECK(r == UP_PRECONDITION_SEND || r == UP_PRECONDITION_NOT_MODIFIED ||
               r == UP_PRECONDITION_FAILED);
    int honoured = up_precondition_if_range(&p, &val);
    FUZZ_CHECK(honoured == 0 || honoured == 1);
}

static void fuzz_coding(const char *v, size_t len, unsigned available)
{
    up_field_lines_t f;
    memset(&f, 0, sizeof(f));
    up_field_lines_add(&f, up_slice(v, len));
    up_coding_t c = up_coding_choose(&f, available);
    FUZZ_CHECK(c == UP_CODING_IDENTITY || (available & UP_CODING_BIT(c)));
}

static void fuzz_glob(const char *v, size_t len)
{
    up_path_glob_t g;
    size_t half = len / 2;
    if (up_path_glob_compile(&g, v, half) == 0)
        (void)up_path_glob_match(&g, v + half, len - half);
    /* A path with no wildcard in it is a pattern that matches exactly itself. */
    if (memchr(v, '*', len) == NULL && memchr(v, '?', len) == NULL &&
        up_path_glob_compile(&g, v, len) == 0)
        FUZZ_CHECK(up_path_glob_match(&g, v, len));
}

static void run(uint8_t selector, const char *v, size_t len)
{
    switch (selector % 5) {
    case 0: fuzz_range(v, len, sizes[(selector / 5) % 5]); break;
    case 1: fuzz_date(v, len); break;
    case 2: fuzz_etags(v, len); break;
    case 3: fuzz_coding(v, len, (selector / 5) & 0xe); break;
    case 4: fuzz_glob(v, len); break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    uint8_t selector = data[0];
    data++;
    size--;
    char *whole = fuzz_copy(data, size);
    run(selector, whole, size);
    free(whole);
    for (size_t n = 0; n < size && n <= PREFIX_MAX; n++) {
        char *prefix = fuzz_copy(data, n);
        run(selector, prefix, n);
        free(prefix);
    }
    return 0;
}
