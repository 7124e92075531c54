/* Table tests for conditional requests (precondition.c, RFC 9110 §13): entity-tag lists, the
 * order of evaluation (§13.2.2), and If-Range honoured the right way round (§13.1.5: the range
 * only when the validator still matches; Iodine has it inverted). List values are read whole
 * and every prefix of them, right before an unmapped page. */

#include "base/date.h"
#include "handlers/precondition.h"
#include "test.h"

#define ETAG "\"6650c3a1.0-400\""
#define NOW ((time_t)1717000000)            /* Wed, 29 May 2024 16:26:40 GMT */
#define MTIME ((time_t)1716000000)          /* Sat, 18 May 2024 02:40:00 GMT */
#define MTIME_TEXT "Sat, 18 May 2024 02:40:00 GMT"
#define BEFORE_TEXT "Sat, 18 May 2024 02:39:59 GMT"
#define AFTER_TEXT "Sat, 18 May 2024 02:40:01 GMT"

typedef struct list_case_t {
    const char *name;
    const char *value;
    int weak;
    int result;
} list_case_t;

static const list_case_t list_cases[] = {
    {"star", "*", 1, 1},
    {"star with spaces", "  * ", 0, 1},
    {"the tag", ETAG, 1, 1},
    {"the tag, strong", ETAG, 0, 1},
    {"in a list", "\"a\", " ETAG ", \"b\"", 1, 1},
    {"weak form, weak comparison", "W/" ETAG, 1, 1},
    {"weak form, strong comparison", "W/" ETAG, 0, 0},
    {"another tag", "\"other\"", 1, 0},
    {"empty tag", "\"\"", 1, 0},
    {"empty elements", ", ," ETAG ",", 1, 1},
    {"no quotes", "6650c3a1.0-400", 1, -1},
    {"unclosed", "\"abc", 1, -1},
    {"lower-case w", "w/" ETAG, 1, -1},
    {"junk after a tag", ETAG " x", 1, -1},
    {"space inside", "\"a b\"", 1, -1},
    {"star in a list", "*, \"a\"", 1, -1},
    {"empty", "", 1, -1},
    {"quote in the middle of a list", "\"a\" \"b\"", 1, -1},
};

static void test_lists(void)
{
    for (size_t i = 0; i < sizeof(list_cases) / sizeof(list_cases[0]); i++) {
        const list_case_t *c = &list_cases[i];
        size_t len = strlen(c->value);
        char *in = guarded_copy(c->value, len);
        int r = up_etag_list_match(in, len, ETAG, sizeof(ETAG) - 1, c->weak);
        CHECK(r == c->result, "%s: %d, want %d", c->name, r, c->result);
        guarded_free(in, len);
        for (size_t n = 0; n < len; n++) {
            in = guarded_copy(c->value, n);
            r = up_etag_list_match(in, n, ETAG, sizeof(ETAG) - 1, c->weak);
            CHECK(r >= -1 && r <= 1, "%s[0..%zu)", c->name, n);
            guarded_free(in, n);
        }
    }
}

/* One request's conditional fields, each NULL when absent. */
typedef struct eval_case_t {
    const char *name;
    const char *if_match, *if_none_match, *if_modified_since, *if_unmodified_since;
    up_precondition_result_t result;
} eval_case_t;

#define SEND UP_PRECONDITION_SEND
#define NOT_MODIFIED UP_PRECONDITION_NOT_MODIFIED
#define FAILED UP_PRECONDITION_FAILED

static const eval_case_t eval_cases[] = {
    {"no conditions", NULL, NULL, NULL, NULL, SEND},
    {"If-None-Match matches", NULL, ETAG, NULL, NULL, NOT_MODIFIED},
    {"If-None-Match weak matches", NULL, "W/" ETAG, NULL, NULL, NOT_MODIFIED},
    {"If-None-Match star", NULL, "*", NULL, NULL, NOT_MODIFIED},
    {"If-None-Match other", NULL, "\"x\"", NULL, NULL, SEND},
    {"If-None-Match malformed is ignored", NULL, "x", NULL, NULL, SEND},
    {"If-Modified-Since same second", NULL, NULL, MTIME_TEXT, NULL, NOT_MODIFIED},
    {"If-Modified-Since later", NULL, NULL, AFTER_TEXT, NULL, NOT_MODIFIED},
    {"If-Modified-Since earlier", NULL, NULL, BEFORE_TEXT, NULL, SEND},
    {"If-Modified-Since invalid", NULL, NULL, "yesterday", NULL, SEND},
    {"If-Modified-Since RFC 850", NULL, NULL, "Saturday, 18-May-24 02:40:00 GMT", NULL, NOT_MODIFIED},
    {"If-Modified-Since asctime", NULL, NULL, "Sat May 18 02:40:00 2024", NULL, NOT_MODIFIED},
    {"If-None-Match wins over If-Modified-Since", NULL, "\"x\"", AFTER_TEXT, NULL, SEND},
    {"If-Match matches", ETAG, NULL, NULL, NULL, SEND},
    {"If-Match star", "*", NULL, NULL, NULL, SEND},
    {"If-Match other", "\"x\"", NULL, NULL, NULL, FAILED},
    {"If-Match weak never matches", "W/" ETAG, NULL, NULL, NULL, FAILED},
    {"If-Match fails before If-None-Match", "\"x\"", ETAG, NULL, NULL, FAILED},
    {"If-Unmodified-Since earlier", NULL, NULL, NULL, BEFORE_TEXT, FAILED},
    {"If-Unmodified-Since same", NULL, NULL, NULL, MTIME_TEXT, SEND},
    {"If-Unmodified-Since ignored with If-Match", ETAG, NULL, NULL, BEFORE_TEXT, SEND},
    {"If-Unmodified-Since invalid", NULL, NULL, NULL, "soon", SEND},
};

static void set_line(up_field_lines_t *f, const char *value)
{
    memset(f, 0, sizeof(*f));
    if (value != NULL)
        up_field_lines_add(f, up_slice(value, strlen(value)));
}

static void test_evaluation(void)
{
    up_validators_t v = {ETAG, sizeof(ETAG) - 1, MTIME, NOW};
    for (size_t i = 0; i < sizeof(eval_cases) / sizeof(eval_cases[0]); i++) {
        const eval_case_t *c = &eval_cases[i];
        up_preconditions_t p;
        memset(&p, 0, sizeof(p));
        set_line(&p.if_match, c->if_match);
        set_line(&p.if_none_match, c->if_none_match);
        set_line(&p.if_modified_since, c->if_modified_since);
        set_line(&p.if_unmodified_since, c->if_unmodified_since);
        up_precondition_result_t r = up_precondition_evaluate(&p, &v);
        CHECK(r == c->result, "%s: %d, want %d", c->name, r, c->result);
    }
}

static void test_list_over_lines(void)
{
    up_validators_t v = {ETAG, sizeof(ETAG) - 1, MTIME, NOW};
    up_preconditions_t p;
    memset(&p, 0, sizeof(p));
    up_field_lines_add(&p.if_none_match, UP_SLICE_LIT("\"a\""));
    up_field_lines_add(&p.if_none_match, UP_SLICE_LIT(ETAG));
    CHECK(up_precondition_evaluate(&p, &v) == NOT_MODIFIED, "a tag on the second line matches");
    memset(&p, 0, sizeof(p));
    up_field_lines_add(&p.if_modified_since, UP_SLICE_LIT(MTIME_TEXT));
    up_field_lines_add(&p.if_modified_since, UP_SLICE_LIT(MTIME_TEXT));
    CHECK(up_precondition_evaluate(&p, &v) == SEND, "If-Modified-Since twice is ignored");
    memset(&p, 0, sizeof(p));
    for (int i = 0; i < UP_PRECONDITION_MAX_LINES + 1; i++)
        up_field_lines_add(&p.if_none_match, UP_SLICE_LIT(ETAG));
    CHECK(up_precondition_evaluate(&p, &v) == SEND, "too many lines: the field is ignored");
}

typedef struct if_range_case_t {
    const char *name;
    const char *value; /* NULL: no If-Range */
    time_t mtime;
    int honoured;
} if_range_case_t;

static const if_range_case_t if_range_cases[] = {
    {"absent: the range is honoured", NULL, MTIME, 1},
    {"current etag: honoured", ETAG, MTIME, 1},
    {"old etag: the whole file", "\"6650c3a1.0-3ff\"", MTIME, 0},
    {"weak etag: never", "W/" ETAG, MTIME, 0},
    {"current date: honoured", MTIME_TEXT, MTIME, 1},
    {"older date: the whole file", BEFORE_TEXT, MTIME, 0},
    {"newer date: the whole file (exact match only)", AFTER_TEXT, MTIME, 0},
    {"a date starting with W", "Wed, 29 May 2024 16:26:39 GMT", NOW - 1, 1},
    {"a date of a file changed this second: weak, never", "Wed, 29 May 2024 16:26:40 GMT", NOW, 0},
    {"garbage", "x", MTIME, 0},
    {"unclosed etag", "\"abc", MTIME, 0},
};

static void test_if_range(void)
{
    for (size_t i = 0; i < sizeof(if_range_cases) / sizeof(if_range_cases[0]); i++) {
        const if_range_case_t *c = &if_range_cases[i];
        up_validators_t v = {ETAG, sizeof(ETAG) - 1, c->mtime, NOW};
        up_preconditions_t p;
        memset(&p, 0, sizeof(p));
        set_line(&p.if_range, c->value);
        CHECK(up_precondition_if_range(&p, &v) == c->honoured, "%s", c->name);
    }
    up_validators_t v = {ETAG, sizeof(ETAG) - 1, MTIME, NOW};
    up_preconditions_t p;
    memset(&p, 0, sizeof(p));
    up_field_lines_add(&p.if_range, UP_SLICE_LIT(ETAG));
    up_field_lines_add(&p.if_range, UP_SLICE_LIT(ETAG));
    CHECK(up_precondition_if_range(&p, &v) == 0, "If-Range twice: the whole file");
}

int main(void)
{
    test_lists();
    test_evaluation();
    test_list_over_lines();
    test_if_range();
    return test_report("precondition");
}
