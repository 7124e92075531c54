/* Table tests for choosing a precompressed variant by Accept-Encoding (content_coding.c, RFC
 * 9110 §12.5.3): q-values, "*", identity, refusals with q=0, malformed elements. Each value is
 * read whole and every prefix of it, right before an unmapped page. */

#include "handlers/content_coding.h"
#include "test.h"

#define ALL (UP_CODING_BIT(UP_CODING_BR) | UP_CODING_BIT(UP_CODING_ZSTD) | UP_CODING_BIT(UP_CODING_GZIP))
#define GZ UP_CODING_BIT(UP_CODING_GZIP)
#define BR UP_CODING_BIT(UP_CODING_BR)

typedef struct coding_case_t {
    const char *name;
    const char *value; /* NULL: no Accept-Encoding */
    unsigned available;
    up_coding_t want;
} coding_case_t;

static const coding_case_t cases[] = {
    {"no field: identity", NULL, ALL, UP_CODING_IDENTITY},
    {"empty field: identity", "", ALL, UP_CODING_IDENTITY},
    {"browser list: br first", "gzip, deflate, br, zstd", ALL, UP_CODING_BR},
    {"gzip only", "gzip", ALL, UP_CODING_GZIP},
    {"x-gzip", "x-gzip", ALL, UP_CODING_GZIP},
    {"case-insensitive", "GZIP", ALL, UP_CODING_GZIP},
    {"no such variant", "br", GZ, UP_CODING_IDENTITY},
    {"no variants at all", "gzip, br", 0, UP_CODING_IDENTITY},
    {"q decides", "br;q=0.5, gzip;q=0.8", ALL, UP_CODING_GZIP},
    {"q with spaces", "br ; q=0.5 , gzip ;q=0.9", ALL, UP_CODING_GZIP},
    {"equal q: br before zstd before gzip", "gzip;q=0.5, zstd;q=0.5", ALL, UP_CODING_ZSTD},
    {"q=0 refuses", "br;q=0, gzip", ALL, UP_CODING_GZIP},
    {"all refused", "br;q=0, gzip;q=0, zstd;q=0", ALL, UP_CODING_IDENTITY},
    {"star", "*", ALL, UP_CODING_BR},
    {"star with a refusal", "*, br;q=0", ALL, UP_CODING_ZSTD},
    {"star refused", "*;q=0", ALL, UP_CODING_IDENTITY},
    {"identity preferred", "gzip;q=0.5, identity", GZ, UP_CODING_IDENTITY},
    {"identity less preferred", "gzip, identity;q=0.5", GZ, UP_CODING_GZIP},
    {"identity equal: the variant", "gzip;q=0.7, identity;q=0.7", GZ, UP_CODING_GZIP},
    {"q=1.000", "br;q=1.000", BR, UP_CODING_BR},
    {"q=0.001", "br;q=0.001", BR, UP_CODING_BR},
    {"malformed q skipped", "br;q=2, gzip", ALL, UP_CODING_GZIP},
    {"q too precise skipped", "br;q=0.0001", BR, UP_CODING_IDENTITY},
    {"q=1.5 skipped", "br;q=1.5", BR, UP_CODING_IDENTITY},
    {"other parameter skipped", "br;level=3, gzip", ALL, UP_CODING_GZIP},
    {"junk element skipped", "@@@, gzip", ALL, UP_CODING_GZIP},
    {"unknown codings ignored", "compress, deflate", ALL, UP_CODING_IDENTITY},
    {"empty elements", ",, gzip ,", ALL, UP_CODING_GZIP},
    {"q without value", "br;q=, gzip;q=0.1", ALL, UP_CODING_GZIP},
};

static void check(const coding_case_t *c)
{
    up_field_lines_t f;
    memset(&f, 0, sizeof(f));
    size_t len = c->value != NULL ? strlen(c->value) : 0;
    char *in = guarded_copy(c->value != NULL ? c->value : "", len);
    if (c->value != NULL)
        up_field_lines_add(&f, up_slice(in, len));
    up_coding_t got = up_coding_choose(&f, c->available);
    CHECK(got == c->want, "%s: %s, want %s", c->name, up_coding_name(got), up_coding_name(c->want));
    CHECK(got == UP_CODING_IDENTITY || (c->available & UP_CODING_BIT(got)),
          "%s: chose a variant there is not", c->name);
    guarded_free(in, len);
    for (size_t n = 0; c->value != NULL && n < len; n++) {
        memset(&f, 0, sizeof(f));
        in = guarded_copy(c->value, n);
        up_field_lines_add(&f, up_slice(in, n));
        got = up_coding_choose(&f, c->available);
        CHECK(got == UP_CODING_IDENTITY || (c->available & UP_CODING_BIT(got)), "%s[0..%zu)",
              c->name, n);
        guarded_free(in, n);
    }
}

static void test_lines(void)
{
    up_field_lines_t f;
    memset(&f, 0, sizeof(f));
    up_field_lines_add(&f, UP_SLICE_LIT("gzip;q=0.5"));
    up_field_lines_add(&f, UP_SLICE_LIT("br;q=0.9"));
    CHECK(up_coding_choose(&f, ALL) == UP_CODING_BR, "two lines make one list");
    for (int i = 0; i < UP_PRECONDITION_MAX_LINES; i++)
        up_field_lines_add(&f, UP_SLICE_LIT("gzip"));
    CHECK(up_coding_choose(&f, ALL) == UP_CODING_IDENTITY, "too many lines: as if absent");
}

int main(void)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        check(&cases[i]);
    test_lines();
    CHECK(strcmp(up_coding_suffix(UP_CODING_ZSTD), ".zst") == 0, "zstd files end in .zst");
    return test_report("content_coding");
}
