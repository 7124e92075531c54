/* Table tests for the Range header (range.c, RFC 9110 §14.1.1 and §14.2). Every case is read
 * whole and then every prefix of it, each right before an unmapped page. Half the cases are
 * ignored (200) or unsatisfiable (416). */

#include <stdio.h>
#include "handlers/range.h"
#include "test.h"

typedef struct range_case_t {
    const char *name;
    const char *value;
    uint64_t size;
    up_range_result_t result;
    const char *ranges; /* "first-last,..." when satisfiable */
} range_case_t;

#define SAT UP_RANGE_SATISFIABLE
#define IGN UP_RANGE_IGNORE
#define UNSAT UP_RANGE_UNSATISFIABLE

static const range_case_t cases[] = {
    {"first bytes", "bytes=0-499", 10000, SAT, "0-499"},
    {"middle", "bytes=500-999", 10000, SAT, "500-999"},
    {"open end", "bytes=9500-", 10000, SAT, "9500-9999"},
    {"suffix", "bytes=-500", 10000, SAT, "9500-9999"},
    {"suffix longer than the file", "bytes=-20000", 10000, SAT, "0-9999"},
    {"last past the end is cut", "bytes=9000-20000", 10000, SAT, "9000-9999"},
    {"one byte", "bytes=0-0", 10000, SAT, "0-0"},
    {"last byte", "bytes=-1", 10000, SAT, "9999-9999"},
    {"two ranges", "bytes=0-0,-1", 10000, SAT, "0-0,9999-9999"},
    {"ranges with spaces", "bytes=0-1, 5-6 ,  9-", 10, SAT, "0-1,5-6,9-9"},
    {"empty elements", "bytes=,0-1,,", 10, SAT, "0-1"},
    {"unit case-insensitive", "Bytes=1-2", 10, SAT, "1-2"},
    {"unsatisfiable one dropped", "bytes=0-1,50-60", 10, SAT, "0-1"},
    {"unsorted, apart", "bytes=5-6,0-1", 10, SAT, "5-6,0-1"},
    {"leading zeros", "bytes=0005-0006", 10, SAT, "5-6"},
    {"whole file", "bytes=0-", 10, SAT, "0-9"},

    {"first past the end", "bytes=10000-", 10000, UNSAT, NULL},
    {"all past the end", "bytes=10-20,30-", 10, UNSAT, NULL},
    {"suffix of zero", "bytes=-0", 10, UNSAT, NULL},
    {"any range of an empty file", "bytes=0-", 0, UNSAT, NULL},
    {"suffix of an empty file", "bytes=-5", 0, UNSAT, NULL},

    {"other unit", "items=0-1", 10, IGN, NULL},
    {"no equals", "bytes 0-1", 10, IGN, NULL},
    {"space before equals", "bytes =0-1", 10, IGN, NULL},
    {"empty set", "bytes=", 10, IGN, NULL},
    {"only commas", "bytes=,,", 10, IGN, NULL},
    {"dash alone", "bytes=-", 10, IGN, NULL},
    {"last before first", "bytes=5-1", 10, IGN, NULL},
    {"no dash", "bytes=5", 10, IGN, NULL},
    {"letters", "bytes=a-b", 10, IGN, NULL},
    {"negative", "bytes=--1", 10, IGN, NULL},
    {"two dashes", "bytes=1-2-3", 10, IGN, NULL},
    {"missing comma", "bytes=1-2 3-4", 10, IGN, NULL},
    {"overlapping", "bytes=0-5,3-8", 10, IGN, NULL},
    {"the same twice", "bytes=0-1,0-1", 10, IGN, NULL},
    {"suffix overlapping", "bytes=5-,-3", 10, IGN, NULL},
    {"too many digits", "bytes=99999999999999999999-", 10, IGN, NULL},
    {"too many ranges", "bytes=0-0,2-2,4-4,6-6,8-8,10-10,12-12,14-14,16-16,18-18,20-20,22-22,24-24,"
                        "26-26,28-28,30-30,32-32", 100, IGN, NULL},
    {"semicolon", "bytes=0-1;2-3", 10, IGN, NULL},
};

static void format_set(const up_range_set_t *set, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < set->count && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%llu-%llu", i ? "," : "",
                              (unsigned long long)set->ranges[i].first,
                              (unsigned long long)set->ranges[i].last);
}

static void check(const range_case_t *c)
{
    size_t len = strlen(c->value);
    char *in = guarded_copy(c->value, len);
    up_range_set_t set;
    up_range_result_t r = up_range_parse(in, len, c->size, &set);
    CHECK(r == c->result, "%s: result %d, want %d", c->name, r, c->result);
    if (r == SAT && c->result == SAT) {
        char got[256];
        format_set(&set, got, sizeof(got));
        CHECK(strcmp(got, c->ranges) == 0, "%s: \"%s\", want \"%s\"", c->name, got, c->ranges);
    }
    guarded_free(in, len);
    /* Every prefix: no overread, and any range it yields lies inside the file. */
    for (size_t n = 0; n <= len; n++) {
        in = guarded_copy(c->value, n);
        if (up_range_parse(in, n, c->size, &set) == SAT) {
            for (int i = 0; i < set.count; i++)
                CHECK(set.ranges[i].first <= set.ranges[i].last && set.ranges[i].last < c->size,
                      "%s[0..%zu): range %d out of the file", c->name, n, i);
        }
        guarded_free(in, n);
    }
}

int main(void)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        check(&cases[i]);
    return test_report("range");
}
