#ifndef UP_RESPONSE_H
#define UP_RESPONSE_H

/* The response writer: turns status, header fields and body parts into HTTP/1.1 bytes queued
 * on the connection. It owns framing (RFC 9112 §6): content-length when known, chunked when
 * not, close-delimited for HTTP/1.0, nothing for HEAD, 1xx, 204 and 304. It checks every field
 * it is given, so no app can split a response, and it never writes more than a declared
 * content-length.
 *
 * Call order: start, add_header*, end_head, (write | write_shared | sendfile | sendfile_ref)*,
 * finish. A 1xx status (103 Early Hints) ends at end_head and a final response may start after
 * it.
 *
 * Everything is queued on the exchange's connection (its _staged queue) by the thread that has
 * the exchange; up_response_send hands it to the loop to be written (otherwise it goes when
 * the exchange is returned). */

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "core/conn.h"
#include "core/exchange.h"
#include "core/outq.h"

typedef enum up_framing_t {
    UP_FRAMING_NONE,    /* no body may be sent: HEAD, 1xx, 204, 304 */
    UP_FRAMING_LENGTH,  /* content-length */
    UP_FRAMING_CHUNKED, /* transfer-encoding: chunked */
    UP_FRAMING_CLOSE,   /* HTTP/1.0 without a length: the close ends the body */
    UP_FRAMING_RAW      /* the app set transfer-encoding itself: bytes go out as given */
} up_framing_t;

/* What the response writer (response.c) knows about the response being written. */
typedef struct up_response_state_t {
    int status;
    up_framing_t framing;
    int64_t content_length;   /* the app's content-length field, -1 when none */
    uint64_t body_left;       /* bytes still allowed under UP_FRAMING_LENGTH */
    uint64_t body_bytes;      /* body bytes queued so far (an access log's "bytes") */
    up_outq_mark_t start;     /* conn->_staged when this response began: the rollback point */
    unsigned started : 1;
    unsigned head_done : 1;
    unsigned finished : 1;
    unsigned posted : 1;      /* some of it left the staging queue: it can no longer be undone */
    unsigned head_only : 1;   /* HEAD request: head sent, body dropped */
    unsigned no_body : 1;     /* status forbids a body (1xx, 204, 304) */
    unsigned keep_alive : 1;  /* the connection may carry another request afterwards */
    unsigned has_date : 1;
    unsigned has_transfer_encoding : 1;
} up_response_state_t;

typedef enum up_response_error_t {
    UP_RESPONSE_OK = 0,
    UP_RESPONSE_E_BAD_STATUS,        /* not 100..999 */
    UP_RESPONSE_E_BAD_HEADER_NAME,   /* empty, or not a token */
    UP_RESPONSE_E_BAD_HEADER_VALUE,  /* CR, LF or NUL */
    UP_RESPONSE_E_BAD_CONTENT_LENGTH,/* not digits, or two different ones */
    UP_RESPONSE_E_STATE,             /* called out of order */
    UP_RESPONSE_E_CLIENT_GONE        /* the connection broke; stop producing the body */
} up_response_error_t;

up_response_error_t up_response_start(up_exchange_t *ex, int status);
/* Names are written in lower case. Fields the writer owns are handled, not copied: date (kept,
 * and then no Date of ours), connection (its close is honoured, our own field is written),
 * content-length (checked, then used for framing), transfer-encoding (the app frames the body
 * itself). Fields a status forbids (content-length on 204...) are dropped. */
up_response_error_t up_response_add_header(up_exchange_t *ex, const char *name, size_t name_len,
                                           const char *value, size_t value_len);
/* body_length: the body's size when the binding knows it (an Array body, a file), else -1, or
 * UP_RESPONSE_OPEN_STREAM for a body that is a stream another protocol writes after the head
 * (an event stream): no length, no chunks, the connection's end ends it. */
#define UP_RESPONSE_OPEN_STREAM (-2)
up_response_error_t up_response_end_head(up_exchange_t *ex, int64_t body_length);
up_response_error_t up_response_write(up_exchange_t *ex, const char *data, size_t len);
/* A body part the writer references instead of copying (a large String, a shared frame). */
up_response_error_t up_response_write_shared(up_exchange_t *ex, up_shared_t *shared, size_t offset,
                                             size_t len);
/* Queues len bytes of fd from offset; the writer owns fd from now on and closes it. */
up_response_error_t up_response_sendfile(up_exchange_t *ex, int fd, off_t offset, uint64_t len);
/* The same for an fd that owner keeps open (a cached file): a reference to owner is held until
 * the bytes are written, and fd is never closed by the writer. */
up_response_error_t up_response_sendfile_ref(up_exchange_t *ex, up_shared_t *owner, int fd,
                                             off_t offset, uint64_t len);
/* Ends the body (last chunk); a body shorter than its content-length closes the connection. */
up_response_error_t up_response_finish(up_exchange_t *ex);

/* Drops whatever this response queued, if none of it has been handed to the loop yet (returns
 * 1), so an error found mid-way can still become a clean 500. Returns 0 when bytes may already
 * be on the wire: the connection is then marked to close after what is queued. */
int up_response_rollback(up_exchange_t *ex);

/* Hands what is staged to the loop now (a streamed part, early hints): see up_conn_lent_send.
 * Returns 0, or -1 when the client is gone. */
int up_response_send(up_exchange_t *ex);

/* The same without waking the loop (see up_conn_lent_post): returns 1 when the caller must wake
 * it unless it runs a turn itself, 0 when not, -1 when the client is gone. */
int up_response_post(up_exchange_t *ex);

/* The same, asking for the connection's socket too (up_conn_lent_hijack): the head staged for a
 * partial hijack or a 101 goes out first and can no longer be rolled back. Returns what
 * up_conn_lent_hijack does. */
int up_response_hijack(up_exchange_t *ex);

/* A whole small response with a text/plain body: the engine's 4xx and the binding's 500. */
void up_response_send_simple(up_exchange_t *ex, int status, const char *body, int close);

/* "HTTP/1.1 100 Continue\r\n\r\n", queued ahead of reading a body the client holds back. */
void up_response_send_continue(up_exchange_t *ex);

/* The reason phrase for a status, "" when none is registered. */
const char *up_status_reason(int status);

/* Starts the writer's state for the exchange's request. */
void up_response_reset(up_exchange_t *ex);

/* The borrower gives the exchange back (exchange.h: LENT to DONE), through the mail
 * (up_conn_lent_return), or at once by a borrower that runs the loop now
 * (up_conn_lent_return_here). */
void up_exchange_return(up_exchange_t *ex);
void up_exchange_return_here(up_exchange_t *ex);

/* Back-pressure on the exchange's producer (conn.h's, for one exchange): the bytes it handed
 * over and not yet written (HTTP/1: its connection's backlog; an HTTP/2 stream: its body not
 * yet framed, 0 once the stream is gone), a wait until they are at most max_bytes (returns -1
 * when the client is gone), and the wake-up of such waits. Any thread; the wait blocks. */
uint64_t up_exchange_backlog(const up_exchange_t *ex);
int up_exchange_wait_backlog(up_exchange_t *ex, uint64_t max_bytes, const atomic_int *cancel);
void up_exchange_cancel_waits(up_exchange_t *ex);

/* A protocol that multiplexes exchanges on a connection (HTTP/2) frames responses its own way:
 * every call above, given one of its exchanges (ex->ops set), goes to these, with the same
 * contract, except that nothing is staged on the connection: the protocol keeps each
 * exchange's output and the loop frames it. */
struct up_exchange_ops_t {
    up_response_error_t (*start)(up_exchange_t *ex, int status);
    up_response_error_t (*add_header)(up_exchange_t *ex, const char *name, size_t name_len,
                                      const char *value, size_t value_len);
    up_response_error_t (*end_head)(up_exchange_t *ex, int64_t body_length);
    up_response_error_t (*write)(up_exchange_t *ex, const char *data, size_t len);
    up_response_error_t (*write_shared)(up_exchange_t *ex, up_shared_t *shared, size_t offset,
                                        size_t len);
    up_response_error_t (*sendfile_ref)(up_exchange_t *ex, up_shared_t *owner, int fd,
                                        off_t offset, uint64_t len);
    up_response_error_t (*sendfile)(up_exchange_t *ex, int fd, off_t offset, uint64_t len);
    up_response_error_t (*finish)(up_exchange_t *ex);
    int (*rollback)(up_exchange_t *ex);
    /* up_response_send and up_response_post: hands what was written to the loop. */
    int (*post)(up_exchange_t *ex);
    void (*give_back)(up_exchange_t *ex);
    /* give_back from the thread running the loop, which takes the loop's mail next
     * (up_exchange_return_here): it owes the loop no wake-up. NULL: give_back. */
    void (*give_back_here)(up_exchange_t *ex);
    uint64_t (*backlog)(const up_exchange_t *ex);
    int (*wait_backlog)(up_exchange_t *ex, uint64_t max_bytes, const atomic_int *cancel);
    void (*cancel_waits)(up_exchange_t *ex);
};

#endif
