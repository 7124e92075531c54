/* The response writer; see response.h for the contract. */

#include <string.h>
#include <unistd.h>
#include "base/digits.h"
#include "base/token.h"
#include "http1/request.h"
#include "http1/response.h"

const char *up_status_reason(int status)
{
    switch (status) {
    case 100: return "Continue";
    case 101: return "Switching Protocols";
    case 102: return "Processing";
    case 103: return "Early Hints";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 203: return "Non-Authoritative Information";
    case 204: return "No Content";
    case 205: return "Reset Content";
    case 206: return "Partial Content";
    case 207: return "Multi-Status";
    case 208: return "Already Reported";
    case 226: return "IM Used";
    case 300: return "Multiple Choices";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 303: return "See Other";
    case 304: return "Not Modified";
    case 305: return "Use Proxy";
    case 307: return "Temporary Redirect";
    case 308: return "Permanent Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 402: return "Payment Required";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 407: return "Proxy Authentication Required";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 411: return "Length Required";
    case 412: return "Precondition Failed";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 416: return "Range Not Satisfiable";
    case 417: return "Expectation Failed";
    case 421: return "Misdirected Request";
    case 422: return "Unprocessable Content";
    case 423: return "Locked";
    case 424: return "Failed Dependency";
    case 425: return "Too Early";
    case 426: return "Upgrade Required";
    case 428: return "Precondition Required";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 451: return "Unavailable For Legal Reasons";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    case 506: return "Variant Also Negotiates";
    case 507: return "Insufficient Storage";
    case 508: return "Loop Detected";
    case 511: return "Network Authentication Required";
    default: return "";
    }
}

/* The writer queues into conn->_staged, which belongs to whichever thread has the exchange;
 * up_response_send hands it to the loop. */
static char *out_reserve(up_conn_t *conn, size_t n)
{
    return up_outq_reserve(&conn->_staged, &conn->server->pool, n);
}

static void out_commit(up_conn_t *conn, size_t n)
{
    up_outq_commit(&conn->_staged, n);
}

static void out(up_conn_t *conn, const char *data, size_t len)
{
    up_outq_append(&conn->_staged, &conn->server->pool, data, len);
}

#define OUT_LIT(conn, s) out((conn), (s), sizeof(s) - 1)

static void out_u64(up_conn_t *conn, uint64_t v)
{
    char buf[24], *end = buf + sizeof(buf);
    char *p = up_format_u64(end, v, 10);
    out(conn, p, (size_t)(end - p));
}

void up_response_reset(up_exchange_t *ex)
{
    up_conn_t *conn = ex->conn;
    const up_http1_request_t *head = &ex->req->head;
    *ex->res = (up_response_state_t){0};
    ex->res->content_length = -1;
    ex->res->head_only = head->method.len == 4 && memcmp(head->method.base, "HEAD", 4) == 0;
    ex->res->keep_alive = head->keep_alive && !conn->server->stopping;
}

#define NAME_IS(name, len, lit) UP_LOWER_EQ((name), (len), (lit))

up_response_error_t up_response_start(up_exchange_t *ex, int status)
{
    if (ex->ops != NULL)
        return ex->ops->start(ex, status);
    up_conn_t *conn = ex->conn;
    up_response_state_t *res = ex->res;
    if (res->started && !res->finished)
        return UP_RESPONSE_E_STATE;
    if (status < 100 || status > 999)
        return UP_RESPONSE_E_BAD_STATUS;
    int keep_alive = res->keep_alive, head_only = res->head_only;
    *res = (up_response_state_t){0};
    res->keep_alive = keep_alive;
    res->head_only = head_only;
    res->content_length = -1;
    res->status = status;
    res->started = 1;
    res->no_body = status < 200 || status == 204 || status == 304;
    res->start = up_outq_mark(&conn->_staged);

    const char *reason = up_status_reason(status);
    size_t reason_len = strlen(reason);
    char *p = out_reserve(conn, 16 + reason_len);
    memcpy(p, "HTTP/1.1 ", 9);
    p[9] = (char)('0' + status / 100);
    p[10] = (char)('0' + status / 10 % 10);
    p[11] = (char)('0' + status % 10);
    p[12] = ' ';
    memcpy(p + 13, reason, reason_len);
    p[13 + reason_len] = '\r';
    p[14 + reason_len] = '\n';
    out_commit(conn, 15 + reason_len);
    return UP_RESPONSE_OK;
}

/* content-length as the app gave it: 1*DIGIT that fits in 63 bits. */
static int64_t parse_length(const char *v, size_t len)
{
    if (len == 0 || len > 18)
        return -1;
    int64_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (v[i] < '0' || v[i] > '9')
            return -1;
        n = n * 10 + (v[i] - '0');
    }
    return n;
}

static int value_has_close(const char *v, size_t len)
{
    for (size_t i = 0; i + 5 <= len; i++) {
        if (UP_LOWER_EQ(v + i, 5, "close"))
            return 1;
    }
    return 0;
}

static void out_header(up_conn_t *conn, const char *name, size_t name_len, const char *value,
                       size_t value_len)
{
    char *p = out_reserve(conn, name_len + value_len + 4);
    for (size_t i = 0; i < name_len; i++) {
        char c = name[i];
        p[i] = (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
    }
    p += name_len;
    *p++ = ':';
    *p++ = ' ';
    memcpy(p, value, value_len);
    p[value_len] = '\r';
    p[value_len + 1] = '\n';
    out_commit(conn, name_len + value_len + 4);
}

up_response_error_t up_response_add_header(up_exchange_t *ex, const char *name, size_t name_len,
                                           const char *value, size_t value_len)
{
    if (ex->ops != NULL)
        return ex->ops->add_header(ex, name, name_len, value, value_len);
    up_conn_t *conn = ex->conn;
    up_response_state_t *res = ex->res;
    if (!res->started || res->head_done)
        return UP_RESPONSE_E_STATE;
    if (name_len == 0)
        return UP_RESPONSE_E_BAD_HEADER_NAME;
    for (size_t i = 0; i < name_len; i++) {
        if (!up_is_tchar((unsigned char)name[i]))
            return UP_RESPONSE_E_BAD_HEADER_NAME;
    }
    for (size_t i = 0; i < value_len; i++) {
        char c = value[i];
        if (c == '\r' || c == '\n' || c == '\0')
            return UP_RESPONSE_E_BAD_HEADER_VALUE;
    }

    switch (name_len) {
    case 4:
        if (NAME_IS(name, name_len, "date"))
            res->has_date = 1;
        break;
    case 10:
        if (NAME_IS(name, name_len, "connection") && res->status != 101) {
            if (value_has_close(value, value_len))
                res->keep_alive = 0;
            return UP_RESPONSE_OK;
        }
        break;
    case 14:
        if (NAME_IS(name, name_len, "content-length")) {
            int64_t n = parse_length(value, value_len);
            if (n < 0 || (res->content_length >= 0 && res->content_length != n))
                return UP_RESPONSE_E_BAD_CONTENT_LENGTH;
            if (!res->no_body)
                res->content_length = n;
            return UP_RESPONSE_OK;
        }
        break;
    case 17:
        if (NAME_IS(name, name_len, "transfer-encoding")) {
            if (res->no_body || res->head_only)
                return UP_RESPONSE_OK;
            res->has_transfer_encoding = 1;
        }
        break;
    }
    out_header(conn, name, name_len, value, value_len);
    return UP_RESPONSE_OK;
}

up_response_error_t up_response_end_head(up_exchange_t *ex, int64_t body_length)
{
    if (ex->ops != NULL)
        return ex->ops->end_head(ex, body_length);
    up_conn_t *conn = ex->conn;
    up_response_state_t *res = ex->res;
    if (!res->started || res->head_done)
        return UP_RESPONSE_E_STATE;

    if (res->status < 200) {
        /* An interim response: blank line, then the final one may start (RFC 9110 §15.2). */
        OUT_LIT(conn, "\r\n");
        res->started = 0;
        res->finished = 1;
        return UP_RESPONSE_OK;
    }

    int64_t length = res->content_length >= 0 ? res->content_length : body_length;
    if (res->no_body) {
        res->framing = UP_FRAMING_NONE;
    } else if (body_length == UP_RESPONSE_OPEN_STREAM) {
        res->framing = res->head_only ? UP_FRAMING_NONE : UP_FRAMING_CLOSE;
        res->keep_alive = 0;
    } else if (res->has_transfer_encoding) {
        /* Rack 3 dropped Rack::Chunked; an app that frames its own body is sent as is, and
         * the close is what ends it for sure. */
        res->framing = res->head_only ? UP_FRAMING_NONE : UP_FRAMING_RAW;
        res->keep_alive = 0;
    } else if (length >= 0) {
        res->framing = res->head_only ? UP_FRAMING_NONE : UP_FRAMING_LENGTH;
        res->body_left = (uint64_t)length;
        OUT_LIT(conn, "content-length: ");
        out_u64(conn, (uint64_t)length);
        OUT_LIT(conn, "\r\n");
    } else if (res->head_only) {
        res->framing = UP_FRAMING_NONE;
    } else if (ex->req->head.minor_version >= 1) {
        res->framing = UP_FRAMING_CHUNKED;
        OUT_LIT(conn, "transfer-encoding: chunked\r\n");
    } else {
        res->framing = UP_FRAMING_CLOSE;
        res->keep_alive = 0;
    }

    if (!res->keep_alive)
        OUT_LIT(conn, "connection: close\r\n");
    else if (ex->req->head.minor_version == 0)
        OUT_LIT(conn, "connection: keep-alive\r\n");
    if (!res->has_date) {
        char *p = out_reserve(conn, 6 + UP_DATE_LEN + 2);
        memcpy(p, "date: ", 6);
        up_date_copy(&conn->server->date, p + 6);
        memcpy(p + 6 + UP_DATE_LEN, "\r\n", 2);
        out_commit(conn, 6 + UP_DATE_LEN + 2);
    }
    OUT_LIT(conn, "\r\n");
    res->head_done = 1;
    return UP_RESPONSE_OK;
}

/* How much of a len-byte body part the framing lets through (0 for none), with the chunk
 * header written when chunked. The caller queues the part, then calls frame_part_end. */
static up_response_error_t frame_part(up_exchange_t *ex, size_t *len)
{
    up_conn_t *conn = ex->conn;
    up_response_state_t *res = ex->res;
    if (!res->head_done || res->finished)
        return UP_RESPONSE_E_STATE;
    if (up_conn_any_broken(conn))
        return UP_RESPONSE_E_CLIENT_GONE;
    switch (res->framing) {
    case UP_FRAMING_NONE:
        *len = 0;
        break;
    case UP_FRAMING_LENGTH:
        if (*len > res->body_left)
            *len = (size_t)res->body_left;
        res->body_left -= *len;
        break;
    case UP_FRAMING_CHUNKED:
        if (*len > 0) {
            char size[24], *end = size + sizeof(size) - 2;
            char *p = up_format_u64(end, *len, 16);
            memcpy(end, "\r\n", 2);
            out(conn, p, (size_t)(end + 2 - p));
        }
        break;
    case UP_FRAMING_CLOSE:
    case UP_FRAMING_RAW:
        break;
    }
    res->body_bytes += *len;
    return UP_RESPONSE_OK;
}

static void frame_part_end(up_exchange_t *ex, size_t len)
{
    up_conn_t *conn = ex->conn;
    if (ex->res->framing == UP_FRAMING_CHUNKED && len > 0)
        OUT_LIT(conn, "\r\n");
}

up_response_error_t up_response_write(up_exchange_t *ex, const char *data, size_t len)
{
    if (ex->ops != NULL)
        return ex->ops->write(ex, data, len);
    up_conn_t *conn = ex->conn;
    up_response_error_t err = frame_part(ex, &len);
    if (err != UP_RESPONSE_OK || len == 0)
        return err;
    out(conn, data, len);
    frame_part_end(ex, len);
    return UP_RESPONSE_OK;
}

up_response_error_t up_response_write_shared(up_exchange_t *ex, up_shared_t *shared, size_t offset,
                                             size_t len)
{
    if (ex->ops != NULL)
        return ex->ops->write_shared(ex, shared, offset, len);
    up_conn_t *conn = ex->conn;
    up_response_error_t err = frame_part(ex, &len);
    if (err != UP_RESPONSE_OK || len == 0)
        return err;
    up_outq_append_shared(&conn->_staged, shared, offset, len);
    frame_part_end(ex, len);
    return UP_RESPONSE_OK;
}

up_response_error_t up_response_sendfile(up_exchange_t *ex, int fd, off_t offset, uint64_t len)
{
    if (ex->ops != NULL)
        return ex->ops->sendfile(ex, fd, offset, len);
    up_conn_t *conn = ex->conn;
    up_response_state_t *res = ex->res;
    if (!res->head_done || res->finished || res->framing == UP_FRAMING_CHUNKED) {
        /* The binding passes a file's size to end_head, so chunked framing is a misuse. */
        close(fd);
        return UP_RESPONSE_E_STATE;
    }
    if (res->framing == UP_FRAMING_NONE) {
        close(fd);
        return UP_RESPONSE_OK;
    }
    if (res->framing == UP_FRAMING_LENGTH) {
        if (len > res->body_left)
            len = res->body_left;
        res->body_left -= len;
    }
    up_outq_append_file(&conn->_staged, fd, offset, len);
    res->body_bytes += len;
    return UP_RESPONSE_OK;
}

up_response_error_t up_response_sendfile_ref(up_exchange_t *ex, up_shared_t *owner, int fd,
                                             off_t offset, uint64_t len)
{
    if (ex->ops != NULL)
        return ex->ops->sendfile_ref(ex, owner, fd, offset, len);
    up_conn_t *conn = ex->conn;
    up_response_state_t *res = ex->res;
    if (!res->head_done || res->finished || res->framing == UP_FRAMING_CHUNKED)
        return UP_RESPONSE_E_STATE;
    if (res->framing == UP_FRAMING_NONE)
        return UP_RESPONSE_OK;
    if (res->framing == UP_FRAMING_LENGTH) {
        if (len > res->body_left)
            len = res->body_left;
        res->body_left -= len;
    }
    up_outq_append_file_ref(&conn->_staged, owner, fd, offset, len);
    res->body_bytes += len;
    return UP_RESPONSE_OK;
}

up_response_error_t up_response_finish(up_exchange_t *ex)
{
    if (ex->ops != NULL)
        return ex->ops->finish(ex);
    up_conn_t *conn = ex->conn;
    up_response_state_t *res = ex->res;
    if (!res->head_done || res->finished)
        return UP_RESPONSE_E_STATE;
    if (res->framing == UP_FRAMING_CHUNKED)
        OUT_LIT(conn, "0\r\n\r\n");
    else if (res->framing == UP_FRAMING_LENGTH && res->body_left > 0)
        res->keep_alive = 0; /* the client will see a short body; only a close tells it */
    res->finished = 1;
    return UP_RESPONSE_OK;
}

int up_response_rollback(up_exchange_t *ex)
{
    if (ex->ops != NULL)
        return ex->ops->rollback(ex);
    up_conn_t *conn = ex->conn;
    up_response_state_t *res = ex->res;
    if (!res->started)
        return 1;
    if (res->posted) {
        res->keep_alive = 0;
        res->finished = 1;
        return 0;
    }
    up_outq_truncate(&conn->_staged, &conn->server->pool, res->start);
    res->started = 0;
    res->head_done = 0;
    res->finished = 0;
    return 1;
}

/* What is staged leaves the rollback's reach. */
static void mark_posted(up_exchange_t *ex)
{
    up_conn_t *conn = ex->conn;
    if (ex->res->started && !up_outq_empty(&conn->_staged))
        ex->res->posted = 1;
}

int up_response_send(up_exchange_t *ex)
{
    if (ex->ops != NULL)
        return ex->ops->post(ex) < 0 ? -1 : 0;
    up_conn_t *conn = ex->conn;
    mark_posted(ex);
    return up_conn_lent_send(conn);
}

int up_response_post(up_exchange_t *ex)
{
    if (ex->ops != NULL)
        return ex->ops->post(ex);
    up_conn_t *conn = ex->conn;
    mark_posted(ex);
    return up_conn_lent_post(conn);
}

int up_response_hijack(up_exchange_t *ex)
{
    if (ex->ops != NULL)
        return -1; /* a stream has no socket of its own */
    up_conn_t *conn = ex->conn;
    mark_posted(ex);
    return up_conn_lent_hijack(conn);
}

void up_response_send_simple(up_exchange_t *ex, int status, const char *body, int close)
{
    up_conn_t *conn = ex->conn;
    size_t body_len = strlen(body);
    if (close)
        ex->res->keep_alive = 0;
    up_response_start(ex, status);
    if (ex->ops != NULL)
        up_response_add_header(ex, "content-type", 12, "text/plain; charset=utf-8", 25);
    else
        OUT_LIT(conn, "content-type: text/plain; charset=utf-8\r\n");
    up_response_end_head(ex, (int64_t)body_len + 1);
    up_response_write(ex, body, body_len);
    up_response_write(ex, "\n", 1);
    up_response_finish(ex);
}

void up_response_send_continue(up_exchange_t *ex)
{
    up_conn_t *conn = ex->conn;
    OUT_LIT(conn, "HTTP/1.1 100 Continue\r\n\r\n");
}

void up_exchange_return(up_exchange_t *ex)
{
    if (ex->ops != NULL)
        ex->ops->give_back(ex);
    else
        up_conn_lent_return(ex->conn);
}

void up_exchange_return_here(up_exchange_t *ex)
{
    if (ex->ops != NULL && ex->ops->give_back_here != NULL)
        ex->ops->give_back_here(ex); /* the caller takes the loop's mail next, which writes it */
    else if (ex->ops != NULL)
        ex->ops->give_back(ex);
    else
        up_conn_lent_return_here(ex->conn);
}

uint64_t up_exchange_backlog(const up_exchange_t *ex)
{
    return ex->ops != NULL ? ex->ops->backlog(ex) : up_conn_any_backlog(ex->conn);
}

int up_exchange_wait_backlog(up_exchange_t *ex, uint64_t max_bytes, const atomic_int *cancel)
{
    if (ex->ops != NULL)
        return ex->ops->wait_backlog(ex, max_bytes, cancel);
    return up_conn_any_wait_backlog(ex->conn, max_bytes, cancel);
}

void up_exchange_cancel_waits(up_exchange_t *ex)
{
    if (ex->ops != NULL)
        ex->ops->cancel_waits(ex);
    else
        up_conn_any_cancel_waits(ex->conn);
}
