#ifndef UP_HTTP1_PARSER_H
#define UP_HTTP1_PARSER_H

/* The HTTP/1.1 request-head parser (RFC 9112). A pure function: bytes in, slices out; no
 * allocation, no I/O. Strict by design: whatever RFC 9112 lets a server reject and could be
 * read two ways (request smuggling) is rejected, never guessed. */

#include <stddef.h>
#include <stdint.h>
#include "base/slice.h"

/* Return values of up_http1_parse_request besides "consumed N" (> 0). */
#define UP_HTTP1_ERROR (-1)
#define UP_HTTP1_INCOMPLETE (-2)

/* The largest head the parser takes, whatever limits->max_head_size says: a head's length is
 * returned as an int, and a limit past INT_MAX would let it wrap. Configurations are checked
 * against it (core/context.h: UP_MAX_HEAD_SIZE_LIMIT, the same); the parser applies it anyway. */
#define UP_HTTP1_MAX_HEAD_SIZE_LIMIT (1024 * 1024 * 1024)

/* Leading empty lines a client may send before the request line (RFC 9112 §2.2). */
#define UP_HTTP1_MAX_LEADING_CRLF 8

typedef enum up_http1_error_t {
    UP_HTTP1_E_NONE = 0,
    UP_HTTP1_E_BAD_REQUEST_LINE,     /* missing parts, extra spaces, bad syntax */
    UP_HTTP1_E_BAD_METHOD,           /* method is not a token */
    UP_HTTP1_E_BAD_TARGET,           /* bad character, '#', form not allowed for the method */
    UP_HTTP1_E_BAD_VERSION,          /* not HTTP/d.d */
    UP_HTTP1_E_VERSION_NOT_SUPPORTED, /* major version other than 1: 505 */
    UP_HTTP1_E_BAD_LINE_ENDING,      /* bare CR or bare LF */
    UP_HTTP1_E_BAD_HEADER_NAME,      /* empty or not a token */
    UP_HTTP1_E_SPACE_BEFORE_COLON,   /* RFC 9112 §5.1 */
    UP_HTTP1_E_BAD_HEADER_VALUE,     /* NUL or other control character */
    UP_HTTP1_E_OBS_FOLD,             /* line folding, RFC 9112 §5.2 */
    UP_HTTP1_E_HEAD_TOO_LARGE,       /* request line + headers over the limit: 431 */
    UP_HTTP1_E_TOO_MANY_HEADERS,     /* 431 */
    UP_HTTP1_E_BAD_CONTENT_LENGTH,   /* not 1*DIGIT, or too big for int64 */
    UP_HTTP1_E_DUPLICATE_CONTENT_LENGTH, /* two fields, or a list, even if equal */
    UP_HTTP1_E_CONTENT_LENGTH_WITH_TRANSFER_ENCODING, /* RFC 9112 §6.1 */
    UP_HTTP1_E_BAD_TRANSFER_ENCODING, /* chunked not last, chunked twice, empty, on HTTP/1.0 */
    UP_HTTP1_E_UNSUPPORTED_TRANSFER_ENCODING, /* a coding other than chunked: 501 */
    UP_HTTP1_E_MISSING_HOST,         /* HTTP/1.1 without Host, RFC 9112 §3.2 */
    UP_HTTP1_E_DUPLICATE_HOST,
    UP_HTTP1_E_BAD_HOST,             /* not a valid RFC 3986 authority */
    UP_HTTP1_E__COUNT
} up_http1_error_t;

typedef enum up_http1_target_form_t {
    UP_HTTP1_TARGET_ORIGIN = 0, /* /path?query */
    UP_HTTP1_TARGET_ABSOLUTE,   /* http://host/path?query */
    UP_HTTP1_TARGET_AUTHORITY,  /* host:port, CONNECT only */
    UP_HTTP1_TARGET_ASTERISK    /* *, OPTIONS only */
} up_http1_target_form_t;

typedef struct up_http1_header_t {
    up_slice_t name;  /* as sent (case kept) */
    up_slice_t value; /* leading and trailing SP/HTAB stripped */
} up_http1_header_t;

typedef struct up_http1_limits_t {
    size_t max_head_size; /* request line + headers + final CRLF, in bytes; at most
                           * UP_HTTP1_MAX_HEAD_SIZE_LIMIT counts */
    size_t max_headers;   /* also the capacity of the caller's headers array */
} up_http1_limits_t;

typedef struct up_http1_request_t {
    up_slice_t method;
    up_slice_t target;      /* the request-target as sent */
    up_http1_target_form_t target_form;
    up_slice_t path;        /* origin form: up to '?'; absolute form: its path ("/" when empty, then
                             * base points at a static "/"); asterisk: "*"; CONNECT: the authority */
    up_slice_t query;       /* after '?', '?' excluded; len 0 when there is none */
    up_slice_t host;        /* authority of an absolute-form target if any (RFC 9112 §3.2.2),
                             * else the Host field value; len 0 when neither */
    int minor_version;      /* 0 or 1 (HTTP/1.2+ is handled as 1.1, RFC 9110 §2.5) */
    up_http1_header_t *headers; /* caller's array of limits->max_headers entries */
    size_t num_headers;
    int64_t content_length; /* -1 when absent */
    unsigned chunked : 1;         /* Transfer-Encoding: chunked */
    unsigned keep_alive : 1;      /* from the version and the Connection field */
    unsigned expect_continue : 1; /* Expect: 100-continue (HTTP/1.1 only) */
    unsigned upgrade : 1;         /* Connection: upgrade and an Upgrade field */
    up_http1_error_t error;       /* set when UP_HTTP1_ERROR is returned */
} up_http1_request_t;

/* Parses one request head from buf[0..len). last_len is the len of the previous call on the same
 * bytes (0 on the first), so that only the new bytes are scanned for the end of the head.
 *
 * Returns the number of bytes the head took (leading empty lines, request line, fields and the
 * empty line), UP_HTTP1_INCOMPLETE when more bytes are needed, or UP_HTTP1_ERROR with req->error
 * set. An incomplete head already over limits->max_head_size, or one that already shows a bare
 * LF, is an error at once; a bare CR is found when the head is complete. On success every slice
 * in req points into buf. */
int up_http1_parse_request(const char *buf, size_t len, size_t last_len, up_http1_request_t *req,
                           const up_http1_limits_t *limits);

/* The status code (400, 431, 501, 505) and a short reason (for the response body and the log)
 * to answer a request that failed with err. */
int up_http1_error_status(up_http1_error_t err);
const char *up_http1_error_reason(up_http1_error_t err);

/* Splits a valid authority ("example.com:8080", "[::1]:80", "host") into host and port; port has
 * len 0 when absent. The brackets of an IPv6 literal stay in host. */
void up_http1_split_authority(up_slice_t authority, up_slice_t *host, up_slice_t *port);

#endif
