/* Conditional requests; see precondition.h for the contract. */

#include <string.h>
#include "base/date.h"
#include "handlers/precondition.h"

static size_t skip_ows(const char *s, size_t len, size_t i)
{
    while (i < len && (s[i] == ' ' || s[i] == '\t'))
        i++;
    return i;
}

/* etagc = %x21 / %x23-7E / obs-text (RFC 9110 §8.8.3) */
static int is_etagc(unsigned char c)
{
    return c == 0x21 || (c >= 0x23 && c != 0x7f);
}

/* Whether the entity-tag tag[0..len) (W/ and quotes included) matches etag, a strong tag. */
static int tag_matches(const char *tag, size_t len, const char *etag, size_t etag_len, int weak)
{
    if (len >= 2 && tag[0] == 'W' && tag[1] == '/') {
        if (!weak)
            return 0;
        tag += 2;
        len -= 2;
    }
    return len == etag_len && memcmp(tag, etag, len) == 0;
}

int up_etag_list_match(const char *value, size_t len, const char *etag, size_t etag_len,
                       int weak)
{
    size_t i = skip_ows(value, len, 0);
    size_t end = len;
    while (end > i && (value[end - 1] == ' ' || value[end - 1] == '\t'))
        end--;
    if (end - i == 1 && value[i] == '*')
        return 1;
    int matched = 0, tags = 0;
    while (i < end) {
        if (value[i] == ',') {
            i = skip_ows(value, end, i + 1);
            continue;
        }
        size_t start = i;
        if (end - i >= 2 && value[i] == 'W' && value[i + 1] == '/')
            i += 2;
        if (i == end || value[i] != '"')
            return -1;
        i++;
        while (i < end && value[i] != '"') {
            if (!is_etagc((unsigned char)value[i]))
                return -1;
            i++;
        }
        if (i == end)
            return -1; /* no closing quote */
        i++;
        tags++;
        if (tag_matches(value + start, i - start, etag, etag_len, weak))
            matched = 1;
        i = skip_ows(value, end, i);
        if (i < end && value[i] != ',')
            return -1;
    }
    return tags > 0 ? matched : -1;
}

/* A list field over all its lines: 1, 0, or -1 when absent or malformed (ignored). */
static int lines_match(const up_field_lines_t *f, const char *etag, size_t etag_len, int weak)
{
    if (f->count == 0 || f->count > UP_PRECONDITION_MAX_LINES)
        return -1;
    int matched = 0;
    for (int k = 0; k < f->count; k++) {
        int r = up_etag_list_match(f->lines[k].base, f->lines[k].len, etag, etag_len, weak);
        if (r < 0)
            return -1;
        matched |= r;
    }
    return matched;
}

/* A date field sent once and valid: 0 with *t, else -1 (ignored). */
static int single_date(const up_field_lines_t *f, time_t now, time_t *t)
{
    if (f->count != 1)
        return -1;
    return up_date_parse(f->lines[0].base, f->lines[0].len, now, t);
}

up_precondition_result_t up_precondition_evaluate(const up_preconditions_t *p,
                                                  const up_validators_t *v)
{
    time_t date;
    /* Step 1, and step 2 only without If-Match. */
    int m = lines_match(&p->if_match, v->etag, v->etag_len, 0);
    if (m == 0)
        return UP_PRECONDITION_FAILED;
    if (p->if_match.count == 0 && single_date(&p->if_unmodified_since, v->now, &date) == 0 &&
        v->last_modified > date)
        return UP_PRECONDITION_FAILED;
    /* Step 3, and step 4 only without If-None-Match. */
    int n = lines_match(&p->if_none_match, v->etag, v->etag_len, 1);
    if (n == 1)
        return UP_PRECONDITION_NOT_MODIFIED;
    if (p->if_none_match.count == 0 && single_date(&p->if_modified_since, v->now, &date) == 0 &&
        v->last_modified <= date)
        return UP_PRECONDITION_NOT_MODIFIED;
    return UP_PRECONDITION_SEND;
}

int up_precondition_if_range(const up_preconditions_t *p, const up_validators_t *v)
{
    const up_field_lines_t *f = &p->if_range;
    if (f->count == 0)
        return 1;
    if (f->count > 1)
        return 0;
    const char *s = f->lines[0].base;
    size_t len = f->lines[0].len;
    if (len > 0 && (s[0] == '"' || (len >= 2 && s[0] == 'W' && s[1] == '/'))) {
        /* An entity tag, not a date ("Wed, ..." starts with a W too). */
        /* Compared strongly: a weak one never matches (§13.1.5). */
        if (len < 2 || s[0] != '"' || s[len - 1] != '"')
            return 0;
        for (size_t i = 1; i + 1 < len; i++) {
            if (!is_etagc((unsigned char)s[i]))
                return 0;
        }
        return tag_matches(s, len, v->etag, v->etag_len, 0);
    }
    time_t date;
    if (up_date_parse(s, len, v->now, &date) != 0)
        return 0;
    return date == v->last_modified && v->last_modified < v->now;
}
