#ifndef UP_CONN_H
#define UP_CONN_H

/* One client connection: reads and parses requests, reads their bodies, hands each complete
 * request to the binding, and writes what the binding queued (responses to pipelined requests
 * go out together in one write). Fields starting with '_' belong to the engine. */

#include <netinet/in.h>
#include <stdint.h>
#include <sys/types.h>
#include "chunked.h"
#include "http1_parser.h"
#include "loop.h"
#include "request_body.h"
#include "server.h"
#include "timer.h"

typedef enum up_conn_state_t {
    UP_CONN_IDLE,   /* between requests, nothing received: keep-alive timer */
    UP_CONN_HEAD,   /* part of a head received: head timer (408) */
    UP_CONN_BODY,   /* head done, reading the body: body timer (408) */
    UP_CONN_APP,    /* the binding has the request */
    UP_CONN_CLOSING /* no more requests: write what is queued, then close */
} up_conn_state_t;

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
    int64_t content_length; /* the app's content-length field, -1 when none */
    uint64_t body_left;     /* bytes still allowed under UP_FRAMING_LENGTH */
    uint64_t start_total;   /* conn->_out_total when this response began: the rollback point */
    unsigned started : 1;
    unsigned head_done : 1;
    unsigned finished : 1;
    unsigned head_only : 1;   /* HEAD request: head sent, body dropped */
    unsigned no_body : 1;     /* status forbids a body (1xx, 204, 304) */
    unsigned keep_alive : 1;  /* the connection may carry another request afterwards */
    unsigned has_date : 1;
    unsigned has_transfer_encoding : 1;
} up_response_state_t;

typedef struct up_request_t {
    up_http1_request_t head;
    up_request_body_t body;
} up_request_t;

struct up_conn_t {
    up_watcher_t _watcher; /* first: the loop hands it back to conn_on_event */
    up_server_t *server;
    const up_listener_t *listener;
    void *user; /* the binding's, untouched by the engine */
    char remote_addr[INET6_ADDRSTRLEN];
    up_request_t req;        /* valid while the binding has the request */
    up_response_state_t res; /* response.c's */
    int broken;              /* a write failed or timed out: the client is gone */

    up_conn_state_t _state;
    up_timer_t _timer;
    up_buffer_t _rbuf;   /* bytes read; requests are parsed in place */
    size_t _rpos;        /* where the current request starts in _rbuf */
    size_t _last_len;    /* what the parser saw last time, so it does not rescan */
    size_t _body_pos;    /* where the unread body bytes start in _rbuf */
    uint64_t _body_left; /* Content-Length bytes still to read */
    up_chunked_decoder_t _chunked;
    up_buffer_t _headers; /* room for config.max_headers parsed fields */
    up_buffer_t _wbuf;    /* bytes to write, from the first unwritten one */
    uint64_t _out_total;  /* bytes ever queued... */
    uint64_t _sent_total; /* ...and written, to tell whether a response has begun on the wire */
    int _file_fd;         /* a to_path body to sendfile after _wbuf, or -1 */
    off_t _file_off;
    uint64_t _file_left;
    unsigned _queued;     /* responses queued since the last complete write */
    size_t _req_end;      /* where the dispatched request's bytes end in _rbuf */
    const char *_head_at; /* where the head was when parsed: if _rbuf moved, parse again */
    int _timer_kind;      /* which server timer list _timer is in */
    unsigned _eof : 1;            /* the client finished sending */
    unsigned _closing_output : 1; /* shutdown(SHUT_WR) done: draining input before close */
    unsigned _force_close : 1;    /* close as soon as the binding hands it back */
    up_conn_t *_prev, *_next;     /* server->conns */
    up_conn_t *_resume_next;      /* server->resume_head */
};

/* Takes a freshly accepted, non-blocking socket. */
void up_conn_accept(up_server_t *server, const up_listener_t *listener, int fd,
                    const struct sockaddr *addr);
/* Closes at once, whatever is queued. */
void up_conn_close(up_conn_t *conn);
/* Called on the loop thread for a connection a binding thread handed back. */
void up_conn_on_resume(up_conn_t *conn);
/* The loop's timer check: the timer expired in state conn->_state. */
void up_conn_on_timeout(up_conn_t *conn);
/* Graceful stop: close when idle, else after the current response. */
void up_conn_stop(up_conn_t *conn);

/* Writes out everything queued, waiting (poll) while the socket is full, at most the write
 * timeout. For the binding while it owns the request (a long streamed body, or before running
 * rack.response_finished); it blocks, so a binding calls it without its interpreter lock.
 * Returns 0, or -1 when the client is gone (conn->broken is then set). */
int up_conn_flush_wait(up_conn_t *conn);
/* Bytes queued but not yet written. */
size_t up_conn_pending(const up_conn_t *conn);
/* Past this many queued bytes a binding writing a long body should call up_conn_flush_wait. */
#define UP_OUTPUT_HIGH_WATER (256 * 1024)

/* For the response writer: room for n more output bytes, then how many were used. */
char *up_conn_out_reserve(up_conn_t *conn, size_t n);
void up_conn_out_commit(up_conn_t *conn, size_t n);
/* For the response writer, with a large body part: writes what is queued and as much of
 * data[0..len) as the socket takes now, without waiting, and returns how much of data went
 * out (counted as queued and sent); the caller queues the rest. Only from the thread that owns
 * the request, and only when no file is queued. */
size_t up_conn_out_write_through(up_conn_t *conn, const char *data, size_t len);
/* Body parts at least this large are worth a write of their own rather than a copy. */
#define UP_WRITE_THROUGH_MIN (32 * 1024)

#endif
