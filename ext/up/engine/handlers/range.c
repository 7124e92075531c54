/* The Range header; see range.h for the contract. */

#include "base/slice.h"
#include "handlers/range.h"

/* A byte position: 1*DIGIT (RFC 9110 §14.1.1) that fits in 63 bits; more digits than that is
 * a number no file has, and taken as a syntax error. Returns the digits read (0: none, or too
 * many). */
static size_t read_pos(const char *s, size_t len, uint64_t *v)
{
    size_t i = 0;
    uint64_t n = 0;
    while (i < len && s[i] >= '0' && s[i] <= '9') {
        if (n > (INT64_MAX - 9) / 10)
            return 0;
        n = n * 10 + (uint64_t)(s[i] - '0');
        i++;
    }
    *v = n;
    return i;
}

static size_t skip_ows(const char *s, size_t len, size_t i)
{
    while (i < len && (s[i] == ' ' || s[i] == '\t'))
        i++;
    return i;
}

static int overlaps(const up_range_t *a, const up_range_t *b)
{
    return a->first <= b->last && b->first <= a->last;
}

static up_range_result_t parse(const char *value, size_t len, uint64_t size, up_range_set_t *set)
{
    /* ranges-specifier = range-unit "=" range-set; the unit is case-insensitive (§14.1). */
    if (len < 6 || !UP_LOWER_EQ(value, 6, "bytes="))
        return UP_RANGE_IGNORE;
    size_t i = 6;
    int specs = 0, elements = 0;
    for (;;) {
        /* range-set = 1#range-spec: empty list elements are allowed around commas
         * (RFC 9110 §5.6.1.2), but at least one spec must be there. */
        i = skip_ows(value, len, i);
        if (i < len && value[i] == ',') {
            i++;
            continue;
        }
        if (i == len)
            break;
        if (++elements > UP_RANGE_MAX)
            return UP_RANGE_IGNORE;
        uint64_t first = 0, last = 0;
        int has_first = 0, has_last = 0;
        size_t n = read_pos(value + i, len - i, &first);
        if (n > 0) {
            has_first = 1;
            i += n;
        } else if (i < len && value[i] >= '0' && value[i] <= '9') {
            return UP_RANGE_IGNORE; /* too many digits */
        }
        if (i == len || value[i] != '-')
            return UP_RANGE_IGNORE;
        i++;
        n = read_pos(value + i, len - i, &last);
        if (n > 0) {
            has_last = 1;
            i += n;
        } else if (i < len && value[i] >= '0' && value[i] <= '9') {
            return UP_RANGE_IGNORE;
        }
        i = skip_ows(value, len, i);
        if (i < len && value[i] != ',')
            return UP_RANGE_IGNORE;
        if (!has_first && !has_last)
            return UP_RANGE_IGNORE; /* "-" alone */
        if (has_first && has_last && last < first)
            return UP_RANGE_IGNORE; /* an invalid int-range (§14.1.1) */
        specs++;

        up_range_t r;
        if (!has_first) {
            /* A suffix: the last N bytes; of an empty representation, or N = 0, none. */
            if (last == 0 || size == 0)
                continue;
            r.first = last >= size ? 0 : size - last;
            r.last = size - 1;
        } else {
            if (first >= size)
                continue; /* unsatisfiable: dropped */
            r.first = first;
            r.last = !has_last || last >= size ? size - 1 : last;
        }
        for (int k = 0; k < set->count; k++) {
            if (overlaps(&set->ranges[k], &r))
                return UP_RANGE_IGNORE;
        }
        set->ranges[set->count++] = r;
    }
    if (specs == 0)
        return UP_RANGE_IGNORE;
    return set->count > 0 ? UP_RANGE_SATISFIABLE : UP_RANGE_UNSATISFIABLE;
}

up_range_result_t up_range_parse(const char *value, size_t len, uint64_t size,
                                 up_range_set_t *set)
{
    set->count = 0;
    up_range_result_t r = parse(value, len, size, set);
    if (r != UP_RANGE_SATISFIABLE)
        set->count = 0;
    return r;
}
