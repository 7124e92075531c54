/* Table tests for the request-head parser. Every case is parsed whole and then fed one byte at
 * a time (as a slow client sends it), always with the bytes right before an unmapped page, and
 * both ways must agree. */

#include "http1/http1_parser.h"
#include "test.h"

#define H "Host: example.com\r\n"

typedef struct valid_case_t {
    const char *name;
    const char *input;
    size_t consumed; /* 0: the whole input */
    const char *method, *path, *query, *host;
    int minor_version;
    int64_t content_length;
    int chunked, keep_alive, expect_continue, upgrade;
    size_t num_headers;
} valid_case_t;

static const valid_case_t valid_cases[] = {
    {"simple GET", "GET / HTTP/1.1\r\n" H "\r\n", 0, "GET", "/", "", "example.com", 1, -1, 0, 1, 0, 0, 1},
    {"path and query", "GET /a/b?x=1&y=%20 HTTP/1.1\r\n" H "\r\n", 0, "GET", "/a/b", "x=1&y=%20",
     "example.com", 1, -1, 0, 1, 0, 0, 1},
    {"empty query", "GET /a? HTTP/1.1\r\n" H "\r\n", 0, "GET", "/a", "", "example.com", 1, -1, 0, 1, 0, 0, 1},
    {"HTTP/1.0 closes", "GET / HTTP/1.0\r\n\r\n", 0, "GET", "/", "", "", 0, -1, 0, 0, 0, 0, 0},
    {"HTTP/1.0 keep-alive", "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", 0, "GET", "/", "", "",
     0, -1, 0, 1, 0, 0, 1},
    {"HTTP/1.1 close", "GET / HTTP/1.1\r\n" H "Connection: foo, close\r\n\r\n", 0, "GET", "/", "",
     "example.com", 1, -1, 0, 0, 0, 0, 2},
    {"HTTP/1.9 is 1.1", "GET / HTTP/1.9\r\n" H "\r\n", 0, "GET", "/", "", "example.com", 1, -1, 0, 1, 0, 0, 1},
    {"content-length", "POST /f HTTP/1.1\r\n" H "Content-Length: 42\r\n\r\nbody", 18 + 19 + 20 + 2,
     "POST", "/f", "", "example.com", 1, 42, 0, 1, 0, 0, 2},
    {"chunked", "POST / HTTP/1.1\r\n" H "Transfer-Encoding: chunked\r\n\r\n", 0, "POST", "/", "",
     "example.com", 1, -1, 1, 1, 0, 0, 2},
    {"chunked in a list, last", "POST / HTTP/1.1\r\n" H "Transfer-Encoding: ,Chunked ,\r\n\r\n", 0,
     "POST", "/", "", "example.com", 1, -1, 1, 1, 0, 0, 2},
    {"expect continue", "PUT / HTTP/1.1\r\n" H "Expect: 100-Continue\r\nContent-Length: 1\r\n\r\n",
     0, "PUT", "/", "", "example.com", 1, 1, 0, 1, 1, 0, 3},
    {"upgrade", "GET /ws HTTP/1.1\r\n" H "Connection: keep-alive, Upgrade\r\nUpgrade: websocket\r\n\r\n",
     0, "GET", "/ws", "", "example.com", 1, -1, 0, 1, 0, 1, 3},
    {"connection upgrade without Upgrade", "GET / HTTP/1.1\r\n" H "Connection: upgrade\r\n\r\n", 0,
     "GET", "/", "", "example.com", 1, -1, 0, 1, 0, 0, 2},
    {"leading empty lines", "\r\n\r\nGET / HTTP/1.1\r\n" H "\r\n", 0, "GET", "/", "", "example.com",
     1, -1, 0, 1, 0, 0, 1},
    {"absolute form wins over Host", "GET http://other.test:8080/p?q HTTP/1.1\r\n" H "\r\n", 0, "GET",
     "/p", "q", "other.test:8080", 1, -1, 0, 1, 0, 0, 1},
    {"absolute form without path", "GET HTTPS://other.test HTTP/1.1\r\n" H "\r\n", 0, "GET", "/", "",
     "other.test", 1, -1, 0, 1, 0, 0, 1},
    {"authority form", "CONNECT example.com:443 HTTP/1.1\r\n" H "\r\n", 0, "CONNECT", "example.com:443",
     "", "example.com:443", 1, -1, 0, 1, 0, 0, 1},
    {"authority form, IPv6", "CONNECT [::1]:443 HTTP/1.1\r\n" H "\r\n", 0, "CONNECT", "[::1]:443", "",
     "[::1]:443", 1, -1, 0, 1, 0, 0, 1},
    {"asterisk form", "OPTIONS * HTTP/1.1\r\n" H "\r\n", 0, "OPTIONS", "*", "", "example.com", 1, -1,
     0, 1, 0, 0, 1},
    {"IPv6 host", "GET / HTTP/1.1\r\nHost: [::1]:3000\r\n\r\n", 0, "GET", "/", "", "[::1]:3000", 1, -1,
     0, 1, 0, 0, 1},
    {"empty Host", "GET / HTTP/1.1\r\nHost:\r\n\r\n", 0, "GET", "/", "", "", 1, -1, 0, 1, 0, 0, 1},
    {"value whitespace trimmed", "GET / HTTP/1.1\r\nHost: \t example.com \t\r\nX-A:b\r\n\r\n", 0, "GET",
     "/", "", "example.com", 1, -1, 0, 1, 0, 0, 2},
    {"obs-text in a value", "GET / HTTP/1.1\r\n" H "X-Name: caf\xc3\xa9\r\n\r\n", 0, "GET", "/", "",
     "example.com", 1, -1, 0, 1, 0, 0, 2},
    {"token method", "M-SEARCH! / HTTP/1.1\r\n" H "\r\n", 0, "M-SEARCH!", "/", "", "example.com", 1, -1,
     0, 1, 0, 0, 1},
    {"pipelined: first only", "GET /1 HTTP/1.1\r\n" H "\r\nGET /2 HTTP/1.1\r\n" H "\r\n", 17 + 19 + 2,
     "GET", "/1", "", "example.com", 1, -1, 0, 1, 0, 0, 1},
    {"content-length zero", "POST / HTTP/1.1\r\n" H "Content-Length: 0\r\n\r\n", 0, "POST", "/", "",
     "example.com", 1, 0, 0, 1, 0, 0, 2},
};

typedef struct invalid_case_t {
    const char *name;
    const char *input;
    up_http1_error_t error;
    int status;
} invalid_case_t;

static const invalid_case_t invalid_cases[] = {
    {"lowercase version", "GET / http/1.1\r\n" H "\r\n", UP_HTTP1_E_BAD_VERSION, 400},
    {"HTTP/2.0", "GET / HTTP/2.0\r\n" H "\r\n", UP_HTTP1_E_VERSION_NOT_SUPPORTED, 505},
    {"HTTP/0.9 form", "GET /\r\n\r\n", UP_HTTP1_E_BAD_REQUEST_LINE, 400},
    {"two spaces", "GET  / HTTP/1.1\r\n" H "\r\n", UP_HTTP1_E_BAD_REQUEST_LINE, 400},
    {"tab separator", "GET\t/ HTTP/1.1\r\n" H "\r\n", UP_HTTP1_E_BAD_METHOD, 400},
    {"method with slash", "GE/T / HTTP/1.1\r\n" H "\r\n", UP_HTTP1_E_BAD_METHOD, 400},
    {"space after version", "GET / HTTP/1.1 \r\n" H "\r\n", UP_HTTP1_E_BAD_REQUEST_LINE, 400},
    {"fragment in target", "GET /a#b HTTP/1.1\r\n" H "\r\n", UP_HTTP1_E_BAD_TARGET, 400},
    {"control char in target", "GET /a\x01 HTTP/1.1\r\n" H "\r\n", UP_HTTP1_E_BAD_TARGET, 400},
    {"relative target", "GET a/b HTTP/1.1\r\n" H "\r\n", UP_HTTP1_E_BAD_TARGET, 400},
    {"asterisk on GET", "GET * HTTP/1.1\r\n" H "\r\n", UP_HTTP1_E_BAD_TARGET, 400},
    {"CONNECT without port", "CONNECT example.com HTTP/1.1\r\n" H "\r\n", UP_HTTP1_E_BAD_TARGET, 400},
    {"CONNECT with path", "CONNECT /x HTTP/1.1\r\n" H "\r\n", UP_HTTP1_E_BAD_TARGET, 400},
    {"CONNECT with empty port", "CONNECT example.com: HTTP/1.1\r\n" H "\r\n", UP_HTTP1_E_BAD_TARGET, 400},
    {"CONNECT IPv6 without port", "CONNECT [::1] HTTP/1.1\r\n" H "\r\n", UP_HTTP1_E_BAD_TARGET, 400},
    {"absolute form with userinfo", "GET http://u@h/ HTTP/1.1\r\n" H "\r\n", UP_HTTP1_E_BAD_TARGET, 400},
    {"ftp scheme", "GET ftp://h/ HTTP/1.1\r\n" H "\r\n", UP_HTTP1_E_BAD_TARGET, 400},
    {"bare LF after request line", "GET / HTTP/1.1\n" H "\r\n", UP_HTTP1_E_BAD_LINE_ENDING, 400},
    {"bare LF in fields", "GET / HTTP/1.1\r\n" H "X: y\n\r\n", UP_HTTP1_E_BAD_LINE_ENDING, 400},
    {"bare CR in value", "GET / HTTP/1.1\r\n" H "X: a\rb\r\n\r\n", UP_HTTP1_E_BAD_LINE_ENDING, 400},
    {"bare LF as first byte", "\nGET / HTTP/1.1\r\n" H "\r\n", UP_HTTP1_E_BAD_LINE_ENDING, 400},
    {"NUL in value", "GET / HTTP/1.1\r\n" H "X: a\0b\r\n\r\n", UP_HTTP1_E_BAD_HEADER_VALUE, 400},
    {"DEL in value", "GET / HTTP/1.1\r\n" H "X: a\x7f\r\n\r\n", UP_HTTP1_E_BAD_HEADER_VALUE, 400},
    {"space before colon", "GET / HTTP/1.1\r\n" H "X-A : b\r\n\r\n", UP_HTTP1_E_SPACE_BEFORE_COLON, 400},
    {"empty field name", "GET / HTTP/1.1\r\n" H ": b\r\n\r\n", UP_HTTP1_E_BAD_HEADER_NAME, 400},
    {"no colon", "GET / HTTP/1.1\r\n" H "X-A\r\n\r\n", UP_HTTP1_E_BAD_HEADER_NAME, 400},
    {"obs-fold", "GET / HTTP/1.1\r\n" H "X-A: b\r\n c\r\n\r\n", UP_HTTP1_E_OBS_FOLD, 400},
    {"missing Host", "GET / HTTP/1.1\r\n\r\n", UP_HTTP1_E_MISSING_HOST, 400},
    {"two Hosts", "GET / HTTP/1.1\r\n" H H "\r\n", UP_HTTP1_E_DUPLICATE_HOST, 400},
    {"Host with path", "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", UP_HTTP1_E_BAD_HOST, 400},
    {"Host with userinfo", "GET / HTTP/1.1\r\nHost: u@a\r\n\r\n", UP_HTTP1_E_BAD_HOST, 400},
    {"Host with bad port", "GET / HTTP/1.1\r\nHost: a:8x\r\n\r\n", UP_HTTP1_E_BAD_HOST, 400},
    {"Host with open bracket", "GET / HTTP/1.1\r\nHost: [::1\r\n\r\n", UP_HTTP1_E_BAD_HOST, 400},
    {"CL not a number", "POST / HTTP/1.1\r\n" H "Content-Length: 1x\r\n\r\n", UP_HTTP1_E_BAD_CONTENT_LENGTH, 400},
    {"CL negative", "POST / HTTP/1.1\r\n" H "Content-Length: -1\r\n\r\n", UP_HTTP1_E_BAD_CONTENT_LENGTH, 400},
    {"CL plus sign", "POST / HTTP/1.1\r\n" H "Content-Length: +1\r\n\r\n", UP_HTTP1_E_BAD_CONTENT_LENGTH, 400},
    {"CL empty", "POST / HTTP/1.1\r\n" H "Content-Length: \r\n\r\n", UP_HTTP1_E_BAD_CONTENT_LENGTH, 400},
    {"CL overflow", "POST / HTTP/1.1\r\n" H "Content-Length: 99999999999999999999\r\n\r\n",
     UP_HTTP1_E_BAD_CONTENT_LENGTH, 400},
    {"CL twice, equal", "POST / HTTP/1.1\r\n" H "Content-Length: 1\r\nContent-Length: 1\r\n\r\n",
     UP_HTTP1_E_DUPLICATE_CONTENT_LENGTH, 400},
    {"CL list", "POST / HTTP/1.1\r\n" H "Content-Length: 1, 1\r\n\r\n", UP_HTTP1_E_DUPLICATE_CONTENT_LENGTH, 400},
    {"CL and TE", "POST / HTTP/1.1\r\n" H "Content-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
     UP_HTTP1_E_CONTENT_LENGTH_WITH_TRANSFER_ENCODING, 400},
    {"TE chunked not last", "POST / HTTP/1.1\r\n" H "Transfer-Encoding: chunked, gzip\r\n\r\n",
     UP_HTTP1_E_BAD_TRANSFER_ENCODING, 400},
    {"TE chunked twice", "POST / HTTP/1.1\r\n" H "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
     UP_HTTP1_E_BAD_TRANSFER_ENCODING, 400},
    {"TE empty", "POST / HTTP/1.1\r\n" H "Transfer-Encoding: \r\n\r\n", UP_HTTP1_E_BAD_TRANSFER_ENCODING, 400},
    {"TE gzip then chunked", "POST / HTTP/1.1\r\n" H "Transfer-Encoding: gzip, chunked\r\n\r\n",
     UP_HTTP1_E_UNSUPPORTED_TRANSFER_ENCODING, 501},
    {"TE on HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", UP_HTTP1_E_BAD_TRANSFER_ENCODING, 400},
};

typedef struct feed_result_t {
    int r;
    up_http1_request_t req;
} feed_result_t;

static up_http1_header_t headers_whole[64], headers_bytes[64];
static const up_http1_limits_t limits = {8192, 64};

static int parse_guarded(const char *input, size_t len, size_t last_len, up_http1_request_t *req)
{
    char *buf = guarded_copy(input, len);
    int r = up_http1_parse_request(buf, len, last_len, req, &limits);
    if (r > 0) {
        /* The slices point into buf, which is about to go: rebase them onto input. */
        ptrdiff_t shift = input - buf;
#define REBASE(s) if ((s).base >= buf && (s).base <= buf + len) (s).base += shift
        REBASE(req->method);
        REBASE(req->target);
        REBASE(req->path);
        REBASE(req->query);
        REBASE(req->host);
        for (size_t i = 0; i < req->num_headers; i++) {
            REBASE(req->headers[i].name);
            REBASE(req->headers[i].value);
        }
#undef REBASE
    }
    guarded_free(buf, len);
    return r;
}

/* Feeds input one byte more each call, as a slow client would. Stops at the first answer that
 * is not "incomplete". */
static int parse_byte_at_a_time(const char *input, size_t len, up_http1_request_t *req)
{
    size_t last_len = 0;
    for (size_t n = 1; n <= len; n++) {
        int r = parse_guarded(input, n, last_len, req);
        if (r != UP_HTTP1_INCOMPLETE)
            return r;
        last_len = n;
    }
    return UP_HTTP1_INCOMPLETE;
}

static int slice_is(up_slice_t s, const char *expected)
{
    return s.len == strlen(expected) && memcmp(s.base, expected, s.len) == 0;
}

static void check_valid(const valid_case_t *c, const up_http1_request_t *req, int r, size_t len,
                        const char *how)
{
    size_t consumed = c->consumed ? c->consumed : len;
    CHECK(r == (int)consumed, "%s (%s): returned %d, expected %zu", c->name, how, r, consumed);
    if (r <= 0)
        return;
    CHECK(slice_is(req->method, c->method), "%s (%s): method %.*s", c->name, how, (int)req->method.len,
          req->method.base);
    CHECK(slice_is(req->path, c->path), "%s (%s): path %.*s", c->name, how, (int)req->path.len, req->path.base);
    CHECK(slice_is(req->query, c->query), "%s (%s): query %.*s", c->name, how, (int)req->query.len,
          req->query.base);
    CHECK(slice_is(req->host, c->host), "%s (%s): host %.*s", c->name, how, (int)req->host.len, req->host.base);
    CHECK(req->minor_version == c->minor_version, "%s (%s): minor version %d", c->name, how, req->minor_version);
    CHECK(req->content_length == c->content_length, "%s (%s): content length %lld", c->name, how,
          (long long)req->content_length);
    CHECK(req->chunked == (unsigned)c->chunked, "%s (%s): chunked %d", c->name, how, req->chunked);
    CHECK(req->keep_alive == (unsigned)c->keep_alive, "%s (%s): keep-alive %d", c->name, how, req->keep_alive);
    CHECK(req->expect_continue == (unsigned)c->expect_continue, "%s (%s): expect %d", c->name, how,
          req->expect_continue);
    CHECK(req->upgrade == (unsigned)c->upgrade, "%s (%s): upgrade %d", c->name, how, req->upgrade);
    CHECK(req->num_headers == c->num_headers, "%s (%s): %zu headers", c->name, how, req->num_headers);
}

static void test_valid(void)
{
    for (size_t i = 0; i < sizeof(valid_cases) / sizeof(valid_cases[0]); i++) {
        const valid_case_t *c = &valid_cases[i];
        size_t len = strlen(c->input);
        up_http1_request_t req = {.headers = headers_whole};
        check_valid(c, &req, parse_guarded(c->input, len, 0, &req), len, "whole");
        up_http1_request_t slow = {.headers = headers_bytes};
        size_t head_len = c->consumed ? c->consumed : len;
        check_valid(c, &slow, parse_byte_at_a_time(c->input, head_len, &slow), len, "byte at a time");
    }
}

static void test_invalid(void)
{
    for (size_t i = 0; i < sizeof(invalid_cases) / sizeof(invalid_cases[0]); i++) {
        const invalid_case_t *c = &invalid_cases[i];
        /* strlen stops at an embedded NUL; these inputs end at the last "\r\n\r\n" */
        size_t len = strlen(c->input);
        if (strstr(c->name, "NUL") != NULL)
            len = strlen(c->input) + 1 + strlen(c->input + strlen(c->input) + 1);
        up_http1_request_t req = {.headers = headers_whole};
        int r = parse_guarded(c->input, len, 0, &req);
        CHECK(r == UP_HTTP1_ERROR && req.error == c->error, "%s (whole): returned %d, error %d (%s)",
              c->name, r, req.error, up_http1_error_reason(req.error));
        CHECK(up_http1_error_status(req.error) == c->status, "%s: status %d", c->name,
              up_http1_error_status(req.error));
        up_http1_request_t slow = {.headers = headers_bytes};
        r = parse_byte_at_a_time(c->input, len, &slow);
        CHECK(r == UP_HTTP1_ERROR && slow.error == c->error, "%s (byte at a time): returned %d, error %d (%s)",
              c->name, r, slow.error, up_http1_error_reason(slow.error));
    }
}

static void test_limits(void)
{
    /* A head over the limit is refused as soon as the limit is passed, before its end arrives. */
    char big[9000];
    memset(big, 'a', sizeof(big));
    memcpy(big, "GET /", 5);
    up_http1_request_t req = {.headers = headers_whole};
    int r = parse_guarded(big, sizeof(big), 0, &req);
    CHECK(r == UP_HTTP1_ERROR && req.error == UP_HTTP1_E_HEAD_TOO_LARGE, "unterminated big head: %d %d", r,
          req.error);
    CHECK(up_http1_error_status(req.error) == 431, "big head status %d", up_http1_error_status(req.error));

    /* One byte under the limit is fine, exactly at the limit too. */
    char at_limit[8192];
    const char *start = "GET / HTTP/1.1\r\n" H "X: ";
    size_t n = strlen(start);
    memcpy(at_limit, start, n);
    memset(at_limit + n, 'v', sizeof(at_limit) - n - 4);
    memcpy(at_limit + sizeof(at_limit) - 4, "\r\n\r\n", 4);
    r = parse_guarded(at_limit, sizeof(at_limit), 0, &req);
    CHECK(r == (int)sizeof(at_limit), "head of exactly max_head_size: %d %d", r, req.error);

    /* 65 fields where 64 fit. */
    char many[4096];
    size_t len = (size_t)snprintf(many, sizeof(many), "GET / HTTP/1.1\r\n" H);
    for (int i = 0; i < 64; i++)
        len += (size_t)snprintf(many + len, sizeof(many) - len, "X%d: y\r\n", i);
    len += (size_t)snprintf(many + len, sizeof(many) - len, "\r\n");
    r = parse_guarded(many, len, 0, &req);
    CHECK(r == UP_HTTP1_ERROR && req.error == UP_HTTP1_E_TOO_MANY_HEADERS, "65 fields: %d %d", r, req.error);
    CHECK(up_http1_error_status(req.error) == 431, "too many fields status");
}

/* A configured limit past what the int result holds counts as UP_HTTP1_MAX_HEAD_SIZE_LIMIT: a
 * head that long without its end is refused, not waited for until its length wraps. The bytes
 * are a read-only mapping of zero pages: a gigabyte that costs no memory. */
static void test_head_size_limit_is_capped_whatever_the_configuration(void)
{
    size_t len = (size_t)UP_HTTP1_MAX_HEAD_SIZE_LIMIT + 1;
    char *zeros = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    CHECK(zeros != MAP_FAILED, "mmap");
    if (zeros == MAP_FAILED)
        return;
    static const size_t configured[] = {(size_t)1 << 31, (size_t)1 << 32, SIZE_MAX};
    for (size_t i = 0; i < sizeof(configured) / sizeof(configured[0]); i++) {
        up_http1_limits_t huge = {configured[i], 64};
        up_http1_request_t req = {.headers = headers_whole};
        int r = up_http1_parse_request(zeros, len, len - 1, &req, &huge);
        CHECK(r == UP_HTTP1_ERROR && req.error == UP_HTTP1_E_HEAD_TOO_LARGE,
              "limit %zu: a 1 GiB head without its end gave %d", configured[i], r);
    }
    munmap(zeros, len);
}

static void test_incomplete(void)
{
    const char *partial = "GET / HTTP/1.1\r\nHost: a\r\n";
    up_http1_request_t req = {.headers = headers_whole};
    int r = parse_guarded(partial, strlen(partial), 0, &req);
    CHECK(r == UP_HTTP1_INCOMPLETE, "head without its empty line: %d", r);
    r = parse_guarded("\r\n", 2, 0, &req);
    CHECK(r == UP_HTTP1_INCOMPLETE, "a lone empty line: %d", r);
    r = parse_guarded("\r", 1, 0, &req);
    CHECK(r == UP_HTTP1_INCOMPLETE, "a lone CR: %d", r);
}

static void test_split_authority(void)
{
    static const struct {
        const char *in, *host, *port;
    } cases[] = {
        {"example.com", "example.com", ""},
        {"example.com:8080", "example.com", "8080"},
        {"[::1]:3000", "[::1]", "3000"},
        {"[::1]", "[::1]", ""},
        {"", "", ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        up_slice_t host, port;
        up_http1_split_authority(up_slice(cases[i].in, strlen(cases[i].in)), &host, &port);
        CHECK(slice_is(host, cases[i].host) && slice_is(port, cases[i].port), "split %s: %.*s / %.*s",
              cases[i].in, (int)host.len, host.base, (int)port.len, port.base);
    }
}

int main(void)
{
    test_valid();
    test_invalid();
    test_limits();
    test_head_size_limit_is_capped_whatever_the_configuration();
    test_incomplete();
    test_split_authority();
    return test_report("http1_parser");
}
