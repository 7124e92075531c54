/* The HTTP/1.1 request-head parser; see http1_parser.h for the contract.
 *
 * Two passes: first the new bytes are scanned for the end of the head (and for bare CR or LF,
 * rejected at once), so a head that arrives in pieces costs one scan in all; then the complete
 * head is parsed once, line by line. */

#include <string.h>
#include "base/token.h"
#include "http1/http1_parser.h"

static const char root_path[] = "/";

/* field-content bytes (RFC 9110 §5.5): VCHAR, obs-text, SP, HTAB. */
static int is_field_char(unsigned char c)
{
    return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int is_hex(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int fail(up_http1_request_t *req, up_http1_error_t err)
{
    req->error = err;
    return UP_HTTP1_ERROR;
}

/* ---------------------------------------------------------------- authority (RFC 3986 §3.2) */

static int is_unreserved_or_sub_delim(char c)
{
    switch (c) {
    case '-': case '.': case '_': case '~': /* unreserved */
    case '!': case '$': case '&': case '\'': case '(': case ')':
    case '*': case '+': case ',': case ';': case '=': /* sub-delims */
        return 1;
    default:
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c);
    }
}

/* host [":" port], no userinfo; an empty authority is valid (Host: with no value). */
static int valid_authority(const char *s, size_t len)
{
    size_t i = 0;
    if (len == 0)
        return 1;
    if (s[0] == '[') {
        /* IP-literal: IPv6address or IPvFuture, checked for its alphabet and closing bracket. */
        i = 1;
        while (i < len && s[i] != ']') {
            char c = s[i];
            if (!(is_hex(c) || c == ':' || c == '.' || c == 'v' || c == 'V' ||
                  is_unreserved_or_sub_delim(c)))
                return 0;
            i++;
        }
        if (i == len || i == 1)
            return 0;
        i++;
    } else {
        while (i < len && s[i] != ':') {
            char c = s[i];
            if (c == '%') {
                if (i + 2 >= len || !is_hex(s[i + 1]) || !is_hex(s[i + 2]))
                    return 0;
                i += 3;
                continue;
            }
            if (!is_unreserved_or_sub_delim(c))
                return 0;
            i++;
        }
        if (i == 0)
            return 0; /* ":80" has a port but no host */
    }
    if (i == len)
        return 1;
    if (s[i] != ':' || len - i - 1 > 5)
        return 0;
    for (i++; i < len; i++) {
        if (!is_digit(s[i]))
            return 0;
    }
    return 1;
}

void up_http1_split_authority(up_slice_t authority, up_slice_t *host, up_slice_t *port)
{
    const char *s = authority.base;
    size_t len = authority.len, host_end = len;
    if (len > 0 && s[0] == '[') {
        const char *close = memchr(s, ']', len);
        host_end = close != NULL ? (size_t)(close - s) + 1 : len;
    } else {
        const char *colon = memchr(s, ':', len);
        if (colon != NULL)
            host_end = (size_t)(colon - s);
    }
    *host = up_slice(s, host_end);
    if (host_end < len && s[host_end] == ':')
        *port = up_slice(s + host_end + 1, len - host_end - 1);
    else
        *port = up_slice(s + len, 0);
}

/* ---------------------------------------------------------------- finding the end */

/* Scans for the empty line that ends the head, from where the last call stopped. Returns the
 * head's length, 0 when it is not there yet, or -1 on a bare LF. (A bare CR inside a line is
 * caught by the line parsers, which refuse CR anywhere but before LF.) */
static long find_head_end(const char *buf, size_t len, size_t from)
{
    size_t i = from > 3 ? from - 3 : 0;
    while (i < len) {
        const char *lf = memchr(buf + i, '\n', len - i);
        if (lf == NULL)
            return 0;
        size_t at = (size_t)(lf - buf);
        if (at == 0 || buf[at - 1] != '\r')
            return -1;
        if (at >= 3 && buf[at - 2] == '\n')
            return (long)at + 1;
        i = at + 1;
    }
    return 0;
}

/* ---------------------------------------------------------------- request line (RFC 9112 §3) */

static int parse_target(up_http1_request_t *req)
{
    const char *t = req->target.base;
    size_t len = req->target.len;
    int is_connect = up_slice_eq(req->method, "CONNECT", 7);
    int is_options = up_slice_eq(req->method, "OPTIONS", 7);

    req->query = up_slice(t + len, 0);
    if (is_connect) {
        /* authority-form (§3.2.3): host and port, nothing else */
        up_slice_t host, port;
        if (!valid_authority(t, len))
            return 0;
        up_http1_split_authority(req->target, &host, &port);
        if (port.len == 0)
            return 0;
        req->target_form = UP_HTTP1_TARGET_AUTHORITY;
        req->path = req->target;
        req->host = req->target;
        return 1;
    }
    if (len == 1 && t[0] == '*') {
        if (!is_options)
            return 0;
        req->target_form = UP_HTTP1_TARGET_ASTERISK;
        req->path = req->target;
        return 1;
    }
    size_t path_at = 0;
    if (t[0] == '/') {
        req->target_form = UP_HTTP1_TARGET_ORIGIN;
    } else {
        /* absolute-form (§3.2.2): http:// or https://, then the authority */
        size_t scheme = 0;
        if (len >= 7 && UP_LOWER_EQ(t, 7, "http://"))
            scheme = 7;
        else if (len >= 8 && UP_LOWER_EQ(t, 8, "https://"))
            scheme = 8;
        if (scheme == 0)
            return 0;
        size_t end = scheme;
        while (end < len && t[end] != '/' && t[end] != '?')
            end++;
        if (end == scheme || !valid_authority(t + scheme, end - scheme))
            return 0;
        req->target_form = UP_HTTP1_TARGET_ABSOLUTE;
        req->host = up_slice(t + scheme, end - scheme);
        path_at = end;
    }
    const char *q = memchr(t + path_at, '?', len - path_at);
    size_t path_end = q != NULL ? (size_t)(q - t) : len;
    if (q != NULL)
        req->query = up_slice(q + 1, len - path_end - 1);
    if (path_end == path_at)
        req->path = up_slice(root_path, 1);
    else
        req->path = up_slice(t + path_at, path_end - path_at);
    return 1;
}

/* Parses "method SP target SP HTTP/d.d CRLF" at p. Returns where the next line starts, or
 * NULL with req->error set. */
static const char *parse_request_line(const char *p, const char *end, up_http1_request_t *req)
{
    const char *s = p;
    while (p < end && up_is_tchar((unsigned char)*p))
        p++;
    if (p == s || *p != ' ') {
        req->error = (*p == ' ' || *p == '\r') ? UP_HTTP1_E_BAD_REQUEST_LINE : UP_HTTP1_E_BAD_METHOD;
        return NULL;
    }
    req->method = up_slice(s, (size_t)(p - s));

    s = ++p;
    while (p < end && (unsigned char)*p > 0x20 && (unsigned char)*p < 0x7f && *p != '#')
        p++;
    if (p == s || *p != ' ') {
        req->error = (p == s || *p == '\r') ? UP_HTTP1_E_BAD_REQUEST_LINE : UP_HTTP1_E_BAD_TARGET;
        return NULL;
    }
    req->target = up_slice(s, (size_t)(p - s));

    p++;
    if (end - p < 10 || memcmp(p, "HTTP/", 5) != 0 || !is_digit(p[5]) || p[6] != '.' ||
        !is_digit(p[7])) {
        req->error = UP_HTTP1_E_BAD_VERSION;
        return NULL;
    }
    if (p[8] != '\r' || p[9] != '\n') {
        req->error = UP_HTTP1_E_BAD_REQUEST_LINE;
        return NULL;
    }
    if (p[5] != '1') {
        req->error = UP_HTTP1_E_VERSION_NOT_SUPPORTED;
        return NULL;
    }
    req->minor_version = p[7] == '0' ? 0 : 1;
    if (!parse_target(req)) {
        req->error = UP_HTTP1_E_BAD_TARGET;
        return NULL;
    }
    return p + 10;
}

/* ---------------------------------------------------------------- fields (RFC 9112 §5) */

/* What the special fields said, gathered while the fields are parsed. */
typedef struct framing_t {
    int host_seen;
    int te_seen;
    int te_chunked_last; /* the last coding seen is chunked */
    int te_chunked_count;
    int te_other;        /* a coding other than chunked */
    int conn_close, conn_keep_alive, conn_upgrade;
    int upgrade_seen;
} framing_t;

static int parse_content_length(const char *v, size_t len, up_http1_request_t *req)
{
    if (len == 0)
        return fail(req, UP_HTTP1_E_BAD_CONTENT_LENGTH);
    int64_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (v[i] == ',')
            return fail(req, UP_HTTP1_E_DUPLICATE_CONTENT_LENGTH);
        if (!is_digit(v[i]) || n > (INT64_MAX - 9) / 10)
            return fail(req, UP_HTTP1_E_BAD_CONTENT_LENGTH);
        n = n * 10 + (v[i] - '0');
    }
    req->content_length = n;
    return 0;
}

/* Walks a comma-separated list (RFC 9110 §5.6.1), calling each(element) on the non-empty
 * elements with OWS trimmed. */
#define FOR_EACH_ELEMENT(v, len, elem, elem_len, body)                                            \
    do {                                                                                          \
        size_t i_ = 0;                                                                            \
        while (i_ <= (len)) {                                                                     \
            size_t start_ = i_;                                                                   \
            while (i_ < (len) && (v)[i_] != ',')                                                  \
                i_++;                                                                             \
            size_t end_ = i_;                                                                     \
            while (start_ < end_ && ((v)[start_] == ' ' || (v)[start_] == '\t'))                  \
                start_++;                                                                         \
            while (end_ > start_ && ((v)[end_ - 1] == ' ' || (v)[end_ - 1] == '\t'))              \
                end_--;                                                                           \
            if (end_ > start_) {                                                                  \
                const char *elem = (v) + start_;                                                  \
                size_t elem_len = end_ - start_;                                                  \
                body                                                                              \
            }                                                                                     \
            i_++;                                                                                 \
        }                                                                                         \
    } while (0)

static void note_transfer_encoding(framing_t *f, const char *v, size_t len)
{
    f->te_seen = 1;
    FOR_EACH_ELEMENT(v, len, coding, coding_len, {
        if (UP_LOWER_EQ(coding, coding_len, "chunked")) {
            f->te_chunked_count++;
            f->te_chunked_last = 1;
        } else {
            f->te_other = 1;
            f->te_chunked_last = 0;
        }
    });
}

static void note_connection(framing_t *f, const char *v, size_t len)
{
    FOR_EACH_ELEMENT(v, len, option, option_len, {
        if (UP_LOWER_EQ(option, option_len, "close"))
            f->conn_close = 1;
        else if (UP_LOWER_EQ(option, option_len, "keep-alive"))
            f->conn_keep_alive = 1;
        else if (UP_LOWER_EQ(option, option_len, "upgrade"))
            f->conn_upgrade = 1;
    });
}

/* Looks at a field whose name the framing depends on. Returns 0 or UP_HTTP1_ERROR. */
static int note_field(const up_http1_header_t *h, framing_t *f, up_http1_request_t *req)
{
    const char *n = h->name.base, *v = h->value.base;
    size_t len = h->value.len;
    switch (h->name.len) {
    case 4:
        if (UP_LOWER_EQ(n, 4, "host")) {
            if (f->host_seen)
                return fail(req, UP_HTTP1_E_DUPLICATE_HOST);
            f->host_seen = 1;
            if (!valid_authority(v, len))
                return fail(req, UP_HTTP1_E_BAD_HOST);
            if (req->target_form != UP_HTTP1_TARGET_ABSOLUTE &&
                req->target_form != UP_HTTP1_TARGET_AUTHORITY)
                req->host = h->value;
        }
        break;
    case 6:
        if (UP_LOWER_EQ(n, 6, "expect") && UP_LOWER_EQ(v, len, "100-continue"))
            req->expect_continue = req->minor_version >= 1;
        break;
    case 7:
        if (UP_LOWER_EQ(n, 7, "upgrade"))
            f->upgrade_seen = 1;
        break;
    case 10:
        if (UP_LOWER_EQ(n, 10, "connection"))
            note_connection(f, v, len);
        break;
    case 14:
        if (UP_LOWER_EQ(n, 14, "content-length")) {
            if (req->content_length >= 0)
                return fail(req, UP_HTTP1_E_DUPLICATE_CONTENT_LENGTH);
            return parse_content_length(v, len, req);
        }
        break;
    case 17:
        if (UP_LOWER_EQ(n, 17, "transfer-encoding"))
            note_transfer_encoding(f, v, len);
        break;
    }
    return 0;
}

/* Parses one field line at p; returns where the next line starts, or NULL with req->error. */
static const char *parse_field(const char *p, up_http1_header_t *h, up_http1_request_t *req)
{
    const char *s = p;
    if (*p == ' ' || *p == '\t') {
        req->error = UP_HTTP1_E_OBS_FOLD;
        return NULL;
    }
    while (up_is_tchar((unsigned char)*p))
        p++;
    if (*p != ':') {
        if (p > s && (*p == ' ' || *p == '\t'))
            req->error = UP_HTTP1_E_SPACE_BEFORE_COLON;
        else
            req->error = UP_HTTP1_E_BAD_HEADER_NAME;
        return NULL;
    }
    if (p == s) {
        req->error = UP_HTTP1_E_BAD_HEADER_NAME;
        return NULL;
    }
    h->name = up_slice(s, (size_t)(p - s));
    p++;
    while (*p == ' ' || *p == '\t')
        p++;
    s = p;
    while (is_field_char((unsigned char)*p))
        p++;
    if (p[0] != '\r' || p[1] != '\n') {
        req->error = p[0] == '\r' || p[0] == '\n' ? UP_HTTP1_E_BAD_LINE_ENDING
                                                  : UP_HTTP1_E_BAD_HEADER_VALUE;
        return NULL;
    }
    const char *e = p;
    while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    h->value = up_slice(s, (size_t)(e - s));
    return p + 2;
}

/* The message framing the fields add up to (RFC 9112 §6.1, §6.3, §9.3). */
static int settle_framing(const framing_t *f, up_http1_request_t *req)
{
    if (f->te_seen) {
        if (req->minor_version == 0)
            return fail(req, UP_HTTP1_E_BAD_TRANSFER_ENCODING);
        if (req->content_length >= 0)
            return fail(req, UP_HTTP1_E_CONTENT_LENGTH_WITH_TRANSFER_ENCODING);
        if (!f->te_chunked_last || f->te_chunked_count != 1)
            return fail(req, UP_HTTP1_E_BAD_TRANSFER_ENCODING);
        if (f->te_other)
            return fail(req, UP_HTTP1_E_UNSUPPORTED_TRANSFER_ENCODING);
        req->chunked = 1;
    }
    if (req->minor_version >= 1 && !f->host_seen)
        return fail(req, UP_HTTP1_E_MISSING_HOST);
    if (req->minor_version >= 1)
        req->keep_alive = !f->conn_close;
    else
        req->keep_alive = f->conn_keep_alive && !f->conn_close;
    req->upgrade = f->conn_upgrade && f->upgrade_seen;
    return 0;
}

/* ---------------------------------------------------------------- the entry point */

int up_http1_parse_request(const char *buf, size_t len, size_t last_len, up_http1_request_t *req,
                           const up_http1_limits_t *limits)
{
    /* RFC 9112 §2.2: empty lines before the request line are skipped, a few of them. */
    size_t skip = 0;
    while (skip + 1 < len && buf[skip] == '\r' && buf[skip + 1] == '\n' &&
           skip < 2 * UP_HTTP1_MAX_LEADING_CRLF)
        skip += 2;
    if (skip < len && (buf[skip] == '\n' || (buf[skip] == '\r' && skip + 1 < len)))
        return fail(req, UP_HTTP1_E_BAD_LINE_ENDING);

    size_t max_head = limits->max_head_size < UP_HTTP1_MAX_HEAD_SIZE_LIMIT
                          ? limits->max_head_size
                          : UP_HTTP1_MAX_HEAD_SIZE_LIMIT;
    size_t from = last_len > skip ? last_len - skip : 0;
    long head = find_head_end(buf + skip, len - skip, from);
    if (head < 0)
        return fail(req, UP_HTTP1_E_BAD_LINE_ENDING);
    if (head == 0 || skip + (size_t)head > max_head) {
        if (head > 0 || len >= max_head)
            return fail(req, UP_HTTP1_E_HEAD_TOO_LARGE);
        return UP_HTTP1_INCOMPLETE;
    }

    const char *p = buf + skip, *end = buf + skip + head;
    req->num_headers = 0;
    req->content_length = -1;
    req->chunked = req->keep_alive = req->expect_continue = req->upgrade = 0;
    req->host = up_slice(end, 0);
    req->error = UP_HTTP1_E_NONE;
    p = parse_request_line(p, end, req);
    if (p == NULL)
        return UP_HTTP1_ERROR;

    framing_t framing = {0};
    while (!(p[0] == '\r' && p[1] == '\n')) {
        if (req->num_headers == limits->max_headers)
            return fail(req, UP_HTTP1_E_TOO_MANY_HEADERS);
        up_http1_header_t *h = &req->headers[req->num_headers];
        p = parse_field(p, h, req);
        if (p == NULL)
            return UP_HTTP1_ERROR;
        req->num_headers++;
        if (note_field(h, &framing, req) != 0)
            return UP_HTTP1_ERROR;
    }
    if (settle_framing(&framing, req) != 0)
        return UP_HTTP1_ERROR;
    return (int)(skip + (size_t)head);
}

/* ---------------------------------------------------------------- errors */

int up_http1_error_status(up_http1_error_t err)
{
    switch (err) {
    case UP_HTTP1_E_HEAD_TOO_LARGE:
    case UP_HTTP1_E_TOO_MANY_HEADERS:
        return 431;
    case UP_HTTP1_E_UNSUPPORTED_TRANSFER_ENCODING:
        return 501;
    case UP_HTTP1_E_VERSION_NOT_SUPPORTED:
        return 505;
    default:
        return 400;
    }
}

const char *up_http1_error_reason(up_http1_error_t err)
{
    switch (err) {
    case UP_HTTP1_E_NONE: return "No error";
    case UP_HTTP1_E_BAD_REQUEST_LINE: return "Malformed request line";
    case UP_HTTP1_E_BAD_METHOD: return "Invalid method";
    case UP_HTTP1_E_BAD_TARGET: return "Invalid request target";
    case UP_HTTP1_E_BAD_VERSION: return "Invalid HTTP version";
    case UP_HTTP1_E_VERSION_NOT_SUPPORTED: return "HTTP version not supported";
    case UP_HTTP1_E_BAD_LINE_ENDING: return "Lines must end with CRLF";
    case UP_HTTP1_E_BAD_HEADER_NAME: return "Invalid header field name";
    case UP_HTTP1_E_SPACE_BEFORE_COLON: return "Whitespace between header field name and colon";
    case UP_HTTP1_E_BAD_HEADER_VALUE: return "Invalid character in header field value";
    case UP_HTTP1_E_OBS_FOLD: return "Obsolete line folding in header field";
    case UP_HTTP1_E_HEAD_TOO_LARGE: return "Request line and header fields too large";
    case UP_HTTP1_E_TOO_MANY_HEADERS: return "Too many header fields";
    case UP_HTTP1_E_BAD_CONTENT_LENGTH: return "Invalid Content-Length";
    case UP_HTTP1_E_DUPLICATE_CONTENT_LENGTH: return "More than one Content-Length";
    case UP_HTTP1_E_CONTENT_LENGTH_WITH_TRANSFER_ENCODING:
        return "Content-Length and Transfer-Encoding together";
    case UP_HTTP1_E_BAD_TRANSFER_ENCODING: return "Invalid Transfer-Encoding";
    case UP_HTTP1_E_UNSUPPORTED_TRANSFER_ENCODING: return "Unsupported transfer coding";
    case UP_HTTP1_E_MISSING_HOST: return "Missing Host header field";
    case UP_HTTP1_E_DUPLICATE_HOST: return "More than one Host header field";
    case UP_HTTP1_E_BAD_HOST: return "Invalid Host header field";
    case UP_HTTP1_E__COUNT: break;
    }
    return "Bad request";
}
