/* libFuzzer target for the request-head parser (ext/up/engine/http1/http1_parser.c).
 *
 * Each input is parsed whole, then again the way a slow client delivers it: growing prefixes,
 * each in its own exactly-sized heap block (so reading past the bytes received so far is an
 * AddressSanitizer report, not a lucky read of bytes that came later), each call given the
 * length of the previous INCOMPLETE one as last_len, as the connection does. Both ways must
 * agree, and whatever a success hands out must hold together. */

#include "fuzz.h"
#include "http1/http1_parser.h"

#define MAX_HEAD_SIZE 8192
#define MAX_HEADERS 64
/* Inputs up to this size are also fed one byte at a time; every prefix is a fresh copy, so the
 * cost grows with the square of the size. */
#define BYTEWISE_MAX 256

static const up_http1_limits_t limits = {MAX_HEAD_SIZE, MAX_HEADERS};

/* One call and the block it read: the slices of a success point into buf. */
typedef struct parse_t {
    char *buf;
    size_t len;
    int ret;
    up_http1_request_t req;
} parse_t;

static void parse_init(parse_t *p)
{
    memset(p, 0, sizeof(*p));
    /* its own block too, so a header written past the limit is caught */
    p->req.headers = malloc(MAX_HEADERS * sizeof(up_http1_header_t));
    FUZZ_CHECK(p->req.headers != NULL);
}

static void parse_free(parse_t *p)
{
    free(p->buf);
    free(p->req.headers);
}

/* Parses data[0..n) from a fresh copy. The request is cleared first so that nothing a previous
 * call left behind can pass for this call's answer. */
static void parse_at(parse_t *p, const uint8_t *data, size_t n, size_t last_len)
{
    up_http1_header_t *headers = p->req.headers;
    free(p->buf);
    p->buf = fuzz_copy(data, n);
    p->len = n;
    memset(&p->req, 0, sizeof(p->req));
    p->req.headers = headers;
    p->ret = up_http1_parse_request(p->buf, n, last_len, &p->req, &limits);
}

/* Feeds prefixes that grow by 1 to span bytes until the parser answers or the data runs out. */
static void parse_growing(const uint8_t *data, size_t size, size_t span, uint32_t *rng, parse_t *p)
{
    size_t n = 0;
    do {
        size_t last_len = n;
        n += fuzz_piece(rng, span, size - n);
        parse_at(p, data, n, last_len);
    } while (p->ret == UP_HTTP1_INCOMPLETE && n < size);
}

/* ---------------------------------------------------------------- one answer on its own */

/* Within the head the parser consumed: slices must not point at the body or past the data. */
static int inside(const parse_t *p, up_slice_t s)
{
    uintptr_t begin = (uintptr_t)p->buf, end = begin + (size_t)p->ret, at = (uintptr_t)s.base;
    return at >= begin && at <= end && s.len <= end - at;
}

static int is_ws(char c)
{
    return c == ' ' || c == '\t';
}

static void check_header(const parse_t *p, const up_http1_header_t *h)
{
    FUZZ_CHECK(inside(p, h->name) && inside(p, h->value));
    FUZZ_CHECK(h->name.len > 0 && memchr(h->name.base, ':', h->name.len) == NULL);
    /* values come stripped, and a line ending inside one would mean a missed field boundary */
    FUZZ_CHECK(h->value.len == 0 ||
               (!is_ws(h->value.base[0]) && !is_ws(h->value.base[h->value.len - 1])));
    FUZZ_CHECK(memchr(h->value.base, '\r', h->value.len) == NULL);
    FUZZ_CHECK(memchr(h->value.base, '\n', h->value.len) == NULL);
}

static void check_slices(const parse_t *p)
{
    const up_http1_request_t *r = &p->req;
    FUZZ_CHECK(inside(p, r->method) && inside(p, r->target));
    FUZZ_CHECK(inside(p, r->query) && inside(p, r->host));
    /* The one slice allowed outside: the static "/" of an absolute-form target with no path. */
    if (!inside(p, r->path)) {
        FUZZ_CHECK(r->target_form == UP_HTTP1_TARGET_ABSOLUTE);
        FUZZ_CHECK(r->path.len == 1 && r->path.base[0] == '/');
    }
    for (size_t i = 0; i < r->num_headers; i++)
        check_header(p, &r->headers[i]);
}

static void check_form(const up_http1_request_t *r)
{
    switch (r->target_form) {
    case UP_HTTP1_TARGET_AUTHORITY:
        FUZZ_CHECK(up_slice_eq(r->method, "CONNECT", 7));
        FUZZ_CHECK(r->host.base == r->target.base && r->host.len == r->target.len);
        break;
    case UP_HTTP1_TARGET_ASTERISK:
        FUZZ_CHECK(up_slice_eq(r->method, "OPTIONS", 7) && up_slice_eq(r->path, "*", 1));
        break;
    case UP_HTTP1_TARGET_ORIGIN:
        FUZZ_CHECK(r->path.len > 0 && r->path.base == r->target.base);
        break;
    case UP_HTTP1_TARGET_ABSOLUTE:
        FUZZ_CHECK(r->host.len > 0 && r->path.len > 0 && r->path.base[0] == '/');
        break;
    default:
        FUZZ_CHECK(!"unknown target form");
    }
}

/* host [":" port], split inside the authority itself; the parser only lets valid ones through,
 * so the port, when there, is at most five digits. */
static void check_authority(up_slice_t auth)
{
    up_slice_t host, port;
    up_http1_split_authority(auth, &host, &port);
    FUZZ_CHECK(host.base == auth.base && host.len <= auth.len);
    FUZZ_CHECK(auth.len == 0 || host.len > 0);
    FUZZ_CHECK(port.base + port.len == auth.base + auth.len);
    if (host.len == auth.len) {
        FUZZ_CHECK(port.len == 0);
        return;
    }
    FUZZ_CHECK(auth.base[host.len] == ':' && port.base == host.base + host.len + 1);
    FUZZ_CHECK(port.len <= 5);
    for (size_t i = 0; i < port.len; i++)
        FUZZ_CHECK(port.base[i] >= '0' && port.base[i] <= '9');
}

static void check_success(const parse_t *p)
{
    const up_http1_request_t *r = &p->req;
    FUZZ_CHECK((size_t)p->ret <= p->len && p->ret <= MAX_HEAD_SIZE);
    /* leading empty lines or not, a head ends with an empty line */
    FUZZ_CHECK(p->ret >= 4 && memcmp(p->buf + p->ret - 4, "\r\n\r\n", 4) == 0);
    FUZZ_CHECK(r->error == UP_HTTP1_E_NONE && r->method.len > 0 && r->target.len > 0);
    FUZZ_CHECK(r->minor_version == 0 || r->minor_version == 1);
    FUZZ_CHECK(r->num_headers <= MAX_HEADERS && r->content_length >= -1);
    /* framing is never ambiguous: chunked excludes a length and needs HTTP/1.1 */
    FUZZ_CHECK(!r->chunked || (r->content_length == -1 && r->minor_version == 1));
    FUZZ_CHECK(!r->expect_continue || r->minor_version == 1);
    check_slices(p);
    check_form(r);
    check_authority(r->host);
}

static void check_error(const parse_t *p)
{
    up_http1_error_t err = p->req.error;
    FUZZ_CHECK(err > UP_HTTP1_E_NONE && err < UP_HTTP1_E__COUNT);
    int status = up_http1_error_status(err);
    FUZZ_CHECK(status == 400 || status == 431 || status == 501 || status == 505);
    const char *reason = up_http1_error_reason(err);
    FUZZ_CHECK(reason != NULL && reason[0] != '\0');
}

/* "Need more" is only for a head that is still short of the limit and, so far, free of bare
 * LFs: those are errors at once (http1_parser.h). */
static void check_incomplete(const parse_t *p)
{
    FUZZ_CHECK(p->len < MAX_HEAD_SIZE);
    for (size_t i = 0; i < p->len; i++)
        FUZZ_CHECK(p->buf[i] != '\n' || (i > 0 && p->buf[i - 1] == '\r'));
}

static void check_answer(const parse_t *p)
{
    if (p->ret == UP_HTTP1_INCOMPLETE)
        check_incomplete(p);
    else if (p->ret == UP_HTTP1_ERROR)
        check_error(p);
    else
        check_success(p);
}

/* ---------------------------------------------------------------- two answers together */

/* The same slice from two copies of the same bytes: same bytes, same place (the static "/"
 * aside). */
static void check_same_slice(const parse_t *a, up_slice_t x, const parse_t *b, up_slice_t y)
{
    FUZZ_CHECK(x.len == y.len && memcmp(x.base, y.base, x.len) == 0);
    FUZZ_CHECK(inside(a, x) == inside(b, y));
    if (inside(a, x))
        FUZZ_CHECK(x.base - a->buf == y.base - b->buf);
}

static void check_same_request(const parse_t *a, const parse_t *b)
{
    const up_http1_request_t *x = &a->req, *y = &b->req;
    FUZZ_CHECK(a->ret == b->ret);
    FUZZ_CHECK(x->target_form == y->target_form && x->minor_version == y->minor_version);
    FUZZ_CHECK(x->num_headers == y->num_headers && x->content_length == y->content_length);
    FUZZ_CHECK(x->chunked == y->chunked && x->keep_alive == y->keep_alive);
    FUZZ_CHECK(x->expect_continue == y->expect_continue && x->upgrade == y->upgrade);
    check_same_slice(a, x->method, b, y->method);
    check_same_slice(a, x->target, b, y->target);
    check_same_slice(a, x->path, b, y->path);
    check_same_slice(a, x->query, b, y->query);
    check_same_slice(a, x->host, b, y->host);
    for (size_t i = 0; i < x->num_headers; i++) {
        check_same_slice(a, x->headers[i].name, b, y->headers[i].name);
        check_same_slice(a, x->headers[i].value, b, y->headers[i].value);
    }
}

/* The whole parse (a) against one fed in pieces (b) that stopped after b->len bytes. */
static void check_agree(const parse_t *a, const parse_t *b)
{
    if (b->ret == UP_HTTP1_INCOMPLETE) {
        FUZZ_CHECK(a->ret == UP_HTTP1_INCOMPLETE);
    } else if (b->ret == UP_HTTP1_ERROR) {
        /* An early error may differ from the whole one (a prefix over the size limit, where the
         * whole input later shows a bare LF), but on the same bytes only last_len differed, and
         * last_len must not change the verdict. */
        FUZZ_CHECK(a->ret == UP_HTTP1_ERROR);
        if (b->len == a->len)
            FUZZ_CHECK(a->req.error == b->req.error);
    } else {
        check_same_request(a, b);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    parse_t whole, piecewise;
    parse_init(&whole);
    parse_init(&piecewise);
    parse_at(&whole, data, size, 0);
    check_answer(&whole);

    uint32_t rng = fuzz_seed(data, size);
    if (size > 0) {
        parse_growing(data, size, size / 2 + 1, &rng, &piecewise);
        check_answer(&piecewise);
        check_agree(&whole, &piecewise);
    }
    /* one byte at a time walks last_len over every position, the lookback edges included */
    if (size > 0 && size <= BYTEWISE_MAX) {
        parse_growing(data, size, 1, &rng, &piecewise);
        check_answer(&piecewise);
        check_agree(&whole, &piecewise);
    }
    parse_free(&whole);
    parse_free(&piecewise);
    return 0;
}
