/* Table tests for the chunked decoder. Every case is decoded in one call, one byte per call and
 * split in two at every position, the way the server calls it: after "incomplete" the input is
 * dropped and the decoded bytes kept elsewhere. All ways must give the same body, leftover and
 * error. */

#include "http1/chunked.h"
#include "test.h"

typedef struct chunked_case_t {
    const char *name;
    const char *input;
    const char *body;     /* decoded body when it succeeds */
    const char *leftover; /* bytes after the body; NULL: the body never ends (incomplete) */
    up_chunked_error_t error;
    uint64_t max_body;
} chunked_case_t;

#define OK(name, in, body, rest) {name, in, body, rest, UP_CHUNKED_E_NONE, 0}
#define PARTIAL(name, in, body) {name, in, body, NULL, UP_CHUNKED_E_NONE, 0}
#define BAD(name, in, err) {name, in, "", "", err, 0}

static const chunked_case_t cases[] = {
    OK("one chunk", "5\r\nhello\r\n0\r\n\r\n", "hello", ""),
    OK("two chunks", "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", "hello world", ""),
    OK("empty body", "0\r\n\r\n", "", ""),
    OK("hex sizes", "A\r\n0123456789\r\nf\r\nabcdefghijklmno\r\n0\r\n\r\n", "0123456789abcdefghijklmno", ""),
    OK("leading zeros", "0005\r\nhello\r\n000\r\n\r\n", "hello", ""),
    OK("next request follows", "3\r\nabc\r\n0\r\n\r\nGET / HTTP/1.1\r\n", "abc", "GET / HTTP/1.1\r\n"),
    OK("extension", "3;name\r\nabc\r\n0\r\n\r\n", "abc", ""),
    OK("extension with token", "3;a=b;c=d\r\nabc\r\n0;e=f\r\n\r\n", "abc", ""),
    OK("extension with quoted value", "3;a=\"x y;\\\"z\"\r\nabc\r\n0\r\n\r\n", "abc", ""),
    OK("extension with BWS", "3 ; a = b \r\nabc\r\n0\r\n\r\n", "abc", ""),
    OK("trailers", "3\r\nabc\r\n0\r\nX-Sum: 1\r\nX-B:\r\n\r\n", "abc", ""),
    OK("CRLF inside data", "4\r\n\r\n\r\n\r\n0\r\n\r\n", "\r\n\r\n", ""),
    PARTIAL("no last chunk", "5\r\nhello\r\n", "hello"),
    PARTIAL("data cut short", "5\r\nhel", "hel"),
    PARTIAL("trailers not ended", "0\r\nX: y\r\n", ""),
    BAD("size not hex", "zz\r\nhello\r\n0\r\n\r\n", UP_CHUNKED_E_BAD_SIZE),
    BAD("size with sign", "+5\r\nhello\r\n0\r\n\r\n", UP_CHUNKED_E_BAD_SIZE),
    BAD("size with 0x", "0x5\r\nhello\r\n0\r\n\r\n", UP_CHUNKED_E_BAD_SIZE),
    BAD("empty size", "\r\nhello\r\n0\r\n\r\n", UP_CHUNKED_E_BAD_LINE_ENDING),
    BAD("17 digits", "00000000000000005\r\nhello\r\n0\r\n\r\n", UP_CHUNKED_E_BAD_SIZE),
    BAD("bare LF after size", "5\nhello\r\n0\r\n\r\n", UP_CHUNKED_E_BAD_LINE_ENDING),
    BAD("bare CR after size", "5\rhello\r\n0\r\n\r\n", UP_CHUNKED_E_BAD_LINE_ENDING),
    BAD("data longer than size", "3\r\nhello\r\n0\r\n\r\n", UP_CHUNKED_E_BAD_LINE_ENDING),
    BAD("data without CRLF", "3\r\nabc0\r\n\r\n", UP_CHUNKED_E_BAD_LINE_ENDING),
    BAD("bare LF after data", "3\r\nabc\n0\r\n\r\n", UP_CHUNKED_E_BAD_LINE_ENDING),
    BAD("extension without name", "3;\r\nabc\r\n0\r\n\r\n", UP_CHUNKED_E_BAD_EXTENSION),
    BAD("extension with empty value", "3;a=\r\nabc\r\n0\r\n\r\n", UP_CHUNKED_E_BAD_EXTENSION),
    BAD("extension unterminated quote", "3;a=\"b\r\nabc\r\n0\r\n\r\n", UP_CHUNKED_E_BAD_EXTENSION),
    BAD("extension with bad char", "3;a@b\r\nabc\r\n0\r\n\r\n", UP_CHUNKED_E_BAD_EXTENSION),
    BAD("trailer without colon", "0\r\nX-Sum\r\n\r\n", UP_CHUNKED_E_BAD_TRAILER),
    BAD("trailer folded", "0\r\nX: a\r\n b\r\n\r\n", UP_CHUNKED_E_BAD_TRAILER),
    BAD("trailer with bare LF", "0\r\nX: a\n\r\n", UP_CHUNKED_E_BAD_LINE_ENDING),
    BAD("trailer with NUL", "0\r\nX: a\x01\r\n\r\n", UP_CHUNKED_E_BAD_TRAILER),
    BAD("last chunk, bare LF", "0\r\n\n", UP_CHUNKED_E_BAD_LINE_ENDING),
    {"body over max", "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", "", "", UP_CHUNKED_E_BODY_TOO_LARGE, 10},
    {"body at max", "5\r\nhello\r\n5\r\n worl\r\n0\r\n\r\n", "hello worl", "", UP_CHUNKED_E_NONE, 10},
    {"huge chunk over max", "ffffffffffffffff\r\n", "", "", UP_CHUNKED_E_BODY_TOO_LARGE, 1 << 20},
};

typedef struct outcome_t {
    ssize_t r; /* leftover length, UP_CHUNKED_INCOMPLETE or UP_CHUNKED_ERROR */
    up_chunked_error_t error;
    char body[256];
    size_t body_len;
    char leftover[256];
    size_t leftover_len;
    uint64_t total;
} outcome_t;

/* Decodes input cut into pieces at the given offsets (sorted, within input). */
static void decode_pieces(const chunked_case_t *c, const size_t *cuts, size_t ncuts, outcome_t *out)
{
    size_t len = strlen(c->input), from = 0;
    up_chunked_decoder_t d = {.max_body = c->max_body};
    memset(out, 0, sizeof(*out));
    out->r = UP_CHUNKED_INCOMPLETE;
    for (size_t i = 0; i <= ncuts && out->r == UP_CHUNKED_INCOMPLETE; i++) {
        size_t to = i < ncuts ? cuts[i] : len;
        size_t n = to - from;
        char *buf = guarded_copy(c->input + from, n);
        size_t got = n;
        out->r = up_chunked_decode(&d, buf, &got);
        if (got > n || out->body_len + got > sizeof(out->body)) {
            out->r = -100; /* the decoder claimed more than it was given */
        } else {
            memcpy(out->body + out->body_len, buf, got);
            out->body_len += got;
        }
        if (out->r >= 0 && got + (size_t)out->r <= n) {
            memcpy(out->leftover, buf + got, (size_t)out->r);
            out->leftover_len = (size_t)out->r;
        } else if (out->r >= 0) {
            out->r = -101; /* leftover claimed past the input */
        }
        guarded_free(buf, n);
        from = to;
    }
    if (out->r >= 0 && out->leftover_len + (len - from) <= sizeof(out->leftover)) {
        /* pieces the decoder never saw follow its leftover */
        memcpy(out->leftover + out->leftover_len, c->input + from, len - from);
        out->leftover_len += len - from;
        out->r = (ssize_t)out->leftover_len;
    }
    out->error = d.error;
    out->total = d.total;
}

static void check_outcome(const chunked_case_t *c, const outcome_t *o, const char *how)
{
    if (c->error != UP_CHUNKED_E_NONE) {
        CHECK(o->r == UP_CHUNKED_ERROR && o->error == c->error, "%s (%s): returned %zd, error %d (%s)", c->name,
              how, o->r, o->error, up_chunked_error_reason(o->error));
        return;
    }
    CHECK(o->body_len == strlen(c->body) && memcmp(o->body, c->body, o->body_len) == 0, "%s (%s): body %.*s",
          c->name, how, (int)o->body_len, o->body);
    CHECK(o->total == o->body_len, "%s (%s): total %llu", c->name, how, (unsigned long long)o->total);
    if (c->leftover == NULL) {
        CHECK(o->r == UP_CHUNKED_INCOMPLETE, "%s (%s): returned %zd, expected incomplete", c->name, how, o->r);
        return;
    }
    CHECK(o->r == (ssize_t)strlen(c->leftover) && memcmp(o->leftover, c->leftover, o->leftover_len) == 0,
          "%s (%s): returned %zd (error %d), leftover %.*s", c->name, how, o->r, o->error,
          (int)o->leftover_len, o->leftover);
}

static void test_cases(void)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const chunked_case_t *c = &cases[i];
        size_t len = strlen(c->input);
        outcome_t o;
        decode_pieces(c, NULL, 0, &o);
        check_outcome(c, &o, "whole");

        size_t cuts[512];
        for (size_t k = 1; k < len && k <= sizeof(cuts) / sizeof(cuts[0]); k++)
            cuts[k - 1] = k;
        decode_pieces(c, cuts, len - 1, &o);
        check_outcome(c, &o, "byte at a time");

        for (size_t k = 1; k < len; k++) {
            char how[32];
            snprintf(how, sizeof(how), "split at %zu", k);
            decode_pieces(c, &k, 1, &o);
            check_outcome(c, &o, how);
        }
    }
}

static void test_limits(void)
{
    /* A size line of extensions longer than the limit, never ending. */
    static char line[UP_CHUNKED_MAX_LINE + 16];
    memset(line, ' ', sizeof(line) - 1);
    line[0] = '1';
    line[1] = ';';
    line[2] = 'a';
    chunked_case_t c = {"long size line", line, "", "", UP_CHUNKED_E_LINE_TOO_LONG, 0};
    outcome_t o;
    decode_pieces(&c, NULL, 0, &o);
    check_outcome(&c, &o, "whole");

    /* Trailers that never end. */
    static char trailers[UP_CHUNKED_MAX_TRAILERS + 64];
    size_t len = (size_t)snprintf(trailers, sizeof(trailers), "0\r\n");
    while (len + 8 < sizeof(trailers))
        len += (size_t)snprintf(trailers + len, sizeof(trailers) - len, "X: abc\r\n");
    chunked_case_t t = {"endless trailers", trailers, "", "", UP_CHUNKED_E_TRAILERS_TOO_LARGE, 0};
    decode_pieces(&t, NULL, 0, &o);
    check_outcome(&t, &o, "whole");

    /* Once failed, a decoder stays failed. */
    up_chunked_decoder_t d = {0};
    char bad[] = "z\r\n";
    size_t n = 3;
    CHECK(up_chunked_decode(&d, bad, &n) == UP_CHUNKED_ERROR, "bad size");
    char good[] = "0\r\n\r\n";
    n = 5;
    CHECK(up_chunked_decode(&d, good, &n) == UP_CHUNKED_ERROR, "decoder resumed after an error");
    CHECK(up_chunked_error_status(UP_CHUNKED_E_BODY_TOO_LARGE) == 413, "413 for a body too large");
    CHECK(up_chunked_error_status(UP_CHUNKED_E_BAD_SIZE) == 400, "400 for bad framing");
}

int main(void)
{
    test_cases();
    test_limits();
    return test_report("chunked");
}
