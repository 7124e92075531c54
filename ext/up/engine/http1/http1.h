#ifndef UP_HTTP1_H
#define UP_HTTP1_H

/* The HTTP/1.1 protocol of a connection (RFC 9112): reads and parses requests, reads their
 * bodies, hands each complete request to the binding, and lets the response writer
 * (response.h) queue the answers, responses to pipelined requests going out in one write. It
 * stops parsing while max_pipeline responses wait to be written, so a client that pipelines
 * without reading cannot make the server buffer without bound. */

#include <stdint.h>
#include "core/conn.h"
#include "core/exchange.h"
#include "core/protocol.h"
#include "http1/chunked.h"
#include "http1/http1_parser.h"
#include "http1/request.h"
#include "http1/response.h"

typedef enum up_http1_state_t {
    UP_HTTP1_IDLE,   /* between requests, nothing received: keep-alive timer */
    UP_HTTP1_HEAD,   /* part of a head received: head timer (408) */
    UP_HTTP1_BODY,   /* head done, reading the body: body timer (408) */
    UP_HTTP1_APP,    /* the binding has the request */
    UP_HTTP1_CLOSING /* no more requests: write what is queued, then close */
} up_http1_state_t;

/* The state of one request and its response while under way (the exchange's stream). It lives
 * in a chunk of the server's buffer pool that the connection takes at the first byte of a
 * request head and gives back once idle again, so that an idle keep-alive connection holds no
 * memory for it (10,000 of them must fit in a few MB). The parsed header fields follow it in
 * the same chunk. */
typedef struct up_http1_stream_t {
    up_request_t req;
    up_response_state_t res;
    up_chunked_decoder_t chunked;
    size_t last_len;     /* what the parser saw last time, so it does not rescan */
    size_t body_pos;     /* where the unread body bytes start in _rbuf */
    size_t req_end;      /* where the dispatched request's bytes end in _rbuf */
    uint64_t body_left;  /* Content-Length bytes still to read */
    const char *head_at; /* where the head was when parsed: if _rbuf moved, parse again */
    const up_protocol_t *next_protocol; /* up_http1_switch_protocol's, once the response ends */
    void *next_data;
    up_http1_header_t headers[]; /* config.max_headers of them */
} up_http1_stream_t;

/* The protocol's own bookkeeping, embedded in every connection (all start as HTTP/1). */
typedef struct up_http1_t {
    up_http1_state_t state;
    unsigned queued;       /* responses queued since the output last drained */
    int close_requested;   /* another thread asked for a close: no request after this one */
    up_buffer_t stream;    /* holds the up_http1_stream_t while a request is under way */
    /* The connection's one exchange (exchange.h): req and res point into stream while a
     * request is under way, NULL between requests. */
    up_exchange_t exchange;
} up_http1_t;

extern const up_protocol_t up_http1_protocol;

/* HTTP/1's timers (core/context.h): between requests (keepalive_timeout_ms), and a pause while
 * a body arrives (body_timeout_ms); a head runs on the engine's UP_TIMER_HEAD, which a
 * transport's handshake runs on too, so that a handshake and the first head count as one. */
#define UP_HTTP1_TIMER_KEEPALIVE ((up_timer_kind_t)(UP_TIMER_PROTOCOL + 0))
#define UP_HTTP1_TIMER_BODY ((up_timer_kind_t)(UP_TIMER_PROTOCOL + 1))
/* Sets the lists of HTTP/1's timers in a new server, from its config. */
void up_http1_init_timers(up_context_t *server);

/* Starts HTTP/1 on a new connection: waiting for a request, on the keep-alive timer. */
void up_http1_start(up_conn_t *conn);
/* From the thread that has the exchange: once this response is finished (a 101, or the head
 * of a hijacked or event stream), the exchange's connection speaks protocol instead, with data
 * as its protocol_data. The bytes the client sent after this request go to it; HTTP/1 lets go
 * of everything it held for the connection. */
void up_http1_switch_protocol(up_exchange_t *ex, const up_protocol_t *protocol, void *data);
/* From the thread that has the exchange: the bytes the client sent after this request and its
 * body (pipelined requests, or the first bytes of a protocol it switches to). They stay put
 * while the exchange is lent (a lent connection is not read), until it is returned. After a
 * hijack (conn.h) they are the new owner's: they came on its socket. */
up_slice_t up_http1_lent_unread(const up_exchange_t *ex);
/* Whether a request accepts an event stream (its Accept lists text/event-stream): what makes
 * it an event stream the app may take (UP_UPGRADE_SSE). */
int up_http1_accepts_events(const up_http1_request_t *head);

#endif
