#ifndef UP_CHUNKED_H
#define UP_CHUNKED_H

/* The chunked transfer-coding decoder for request bodies (RFC 9112 §7.1). Decodes in place, so
 * a body costs no copy; resumes where the last call stopped. Pure: no allocation, no I/O. */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define UP_CHUNKED_ERROR (-1)
#define UP_CHUNKED_INCOMPLETE (-2)

/* A chunk-size line (size plus extensions) longer than this is an attack, not a request. */
#define UP_CHUNKED_MAX_LINE 4096
/* All trailer fields together. */
#define UP_CHUNKED_MAX_TRAILERS 8192

typedef enum up_chunked_error_t {
    UP_CHUNKED_E_NONE = 0,
    UP_CHUNKED_E_BAD_SIZE,         /* not 1*HEXDIG, or more than 16 digits / overflow */
    UP_CHUNKED_E_BAD_EXTENSION,    /* not ;token[=token|quoted-string] with optional BWS */
    UP_CHUNKED_E_LINE_TOO_LONG,    /* chunk-size line over UP_CHUNKED_MAX_LINE */
    UP_CHUNKED_E_BAD_LINE_ENDING,  /* bare CR/LF, or chunk data not followed by CRLF */
    UP_CHUNKED_E_BAD_TRAILER,      /* trailer field that is not name: value */
    UP_CHUNKED_E_TRAILERS_TOO_LARGE,
    UP_CHUNKED_E_BODY_TOO_LARGE    /* decoded size over max_body: 413 */
} up_chunked_error_t;

typedef struct up_chunked_decoder_t {
    uint64_t max_body;   /* set by the caller before the first call; 0 means no limit */
    uint64_t total;      /* decoded bytes so far */
    up_chunked_error_t error;
    /* the rest is the decoder's own state; zero it with the fields above before the first call */
    uint64_t _left_in_chunk;
    size_t _line_len;
    size_t _trailer_len;
    int _state;
    int _ext_state;
} up_chunked_decoder_t;

/* Decodes buf[0..*len) in place. On return buf[0..*len) holds the body bytes decoded by this
 * call (possibly none).
 *
 * Returns UP_CHUNKED_INCOMPLETE when all input was used and the body goes on, UP_CHUNKED_ERROR
 * with d->error set, or, once the last chunk and the trailers are read, the number of bytes that
 * followed the body (the next pipelined request): they have been moved to buf[*len ..
 * *len + ret). Trailer fields are checked and dropped. */
ssize_t up_chunked_decode(up_chunked_decoder_t *d, char *buf, size_t *len);

/* Status (400 or 413) and reason for a decoder error. */
int up_chunked_error_status(up_chunked_error_t err);
const char *up_chunked_error_reason(up_chunked_error_t err);

#endif
