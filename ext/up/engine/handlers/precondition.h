#ifndef UP_PRECONDITION_H
#define UP_PRECONDITION_H

/* Conditional requests (RFC 9110 §13) on a representation the server knows by its strong
 * entity tag and its modification time: which of 200, 206, 304 or 412 to answer. Pure functions
 * over field values; no allocation, any thread.
 *
 * The evaluation order is §13.2.2's: If-Match (or, without it, If-Unmodified-Since) can fail
 * with 412; then If-None-Match (or, without it, If-Modified-Since) can answer 304 to a GET or
 * HEAD; then If-Range decides whether a Range is honoured at all: the ranges are sent only when
 * the validator it carries still matches, and the whole representation otherwise (a client that
 * holds a stale copy must not get a piece of the new one to splice into it). */

#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include "base/slice.h"

/* Field lines of one name kept per request: a list field (If-Match, If-None-Match) may come on
 * several lines, which together make one list (RFC 9110 §5.3). More lines than this and the
 * field is ignored, as a malformed one is. */
#define UP_PRECONDITION_MAX_LINES 4

typedef struct up_field_lines_t {
    up_slice_t lines[UP_PRECONDITION_MAX_LINES];
    int count; /* lines seen, even past UP_PRECONDITION_MAX_LINES */
} up_field_lines_t;

/* One request's conditional fields. A date field or If-Range that came on more than one line
 * is ignored (§13.1.3, §13.1.4: "more than one member"; If-Range is no list). */
typedef struct up_preconditions_t {
    up_field_lines_t if_match, if_none_match, if_modified_since, if_unmodified_since, if_range;
} up_preconditions_t;

/* Adds a field line to *f (the request head's slices, kept as they are). */
static inline void up_field_lines_add(up_field_lines_t *f, up_slice_t value)
{
    if (f->count < UP_PRECONDITION_MAX_LINES)
        f->lines[f->count] = value;
    f->count++;
}

typedef enum up_precondition_result_t {
    UP_PRECONDITION_SEND = 0,     /* 200, or 206 when a Range is honoured */
    UP_PRECONDITION_NOT_MODIFIED, /* 304 */
    UP_PRECONDITION_FAILED        /* 412 */
} up_precondition_result_t;

/* The representation the conditions are checked against. */
typedef struct up_validators_t {
    const char *etag; /* a strong entity tag, quotes included: "\"5f3a-1b\"" */
    size_t etag_len;
    time_t last_modified;
    time_t now; /* the server's clock, for If-Range's rule on dates and RFC 850 years */
} up_validators_t;

/* §13.2.2 steps 1 to 4 for a GET or HEAD (the only methods the static handler answers). */
up_precondition_result_t up_precondition_evaluate(const up_preconditions_t *p,
                                                  const up_validators_t *v);

/* §13.1.5: 1 when a Range may be honoured (no If-Range, or one whose validator matches), 0
 * when the whole representation must be sent. A date matches only when it equals
 * last_modified exactly and last_modified is a strong validator: at least a second older than
 * now (§8.8.2.2), as a file changed twice within a second keeps its date. */
int up_precondition_if_range(const up_preconditions_t *p, const up_validators_t *v);

/* Whether the entity-tag list field value[0..len) matches etag: "*" matches any, otherwise
 * one of its tags must match by the weak comparison (weak = 1: W/ ignored, §8.8.3.2) or the
 * strong one (weak = 0: no W/ on either side). Returns 1 or 0, or -1 when the list is not a
 * valid #entity-tag list (the field is then ignored by the caller). */
int up_etag_list_match(const char *value, size_t len, const char *etag, size_t etag_len,
                       int weak);

#endif
