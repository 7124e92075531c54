#ifndef UP_EXCHANGE_H
#define UP_EXCHANGE_H

/* One exchange: a request and its response, on a connection. A protocol creates its exchanges
 * and lends each to the binding (up_server_handler_t's on_request), which answers it with the
 * response writer (http1/response.h) and gives it back; the binding is handed exchanges, not
 * connections (for what is the connection's, a hijack or back-pressure, it follows ex->conn).
 * HTTP/1 has one exchange per connection at a time, embedded in its per-connection state (no
 * allocation per request); a protocol that multiplexes (HTTP/2) has several at once on one
 * connection, each with its stream's state.
 *
 * ---- Lifecycle ------------------------------------------------------------------------------
 *
 *   first byte of a head ──▶ ARRIVING (head, then body: the protocol reads them)
 *                                │ complete
 *                                ▼
 *                            HANDLED ── a handler of the chain answers (a static file) ──┐
 *                                │ none does: the app's turn                              │
 *                                ▼                                                        │
 *                              LENT ── the binding returns it (up_conn_lent_return) ──▶ DONE
 *
 * ARRIVING and HANDLED are the loop thread's; LENT is the borrower's alone (it writes the
 * response and may pass the exchange to another thread); DONE is the protocol's again, which
 * then ends the exchange: HTTP/1 keeps the same object for the connection's next request (req
 * and res NULL once the connection is idle), or lets go of it when the connection switches
 * protocol (a 101, an event stream) or closes. A connection closed while its exchange is lent
 * (LENT_BROKEN, conn.h) leaves the exchange with its borrower until returned: the writer's
 * calls report the client gone. req and res are the protocol's types, named here only: the
 * request's head and body (http1/request.h) and the response writer's state
 * (http1/response.h). */

typedef struct up_conn_t up_conn_t;
typedef struct up_request_t up_request_t;
typedef struct up_response_state_t up_response_state_t;
typedef struct up_exchange_ops_t up_exchange_ops_t;

typedef struct up_exchange_t {
    up_conn_t *conn;          /* the connection it came on; outlives the exchange */
    up_request_t *req;        /* the request, whole head and body */
    up_response_state_t *res; /* the response being written */
    void *stream;             /* the protocol's state for this exchange */
    void *user;               /* the binding's, untouched by the engine */
    /* NULL for HTTP/1, whose writer is http1/response.c; a multiplexing protocol's own writer
     * and return otherwise (http1/response.h says what each does). */
    const up_exchange_ops_t *ops;
} up_exchange_t;

#endif
