#ifndef WSL_FRAME_H
#define WSL_FRAME_H

/* WebSocket framing for a client (RFC 6455 §5): the headers of the masked frames a client
 * sends, and a resumable reader of the frames a server sends. Pure functions over caller
 * buffers: no allocation, no I/O, any thread (a reader belongs to one connection). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* RFC 6455 §5.2 opcodes. */
enum {
    WSL_OP_CONTINUATION = 0x0,
    WSL_OP_TEXT = 0x1,
    WSL_OP_BINARY = 0x2,
    WSL_OP_CLOSE = 0x8,
    WSL_OP_PING = 0x9,
    WSL_OP_PONG = 0xa,
};

/* The longest frame header: 2 bytes, 8 of extended length, 4 of mask (§5.2). */
#define WSL_FRAME_HEADER_MAX 14
/* §5.5: control frames carry at most 125 bytes. */
#define WSL_CONTROL_MAX 125

/* Writes the header of a masked client frame (FIN set unless fin is false) into out and
 * returns its length (6, 8 or 14). The payload must follow, masked with wsl_frame_mask. */
size_t wsl_frame_header(uint8_t out[WSL_FRAME_HEADER_MAX], uint8_t opcode, bool fin, uint64_t len,
                        const uint8_t mask[4]);

/* XORs len bytes with the mask (§5.3), as if they started offset bytes into the payload, so a
 * payload can be masked in pieces. */
void wsl_frame_mask(uint8_t *data, size_t len, const uint8_t mask[4], uint64_t offset);

typedef enum {
    WSL_FRAME_NEED_MORE, /* every byte given was consumed; call again with more */
    WSL_FRAME_HEADER,    /* a frame header: opcode, fin, length */
    WSL_FRAME_DATA,      /* data, len bytes of the current frame's payload */
    WSL_FRAME_END,       /* the current frame's payload is complete */
    WSL_FRAME_ERROR,     /* the stream is broken: error says how; the reader is stuck */
} wsl_frame_kind_t;

/* Why a server's frames were refused; each is a protocol error of RFC 6455 (§5.1, §5.2, §5.4,
 * §5.5) or a limit of this client. */
typedef enum {
    WSL_FRAME_OK = 0,
    WSL_FRAME_ERR_RSV,              /* RSV1-3 set: no extension was negotiated (§5.2) */
    WSL_FRAME_ERR_OPCODE,           /* a reserved opcode (§5.2) */
    WSL_FRAME_ERR_MASKED,           /* a server frame with the mask bit (§5.1) */
    WSL_FRAME_ERR_CONTROL_LENGTH,   /* a control frame over 125 bytes (§5.5) */
    WSL_FRAME_ERR_CONTROL_FRAGMENT, /* a control frame without FIN (§5.5) */
    WSL_FRAME_ERR_LENGTH,           /* a length not in its shortest form, or with the top bit */
    WSL_FRAME_ERR_TOO_BIG,          /* a message over the reader's max_message */
    WSL_FRAME_ERR_CONTINUATION,     /* a continuation frame with no message to continue (§5.4) */
    WSL_FRAME_ERR_INTERLEAVED,      /* a new data frame inside a fragmented message (§5.4) */
} wsl_frame_error_t;

typedef struct {
    wsl_frame_kind_t kind;
    uint8_t opcode;          /* HEADER, DATA, END: the frame's own opcode */
    bool fin;                /* HEADER, DATA, END: the frame ends its message */
    uint64_t length;         /* HEADER: the frame's payload length */
    const uint8_t *data;     /* DATA: points into the caller's buffer */
    size_t len;              /* DATA */
    wsl_frame_error_t error; /* ERROR */
} wsl_frame_event_t;

/* Fields are the reader's own: set it up with wsl_frame_reader_init. */
typedef struct {
    uint64_t _max_message;
    uint64_t _message_len; /* data bytes of the fragmented message so far */
    uint64_t _left;        /* payload bytes of the current frame still to come */
    uint8_t _header[WSL_FRAME_HEADER_MAX];
    uint8_t _have; /* header bytes collected */
    uint8_t _opcode;
    bool _fin;
    bool _in_payload;
    bool _in_message; /* a text or binary message without its final frame yet */
    bool _broken;
    uint8_t _error; /* a wsl_frame_error_t once broken */
} wsl_frame_reader_t;

/* Prepares a reader that refuses messages over max_message bytes. */
void wsl_frame_reader_init(wsl_frame_reader_t *r, uint64_t max_message);

/* Reads at most len bytes from buf and reports the next event in ev; returns the bytes it
 * consumed. Call it again with the rest until it reports NEED_MORE (all consumed) or ERROR.
 * A frame with an empty payload gives HEADER then END; a header split across calls is kept
 * in the reader, so any split of the stream gives the same events (DATA may come in more
 * pieces). */
size_t wsl_frame_read(wsl_frame_reader_t *r, const uint8_t *buf, size_t len, wsl_frame_event_t *ev);

/* A short name for an error, for reports ("masked frame"). */
const char *wsl_frame_error_name(wsl_frame_error_t error);

#endif
