#ifndef UP_ENGINE_HARNESS_H
#define UP_ENGINE_HARNESS_H

/* A server on a loop with clients over socketpairs, for the engine's C tests (conn_test.c,
 * response_test.c). No Ruby and no listening socket: each client is one end of a
 * socketpair(AF_UNIX, SOCK_STREAM) whose other end the server takes with up_conn_loop_accept, as
 * if accepted. The test thread runs the loop (it is the loop's owner) and plays the client
 * between two turns, so every wait here is a loop of "read what came, run one turn" with a
 * deadline: a bug makes a check fail instead of hanging the run. harness_watchdog is the last
 * resort for a hang outside those loops (a thread that never returns). */

#include <stddef.h>
#include <stdint.h>
#include "core/conn.h"
/* The same tests run on either backend (Makefile: LOOP=uv builds them on libuv). */
#ifdef UP_LOOP_UV
#include "loop_uv.h"
#else
#include "loop/loop_epoll.h"
#endif
#include "http1/http1.h"
#include "http1/response.h"
#include "server/server.h"

/* How long a wait may take before its check fails: generous, as ASan is slow. */
#define HARNESS_TIMEOUT_MS 5000

typedef struct harness_t {
    up_loop_t *loop;
    up_context_t *server;
} harness_t;

/* Kills the process with a message after seconds (alarm), whatever it is doing. */
void harness_watchdog(unsigned seconds);

/* A loop and a server with handler; cfg NULL means the defaults. The calling thread owns the
 * loop. SIGPIPE is ignored, as both runtimes (Ruby, Node) ignore it. */
void harness_start(harness_t *h, const up_server_config_t *cfg, const up_server_handler_t *handler);
/* up_server_free, then up_loop_free (which runs the close callbacks the free deferred). */
void harness_stop(harness_t *h);
/* One loop iteration: wait at most timeout_ms for events, then dispatch them. */
void harness_turn(harness_t *h, int timeout_ms);
/* Turns the loop until cond(arg) holds; returns 1, or 0 when timeout_ms passed first. */
int harness_wait(harness_t *h, int (*cond)(void *arg), void *arg, int timeout_ms);
/* Milliseconds on a monotonic clock. */
uint64_t harness_now_ms(void);

/* ---- clients ------------------------------------------------------------------------- */

typedef struct client_t {
    int fd;          /* the client's end, non-blocking */
    struct ssl_st *ssl;         /* a TLS client's connection (tls_harness.h), else NULL */
    struct ssl_ctx_st *ssl_ctx;
    up_conn_t *conn; /* the server's connection; only valid until the server closes it */
    char *in;        /* every byte read so far */
    size_t len, cap; /* bytes in `in`, and room */
    size_t pos;      /* bytes of in consumed by client_read_response */
    int eof;         /* the server closed or shut down its sending side */
} client_t;

/* Connects a new client. early (may be NULL) is written before the server takes its end, as a
 * listener with TCP_DEFER_ACCEPT would hand it over; server_sndbuf > 0 shrinks the server
 * end's send buffer so that its writes fill up fast. */
void client_open(harness_t *h, client_t *c, const char *early, int server_sndbuf);
/* The same for a connection that starts with protocol (client_open: HTTP/1.1). */
void client_open_with(harness_t *h, client_t *c, const char *early, int server_sndbuf,
                      const up_protocol_t *protocol);
/* Closes the client's end (if still open) and frees what it read. */
void client_close(client_t *c);
/* Closes the client's end only: the server sees the client leave. */
void client_hang_up(client_t *c);
/* Ends the client's sending side (shutdown SHUT_WR): the server reads the end of stream and
 * the client can still read. */
void client_shut_write(client_t *c);
/* Writes all of data, running the loop while the socket is full. Returns 0, or -1 on error or
 * when the deadline passed. */
int client_send(harness_t *h, client_t *c, const void *data, size_t len);
int client_send_str(harness_t *h, client_t *c, const char *s);
/* Reads at most max bytes of what is there now (never blocks). Returns the bytes read. */
size_t client_read_some(client_t *c, size_t max);
/* Reads what is there (at most max_read bytes), then runs one loop turn. */
void client_pump(harness_t *h, client_t *c, size_t max_read);
/* Pumps until the server's end closed; returns 1, or 0 on timeout. */
int client_wait_eof(harness_t *h, client_t *c, int timeout_ms);
/* Pumps until at least n unconsumed bytes are in; returns 1, or 0 on timeout. */
int client_wait_bytes(harness_t *h, client_t *c, size_t n, int timeout_ms);
/* Pumps, reading at most max_read bytes a turn (a slow reader), until done(c, arg) holds.
 * Returns 1, or 0 on timeout. */
int client_wait(harness_t *h, client_t *c, size_t max_read, int (*done)(client_t *c, void *arg),
                void *arg, int timeout_ms);

/* One response as the client saw it. */
typedef struct response_t {
    int status;
    char *raw; /* its bytes as received minus the Date line, NUL-terminated */
    size_t raw_len;
    char *body; /* the body with chunked framing removed, NUL-terminated */
    size_t body_len;
    int has_date;
    int chunked;
    int64_t content_length; /* -1 when absent */
    int close;              /* it carried "connection: close" */
} response_t;

/* Parses one response from buf; eof says no more bytes will come (a close-delimited body ends
 * there). head_only: it answers a HEAD request. Returns the bytes it took, 0 when incomplete,
 * -1 when malformed. */
long response_parse(const char *buf, size_t len, int eof, int head_only, response_t *res);
/* Pumps until the next response after those already taken is complete, and takes it.
 * Returns 1, or 0 on timeout, malformed bytes or an end of stream before it completed. */
int client_read_response(harness_t *h, client_t *c, response_t *res, int head_only, int timeout_ms);
void response_free(response_t *res);

/* A temporary file, already unlinked, holding len bytes of data. Returns its fd. */
int harness_temp_file(const char *data, size_t len);
/* Fills buf with a pattern whose every byte depends on its position from start, so a byte
 * lost, repeated or reordered shows. */
void harness_pattern(char *buf, size_t len, uint64_t start);
/* Removes dir and everything under it, symlinks as links (never followed), in this process:
 * no shell, as a fork inside node under TSan's preloaded runtime crashes the child. Returns 0,
 * or -1 with a message on stderr naming what stayed. */
int harness_remove_tree(const char *dir);

#endif
