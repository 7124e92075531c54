/* A file as an app's response; see file_response.h for the contract. */

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "base/date.h"
#include "handlers/file_response.h"
#include "handlers/precondition.h"
#include "http1/response.h"

/* Bodies up to this size held in memory are copied into the output queue with the head (one
 * writev, no allocation); larger ones are queued by reference. */
#define COPY_MAX (8 * 1024)

/* A 412's body: RFC 9110 §15.5 asks every error but HEAD's for content that explains it, and
 * nginx answers a failed If-Match with its error page; the static handler says the same. */
#define PRECONDITION_FAILED "Precondition Failed\n"

#define HDR(ex, name, value, len) \
    up_response_add_header((ex), name, sizeof(name) - 1, (value), (len))
#define HDR_LIT(ex, name, value) HDR((ex), name, (value), sizeof(value) - 1)

/* ---------------------------------------------------------------- shared pieces */

static char *put_u64(char *p, uint64_t v)
{
    char buf[24];
    int n = 0;
    do {
        buf[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (n > 0)
        *p++ = buf[--n];
    return p;
}

size_t up_file_content_range(char *buf, const up_range_t *range, uint64_t size)
{
    char *p = buf;
    memcpy(p, "bytes ", 6);
    p = put_u64(p + 6, range->first);
    *p++ = '-';
    p = put_u64(p, range->last);
    *p++ = '/';
    p = put_u64(p, size);
    return (size_t)(p - buf);
}

void up_file_boundary(char out[UP_FILE_BOUNDARY_LEN + 1], uint64_t seed, const char *etag,
                      size_t etag_len)
{
    uint64_t mix = seed * 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < etag_len; i++)
        mix = (mix ^ (unsigned char)etag[i]) * 1099511628211ull;
    snprintf(out, UP_FILE_BOUNDARY_LEN + 1, "up-%016llx", (unsigned long long)mix);
}

/* Room for one part's head: the delimiter, a content-type of the longest type either caller
 * passes, and a content-range. */
#define PART_HEAD_MAX (UP_FILE_RESPONSE_MAX_TYPE + 160)

/* One part's head of a multipart/byteranges body (RFC 9110 §14.6); returns its length. */
static size_t part_head(char *buf, const char *boundary, up_slice_t type, const up_range_t *range,
                        uint64_t size)
{
    char *p = buf;
    p += sprintf(p, "\r\n--%s\r\ncontent-type: ", boundary);
    memcpy(p, type.base, type.len);
    p += type.len;
    memcpy(p, "\r\ncontent-range: ", 17);
    p += 17;
    p += up_file_content_range(p, range, size);
    memcpy(p, "\r\n\r\n", 4);
    return (size_t)(p + 4 - buf);
}

/* The closing delimiter; returns its length. */
static size_t part_tail(char *buf, const char *boundary)
{
    return (size_t)sprintf(buf, "\r\n--%s--\r\n", boundary);
}

uint64_t up_file_multipart_length(const char *boundary, up_slice_t type,
                                  const up_range_set_t *set, uint64_t size)
{
    char head[PART_HEAD_MAX];
    uint64_t total = 0;
    for (int i = 0; i < set->count; i++) {
        total += part_head(head, boundary, type, &set->ranges[i], size);
        total += set->ranges[i].last - set->ranges[i].first + 1;
    }
    return total + part_tail(head, boundary);
}

void up_file_write_part(up_exchange_t *ex, up_file_rep_t *rep, uint64_t offset, uint64_t len)
{
    if (rep->shared.base == NULL)
        up_response_sendfile_ref(ex, &rep->shared, rep->fd, (off_t)offset, len);
    else if (len <= COPY_MAX)
        up_response_write(ex, rep->shared.base + offset, (size_t)len);
    else
        up_response_write_shared(ex, &rep->shared, (size_t)offset, (size_t)len);
}

void up_file_multipart_write(up_exchange_t *ex, up_file_rep_t *rep, const char *boundary,
                             up_slice_t type, const up_range_set_t *set)
{
    char head[PART_HEAD_MAX];
    for (int i = 0; i < set->count; i++) {
        const up_range_t *range = &set->ranges[i];
        size_t n = part_head(head, boundary, type, range, rep->size);
        up_response_write(ex, head, n);
        up_file_write_part(ex, rep, range->first, range->last - range->first + 1);
    }
    up_response_write(ex, head, part_tail(head, boundary));
}

/* ---------------------------------------------------------------- the app's file */

int up_file_response_open(up_file_response_t *f, const char *path)
{
    memset(f, 0, sizeof(*f));
    f->_rep = up_file_rep_open(path);
    return f->_rep != NULL ? 0 : -1;
}

void up_file_response_release(up_file_response_t *f)
{
    if (f->_rep != NULL)
        up_shared_release(&f->_rep->shared);
    f->_rep = NULL;
}

/* The request fields the plan reads, collected in one pass over the head. */
static void read_fields(const up_http1_request_t *head, up_file_request_t *q)
{
    memset(q, 0, sizeof(*q));
    q->is_get = up_slice_eq(head->method, "GET", 3);
    for (size_t i = 0; i < head->num_headers; i++) {
        up_slice_t n = head->headers[i].name, v = head->headers[i].value;
        if (n.len < 5 || (n.base[0] | 0x20) != (n.len == 5 ? 'r' : 'i'))
            continue; /* only range and if-* below */
        if (UP_LOWER_EQ(n.base, n.len, "range")) {
            q->range = v;
            q->range_lines++;
        } else if (UP_LOWER_EQ(n.base, n.len, "if-match")) {
            up_field_lines_add(&q->pre.if_match, v);
        } else if (UP_LOWER_EQ(n.base, n.len, "if-range")) {
            up_field_lines_add(&q->pre.if_range, v);
        } else if (UP_LOWER_EQ(n.base, n.len, "if-none-match")) {
            up_field_lines_add(&q->pre.if_none_match, v);
        } else if (UP_LOWER_EQ(n.base, n.len, "if-modified-since")) {
            up_field_lines_add(&q->pre.if_modified_since, v);
        } else if (UP_LOWER_EQ(n.base, n.len, "if-unmodified-since")) {
            up_field_lines_add(&q->pre.if_unmodified_since, v);
        }
    }
}

int up_file_decide(const up_file_request_t *q, const up_validators_t *v, uint64_t size,
                   int multipart_ok, up_range_set_t *set)
{
    switch (up_precondition_evaluate(&q->pre, v)) {
    case UP_PRECONDITION_FAILED:
        return 412;
    case UP_PRECONDITION_NOT_MODIFIED:
        return 304;
    case UP_PRECONDITION_SEND:
        break;
    }
    up_range_result_t ranged = UP_RANGE_IGNORE;
    if (q->is_get && q->range_lines == 1 && up_precondition_if_range(&q->pre, v))
        ranged = up_range_parse(q->range.base, q->range.len, size, set);
    if (ranged == UP_RANGE_SATISFIABLE && set->count > 1 && !multipart_ok)
        ranged = UP_RANGE_IGNORE;
    if (ranged == UP_RANGE_UNSATISFIABLE)
        return 416;
    return ranged == UP_RANGE_SATISFIABLE ? 206 : 200;
}

void up_file_response_plan(up_file_response_t *f, const up_http1_request_t *head,
                           const up_file_app_t *app, time_t now)
{
    up_file_rep_t *rep = f->_rep;
    f->status = app->status;
    f->_body = UP_FILE_BODY_WHOLE;
    f->_app_ok = app->status == 200;
    f->_own_etag = app->etag.base == NULL;
    f->_own_date = app->last_modified.base == NULL;
    f->_type_len = 0;
    if (app->content_type.base != NULL && app->content_type.len <= sizeof(f->_type)) {
        memcpy(f->_type, app->content_type.base, app->content_type.len);
        f->_type_len = app->content_type.len;
    }
    if (!f->_app_ok)
        return;

    /* The validators: the app's when it gave them (and they can be read), else the file's. */
    up_validators_t v = {rep->etag, rep->etag_len, rep->mtime, now};
    int etag_usable = 1;
    if (!f->_own_etag) {
        v.etag = app->etag.base;
        v.etag_len = app->etag.len;
        etag_usable = app->etag.len <= UP_FILE_RESPONSE_MAX_ETAG;
    }
    if (!f->_own_date) {
        time_t t;
        if (up_date_parse(app->last_modified.base, app->last_modified.len, now, &t) == 0)
            v.last_modified = t;
    }
    up_file_request_t q;
    read_fields(head, &q);
    if (!etag_usable) {
        /* No tag to compare with: the tag conditions are left out rather than guessed. */
        memset(&q.pre.if_match, 0, sizeof(q.pre.if_match));
        memset(&q.pre.if_none_match, 0, sizeof(q.pre.if_none_match));
        memset(&q.pre.if_range, 0, sizeof(q.pre.if_range));
        v.etag_len = 0;
    }
    /* Several ranges of a coded body would need the coding named in each part; nor can a part
     * name a type the engine could not keep. */
    int multipart_ok = app->content_encoding.base == NULL &&
                       (app->content_type.base == NULL || f->_type_len != 0);
    f->status = up_file_decide(&q, &v, rep->size, multipart_ok, &f->_set);
    if (f->status == 206)
        f->_body = f->_set.count > 1 ? UP_FILE_BODY_MULTIPART : UP_FILE_BODY_RANGE;
    else if (f->status != 200)
        f->_body = UP_FILE_BODY_NONE;
}

int up_file_response_keeps(const up_file_response_t *f, const char *name, size_t len)
{
    if (UP_LOWER_EQ(name, len, "content-length") || UP_LOWER_EQ(name, len, "x-sendfile") ||
        UP_LOWER_EQ(name, len, "transfer-encoding") || UP_LOWER_EQ(name, len, "content-range"))
        return 0;
    if (f->_app_ok && UP_LOWER_EQ(name, len, "accept-ranges"))
        return 0;
    if (f->_body == UP_FILE_BODY_NONE &&
        (UP_LOWER_EQ(name, len, "content-type") || UP_LOWER_EQ(name, len, "content-encoding")))
        return 0;
    if (f->_body == UP_FILE_BODY_MULTIPART && UP_LOWER_EQ(name, len, "content-type"))
        return 0; /* it goes into each part */
    return 1;
}

void up_file_response_send(up_file_response_t *f, up_exchange_t *ex)
{
    up_file_rep_t *rep = f->_rep;
    char value[96];
    if (f->_app_ok && f->status != 412) {
        /* The fields every answer about the file has (200, 206, 304, 416), as the static
         * handler's. */
        if (f->_own_etag)
            HDR(ex, "etag", rep->etag, rep->etag_len);
        if (f->_own_date)
            HDR(ex, "last-modified", rep->last_modified, UP_DATE_LEN);
        if (f->status != 304)
            HDR_LIT(ex, "accept-ranges", "bytes");
    }
    switch (f->_body) {
    case UP_FILE_BODY_NONE:
        if (f->status == 412) {
            HDR_LIT(ex, "content-type", "text/plain; charset=utf-8");
            up_response_end_head(ex, sizeof(PRECONDITION_FAILED) - 1);
            up_response_write(ex, PRECONDITION_FAILED, sizeof(PRECONDITION_FAILED) - 1);
            break;
        }
        if (f->status == 416) {
            int n = snprintf(value, sizeof(value), "bytes */%llu", (unsigned long long)rep->size);
            HDR(ex, "content-range", value, (size_t)n);
        }
        up_response_end_head(ex, f->status == 304 ? -1 : 0);
        break;
    case UP_FILE_BODY_WHOLE:
        up_response_end_head(ex, (int64_t)rep->size);
        up_file_write_part(ex, rep, 0, rep->size);
        break;
    case UP_FILE_BODY_RANGE: {
        const up_range_t *range = &f->_set.ranges[0];
        HDR(ex, "content-range", value, up_file_content_range(value, range, rep->size));
        uint64_t len = range->last - range->first + 1;
        up_response_end_head(ex, (int64_t)len);
        up_file_write_part(ex, rep, range->first, len);
        break;
    }
    case UP_FILE_BODY_MULTIPART: {
        char boundary[UP_FILE_BOUNDARY_LEN + 1];
        up_file_boundary(boundary, (uint64_t)(uintptr_t)ex->conn ^ rep->_ino ^ (uint64_t)rep->fd,
                         rep->etag, rep->etag_len);
        up_slice_t type = {f->_type, f->_type_len};
        if (type.len == 0)
            type = (up_slice_t){"application/octet-stream", 24};
        int n = snprintf(value, sizeof(value), "multipart/byteranges; boundary=%s", boundary);
        HDR(ex, "content-type", value, (size_t)n);
        up_response_end_head(ex,
                             (int64_t)up_file_multipart_length(boundary, type, &f->_set, rep->size));
        up_file_multipart_write(ex, rep, boundary, type, &f->_set);
        break;
    }
    }
    up_response_finish(ex);
    up_file_response_release(f);
}
