#ifndef UP_FILE_RESPONSE_H
#define UP_FILE_RESPONSE_H

/* An app's response whose body is a file: a response carrying x-sendfile (Rack::Sendfile does
 * that when the env says "sendfile.type" => "x-sendfile"), or one whose body has to_path. The
 * engine sends it as the static handler sends its files (static_file.h): the body by sendfile
 * from the kernel, never through the runtime; 304 and 412 for conditional requests and If-Range
 * honoured the right way round (precondition.h); Range single, suffix, open and multiple
 * (multipart/byteranges), 416 with "content-range: bytes * /SIZE" (range.h); etag,
 * last-modified and accept-ranges; HEAD without a body.
 *
 * The app's status and fields count where they make sense. A status other than 200 is sent as
 * it is, with the whole file and no conditions or ranges: the app has decided what it answers.
 * Its content-type is the file's (and each part's in a multipart body). Its etag and
 * last-modified, when it gives them, are the validators the conditions are checked against;
 * otherwise the engine makes them as the open-file cache does, from the file's mtime and size.
 * content-length, content-range, accept-ranges, transfer-encoding and x-sendfile are the
 * engine's; a 304, 412 or 416 also drops content-type and content-encoding (the file is not
 * its body). A 412 says why in a line of text/plain, as every error does (RFC 9110 §15.5) and
 * as the static handler's 412 does; a 304 and a 416 have no body.
 *
 * The file is opened once and its size taken then: a file that grows meanwhile is sent at that
 * size, and one that shrinks closes the connection when its bytes run out (outq.h), so neither
 * can hang it.
 *
 * Use, on the thread that has the exchange (the binding's app thread):
 *   up_file_response_open     the file the app named; nothing is staged yet
 *   up_file_response_plan     the status, from the request's fields and the app's
 *   up_response_start(ex, f.status), then each app field up_file_response_keeps lets through
 *   up_file_response_send     the engine's fields, the end of the head, the body, finish
 * or up_file_response_release to give up before send. */

#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include "base/slice.h"
#include "core/conn.h"
#include "core/exchange.h"
#include "handlers/file_cache.h"
#include "handlers/precondition.h"
#include "handlers/range.h"
#include "http1/http1_parser.h"

/* An app's content-type or etag longer than this is not used by the engine (the field is
 * still sent): no multipart body then, no condition on the tag. */
#define UP_FILE_RESPONSE_MAX_TYPE 256
#define UP_FILE_RESPONSE_MAX_ETAG 256
/* "up-" and 16 hex digits, and a NUL. */
#define UP_FILE_BOUNDARY_LEN 19

/* What the app said, besides the file. Slices it owns, read only during up_file_response_plan;
 * a base of NULL when the field is absent. */
typedef struct up_file_app_t {
    int status;
    up_slice_t content_type, etag, last_modified, content_encoding;
} up_file_app_t;

typedef enum up_file_body_t {
    UP_FILE_BODY_NONE = 0, /* 304, 416; 412 (its text, not the file) */
    UP_FILE_BODY_WHOLE,
    UP_FILE_BODY_RANGE,    /* one range: 206 with content-range */
    UP_FILE_BODY_MULTIPART /* 206 multipart/byteranges */
} up_file_body_t;

typedef struct up_file_response_t {
    int status; /* what to start the response with, once planned */
    up_file_rep_t *_rep;
    up_file_body_t _body;
    int _app_ok;         /* the app said 200: the engine's validators and ranges apply */
    int _own_etag, _own_date; /* the app gave none: the engine adds its own */
    up_range_set_t _set;
    char _type[UP_FILE_RESPONSE_MAX_TYPE];
    size_t _type_len;
} up_file_response_t;

/* Opens the regular file at path (up_file_rep_open). Returns 0, or -1 with errno set (ENOENT,
 * EACCES, EISDIR...) and nothing to release. */
int up_file_response_open(up_file_response_t *f, const char *path);

/* Decides f->status from the request head (its method, Range, If-* fields), the app's status
 * and fields, and the server's clock now (If-Range's date rule). Pure: reads no socket. */
void up_file_response_plan(up_file_response_t *f, const up_http1_request_t *head,
                           const up_file_app_t *app, time_t now);

/* Whether the app's field name[0..len) (any case) goes out with f->status: 0 for the fields
 * the engine writes itself or the status leaves out. */
int up_file_response_keeps(const up_file_response_t *f, const char *name, size_t len);

/* After up_response_start(ex, f->status) and the app's fields: adds the engine's fields,
 * ends the head, queues the body (by reference to the open file) and finishes the response.
 * Lets go of the file (the queue keeps its own reference until the bytes are written). */
void up_file_response_send(up_file_response_t *f, up_exchange_t *ex);

/* Lets go of the file without sending it. */
void up_file_response_release(up_file_response_t *f);

/* ---- pieces the static handler shares -------------------------------------------------- */

/* What a request asks of a file answer: its conditions and its Range, and whether it is a GET
 * (Range is defined for GET only, RFC 9110 §14.2). */
typedef struct up_file_request_t {
    up_preconditions_t pre;
    up_slice_t range;
    int range_lines; /* a Range sent on two lines is no range */
    int is_get;
} up_file_request_t;

/* The one decision of a file answer, for the static handler and the app's files alike, over a
 * file of size bytes with validators v: 412 or 304 (conditions, precondition.h), 416 (no range
 * satisfiable), 206 with *set (one range, or several when multipart_ok: several ranges of a
 * coded body or of an unknown type would need what multipart/byteranges cannot say, and the
 * whole file is sent instead), or 200 for the whole file. */
int up_file_decide(const up_file_request_t *q, const up_validators_t *v, uint64_t size,
                   int multipart_ok, up_range_set_t *set);

/* "bytes FIRST-LAST/SIZE" into buf (room for 64); returns its length. */
size_t up_file_content_range(char *buf, const up_range_t *range, uint64_t size);
/* A multipart boundary (RFC 2046 §5.1.1) into out, mixed from seed and the etag. */
void up_file_boundary(char out[UP_FILE_BOUNDARY_LEN + 1], uint64_t seed, const char *etag,
                      size_t etag_len);
/* The length of the multipart/byteranges body of set over a file of size bytes, each part of
 * media type type (RFC 9110 §14.6). */
uint64_t up_file_multipart_length(const char *boundary, up_slice_t type,
                                  const up_range_set_t *set, uint64_t size);
/* Queues that body: each part's head and its bytes of rep, then the closing delimiter. */
void up_file_multipart_write(up_exchange_t *ex, up_file_rep_t *rep, const char *boundary,
                             up_slice_t type, const up_range_set_t *set);
/* Queues rep's bytes [offset, offset + len): from memory for a rep held there, else by
 * sendfile from its fd. */
void up_file_write_part(up_exchange_t *ex, up_file_rep_t *rep, uint64_t offset, uint64_t len);

#endif
