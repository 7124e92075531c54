#ifndef WSL_CONN_H
#define WSL_CONN_H

/* The connections of one run and the epoll loop that drives them: non-blocking connects, paced
 * so that at most WSL_MAX_OPENING are in progress at once; the opening handshake
 * (handshake.h); masked frames out (frame.h), with what the socket does not take kept until it
 * is writable; server frames in, handed to the mode as data and whole messages; pings
 * answered with pongs and a server's close answered with a close (RFC 6455 §5.5). Every
 * function runs on the one thread of the run. */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frame.h"
#include "handshake.h"
#include "options.h"

/* Handshakes in progress at once: enough to open 10,000 connections in seconds, few enough
 * not to overflow a server's listen backlog. */
#define WSL_MAX_OPENING 256
/* Bytes read per recv: one read takes many small frames at once. */
#define WSL_READ_CHUNK 65536
/* A message's first bytes, where message.h puts its sequence number and timestamp. */
#define WSL_HEAD_MAX 48
/* Bytes a connection may hold unsent before it counts as stuck (a frame always fits). */
#define WSL_MAX_PENDING (4u * WSL_MAX_SIZE)

typedef enum {
    WSL_CONN_NEW,        /* not started */
    WSL_CONN_CONNECTING, /* connect() in progress */
    WSL_CONN_HANDSHAKE,  /* request sent, waiting for the 101 */
    WSL_CONN_OPEN,       /* frames both ways */
    WSL_CONN_CLOSED,     /* socket closed, for good */
} wsl_conn_state_t;

typedef enum {
    WSL_ERR_CONNECT,   /* connect() failed */
    WSL_ERR_HANDSHAKE, /* the server's answer was not a valid 101 */
    WSL_ERR_CLOSED,    /* the server closed a connection before the run ended */
    WSL_ERR_PROTOCOL,  /* a frame that breaks RFC 6455 */
    WSL_ERR_MISMATCH,  /* a message that is not what was sent */
    WSL_ERR_TIMEOUT,   /* something did not happen in time */
    WSL_ERR_COUNT
} wsl_error_t;

typedef struct wsl_conn {
    int fd;
    wsl_conn_state_t state;
    const char *path;
    wsl_frame_reader_t _reader;
    char *_head; /* the response head so far, while in WSL_CONN_HANDSHAKE */
    size_t _head_len;
    char _accept[WSL_ACCEPT_LEN];
    uint8_t *_out; /* bytes the socket did not take yet */
    size_t _out_len;
    size_t _out_cap;
    uint8_t _opcode;   /* of the message being read */
    uint64_t _msg_len; /* its data bytes so far */
    uint8_t _control[WSL_CONTROL_MAX];
    size_t _control_len;

    /* The mode's, read and written by it alone. */
    uint8_t head[WSL_HEAD_MAX]; /* the first bytes of the message being read */
    uint64_t seq;               /* echo: the message in flight; broadcast: the next expected */
    uint64_t sent_ns;           /* echo: when it was sent */
    uint64_t early;             /* broadcast: messages seen ahead of seq, one bit each */
    bool bad;                   /* the message being read differs from the one expected */
    bool ready;                 /* broadcast: subscribed (a probe arrived); echo: waiting */
} wsl_conn_t;

typedef struct wsl_run wsl_run_t;

/* What a mode does with the connections' events; any may be NULL. on_data gets a message's
 * data in order, offset counting from its start; on_message gets its end, with its opcode
 * (text or binary) and length. on_close: the connection closed (run->ending tells whether
 * the mode expected it). A callback may send on any connection or close any, its own too. */
typedef struct {
    void (*on_open)(wsl_run_t *run, wsl_conn_t *c);
    void (*on_data)(wsl_run_t *run, wsl_conn_t *c, uint64_t offset, const uint8_t *data,
                    size_t len);
    void (*on_message)(wsl_run_t *run, wsl_conn_t *c, uint8_t opcode, uint64_t len);
    void (*on_close)(wsl_run_t *run, wsl_conn_t *c);
} wsl_mode_ops_t;

struct wsl_run {
    const wsl_options_t *opt;
    const wsl_mode_ops_t *ops;
    void *mode; /* the mode's state, for its callbacks */
    wsl_conn_t *conns;
    unsigned count;
    unsigned opened;  /* connections that reached WSL_CONN_OPEN */
    unsigned open;    /* connections in WSL_CONN_OPEN now */
    unsigned failed;  /* connections that closed before opening */
    uint64_t now;     /* CLOCK_MONOTONIC ns, taken after each read */
    bool ending;      /* the mode is done: closes from now on are expected */
    uint64_t started; /* wsl_now() when the run was set up */
    uint64_t errors[WSL_ERR_COUNT];
    char first_error[160];
    int _epoll;
    unsigned _next;    /* the next connection to start */
    unsigned _opening; /* connections in CONNECTING or HANDSHAKE */
    uint64_t _rng;
    uint8_t *_read_buf;
    uint8_t *_send_buf;
};

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t wsl_now(void);

/* Prepares a run of count connections (none started; paths set by the caller) and returns 0,
 * or -1 with errno set when memory or epoll cannot be had. */
int wsl_run_init(wsl_run_t *run, const wsl_options_t *opt, const wsl_mode_ops_t *ops, void *mode,
                 unsigned count);

/* Closes every connection and frees what wsl_run_init took. */
void wsl_run_free(wsl_run_t *run);

/* Starts the connections and drives the loop until each is open or has failed, or until
 * deadline (wsl_now() time; those still opening are then closed as timeouts). Returns how
 * many are open. */
unsigned wsl_run_open_all(wsl_run_t *run, uint64_t deadline);

/* Waits for events until deadline at most and handles them (each with the mode's callbacks).
 * Returns 0, or -1 when epoll failed (counted as an error; the run should end). */
int wsl_run_poll(wsl_run_t *run, uint64_t deadline);

/* Sends one message in one frame with a fresh mask: true when sent or queued, false when the
 * connection is not open (or closes here because the socket failed). */
bool wsl_conn_send(wsl_run_t *run, wsl_conn_t *c, uint8_t opcode, const uint8_t *data, size_t len);

/* Closes the connection: a close frame (1000) first when it is open and close_frame is set.
 * Calls the mode's on_close. Safe on a closed connection. */
void wsl_conn_close(wsl_run_t *run, wsl_conn_t *c, bool close_frame);

/* Counts an error of kind and keeps the first message (printf format) for the report. */
void wsl_run_error(wsl_run_t *run, wsl_error_t kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The names of the error kinds as the JSON report spells them. */
const char *wsl_error_name(wsl_error_t kind);

#endif
