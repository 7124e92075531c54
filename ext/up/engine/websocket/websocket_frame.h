#ifndef UP_WEBSOCKET_FRAME_H
#define UP_WEBSOCKET_FRAME_H

/* WebSocket framing (RFC 6455 §5): a resumable reader of the frames a client sends, and the
 * writer of the frames a server sends. Pure: no sockets, no allocation, no global state. A reader
 * belongs to one connection and is called by whichever thread reads that connection, one call at
 * a time; the writer functions are pure and may run on any thread.
 *
 * The reader never buffers data payload: it unmasks each run of payload in place, in the
 * caller's buffer, and hands it out at once, so a 16 MiB message costs no copy and a text
 * message can be checked (UTF-8) and refused while it is still arriving. Only what must be whole
 * to be used is kept inside the reader: a frame header split across reads (at most 8 bytes at a
 * time), and a control frame's payload (at most 125 bytes) when it is split.
 *
 * Every protocol error fails the connection with one close code, decided here: 1002 for a
 * malformed or out-of-order frame, 1009 for a message over the caller's limit. The reader is
 * strict: whatever RFC 6455 says a frame MUST (NOT) be is checked, minimal length encoding
 * included (§5.2). */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Opcodes (RFC 6455 §5.2, §11.8). */
#define UP_WS_OP_CONTINUATION 0x0
#define UP_WS_OP_TEXT 0x1
#define UP_WS_OP_BINARY 0x2
#define UP_WS_OP_CLOSE 0x8
#define UP_WS_OP_PING 0x9
#define UP_WS_OP_PONG 0xA

static inline int up_ws_op_is_control(int opcode)
{
    return (opcode & 0x8) != 0;
}

/* Close codes (RFC 6455 §7.4.1). 1005 and 1006 are never sent: they name, locally, a Close
 * without a code and a connection that ended without a Close. */
#define UP_WS_CLOSE_NORMAL 1000
#define UP_WS_CLOSE_GOING_AWAY 1001
#define UP_WS_CLOSE_PROTOCOL_ERROR 1002
#define UP_WS_CLOSE_UNSUPPORTED_DATA 1003
#define UP_WS_CLOSE_NO_STATUS 1005
#define UP_WS_CLOSE_ABNORMAL 1006
#define UP_WS_CLOSE_INVALID_PAYLOAD 1007
#define UP_WS_CLOSE_POLICY_VIOLATION 1008
#define UP_WS_CLOSE_MESSAGE_TOO_BIG 1009
#define UP_WS_CLOSE_MANDATORY_EXTENSION 1010
#define UP_WS_CLOSE_INTERNAL_ERROR 1011

/* Limits of the format. */
#define UP_WS_MAX_CONTROL_PAYLOAD 125 /* RFC 6455 §5.5 */
#define UP_WS_MAX_CLOSE_REASON (UP_WS_MAX_CONTROL_PAYLOAD - 2)
#define UP_WS_MAX_HEADER 14 /* 2 + 8 (64-bit length) + 4 (masking key) */

/* Returned by up_ws_read once the reader has failed. */
#define UP_WS_ERROR (-1)

/* Why a connection must be failed: the close code to send (1002, 1007, 1009, ...) and a short
 * static reason for the Close frame and the log. code 0 means no error. */
typedef struct up_ws_error_t {
    uint16_t code;
    const char *reason;
} up_ws_error_t;

/* What the reader is waiting for. */
typedef enum up_ws_read_state_t {
    UP_WS_READ_HEADER = 0, /* the first two bytes of a frame: FIN, RSV, opcode, MASK, length */
    UP_WS_READ_LENGTH,     /* the 16- or 64-bit extended payload length */
    UP_WS_READ_MASK,       /* the 4-byte masking key */
    UP_WS_READ_PAYLOAD,    /* data payload, handed out as it comes */
    UP_WS_READ_CONTROL,    /* control payload, kept until whole */
    UP_WS_READ_CLOSED,     /* a Close frame was read: nothing more is (RFC 6455 §5.5.1) */
    UP_WS_READ_FAILED      /* an error was reported; the reader stays here */
} up_ws_read_state_t;

/* The reader's events. Both run inside up_ws_read, on its thread, and may be NULL (the event is
 * then dropped). Return 0 to go on reading, non-zero to make up_ws_read return at once, after
 * the bytes of this event: the reader is then between two steps and the next call resumes
 * where it stopped. A callback that decides the connection must fail (bad UTF-8, a message
 * that inflates too big) calls up_ws_reader_fail and returns non-zero. */
typedef struct up_ws_reader_callbacks_t {
    /* A run of data payload of a message: opcode is the message's (UP_WS_OP_TEXT or
     * UP_WS_OP_BINARY, also for its continuation frames), compressed is RSV1 of its first frame
     * (permessage-deflate, RFC 7692 §6). data points into the caller's buffer, unmasked, valid
     * until the caller reuses that buffer. Every data frame gives at least one call, so a frame
     * with an empty payload gives one with len 0; message_fin is 1 on the last call of a message
     * and only there. */
    int (*on_data)(void *user, int opcode, int compressed, const char *data, size_t len,
                   int message_fin);
    /* A whole control frame (UP_WS_OP_CLOSE, _PING, _PONG), payload unmasked, len <= 125. The
     * payload is valid during the call only. A Close payload is not checked here: see
     * up_ws_parse_close. After a Close the reader is UP_WS_READ_CLOSED. */
    int (*on_control)(void *user, int opcode, const char *payload, size_t len);
} up_ws_reader_callbacks_t;

/* Options of up_ws_reader_init. DEFLATE: permessage-deflate was negotiated, so RSV1 may be set
 * on the first frame of a data message (RFC 7692 §6). FROM_SERVER: a client reading a server's
 * frames, which must be unmasked (RFC 6455 §5.1); by default frames are a client's, masked. */
#define UP_WS_READER_DEFLATE 0x1
#define UP_WS_READER_FROM_SERVER 0x2

typedef struct up_ws_reader_t {
    const up_ws_reader_callbacks_t *callbacks;
    void *user;
    uint64_t max_message;    /* declared payload of a message, all frames; 0: no limit */
    up_ws_error_t error;     /* set when up_ws_read returns UP_WS_ERROR */
    up_ws_read_state_t state;
    /* The rest is the reader's own. */
    uint64_t _left;          /* payload bytes of the current frame still to come */
    uint64_t _message_total; /* declared payload of the current message so far */
    uint8_t _flags;          /* UP_WS_READER_* */
    uint8_t _fin;            /* FIN of the current frame */
    uint8_t _opcode;         /* opcode of the current frame */
    uint8_t _message_opcode; /* TEXT or BINARY while a message is open, else 0 */
    uint8_t _compressed;     /* RSV1 of the open message's first frame */
    uint8_t _len7;           /* the 7-bit length of the current frame's header */
    uint8_t _mask[4];
    uint8_t _mask_offset;    /* payload bytes unmasked so far, mod 4 */
    uint8_t _have;           /* header bytes kept in _header */
    uint8_t _header[8];      /* a header piece split across reads */
    uint8_t _control_len;    /* control payload bytes kept in _control */
    char _control[UP_WS_MAX_CONTROL_PAYLOAD];
} up_ws_reader_t;

/* Sets up a reader for a new connection; flags are UP_WS_READER_*. callbacks must outlive it. */
void up_ws_reader_init(up_ws_reader_t *r, const up_ws_reader_callbacks_t *callbacks, void *user,
                       uint64_t max_message, unsigned flags);

/* Reads buf[0..len): frames are checked, payload unmasked in place (the bytes of buf change) and
 * reported through the callbacks, in order.
 *
 * Returns the number of bytes consumed: len normally, since bytes that end in the middle of a
 * header or a control frame are kept inside the reader. Less than len when a callback asked to
 * stop (call again with the rest), or when a Close frame was read: the bytes after it are no
 * frames of ours, and every later call returns 0. Returns UP_WS_ERROR when the connection must
 * be failed, with r->error set (it stays so: later calls return UP_WS_ERROR too). Events before
 * the error were reported; the reader's own errors are all found in headers, so none of the bad
 * frame's payload was. The reader's errors:
 *  - 1002: a reserved opcode; RSV2 or RSV3 set; RSV1 set without UP_WS_READER_DEFLATE, or on a
 *    control or continuation frame; a client frame not masked (or a server frame masked); a
 *    control frame over 125 bytes or fragmented; a continuation frame with no message open; a
 *    TEXT or BINARY frame while one is; a 64-bit length with its top bit set; a length not in
 *    its shortest form (RFC 6455 §5.2: MUST be minimal);
 *  - 1009: a data frame whose declared length takes its message past max_message. It fails as
 *    soon as the header is read, before any of that payload came. For a compressed message this
 *    bounds the compressed bytes; the inflated size is the caller's to check. */
ssize_t up_ws_read(up_ws_reader_t *r, char *buf, size_t len);

/* Fails the reader with code and reason (a static string): for errors its caller finds in the
 * payload (1007 for bad UTF-8, 1009 for a message that inflates too big), so that one place holds
 * the close code whoever found the error. Called from a callback (which then returns non-zero:
 * up_ws_read returns UP_WS_ERROR at once) or between calls. The first error stays: failing a
 * failed reader changes nothing. */
void up_ws_reader_fail(up_ws_reader_t *r, uint16_t code, const char *reason);

/* 1 while a data message has begun and its last frame has not ended. */
static inline int up_ws_reader_in_message(const up_ws_reader_t *r)
{
    return r->_message_opcode != 0;
}

/* ---- Close frames (RFC 6455 §5.5.1, §7.4) ---- */

/* 1 for a code a Close frame may carry: 1000-1003, 1007-1014, 3000-4999 (registered and
 * private). 1004 is reserved, 1005, 1006 and 1015 must never be sent, the rest is unassigned. */
int up_ws_close_code_valid(unsigned code);

/* Checks a received Close payload and splits it. An empty payload is a Close without a code:
 * *code is UP_WS_CLOSE_NO_STATUS (1005) and the server answers with an empty Close too (its
 * code echoed, §5.5.1). Otherwise the payload
 * is a valid code (up_ws_close_code_valid) and a UTF-8 reason (*reason points into payload,
 * possibly empty).
 *
 * Returns {0, NULL} when the payload is valid; else the error to fail the connection with:
 * 1002 for a payload of one byte or an invalid code, 1007 for a reason that is not UTF-8. */
up_ws_error_t up_ws_parse_close(const char *payload, size_t len, uint16_t *code,
                                const char **reason, size_t *reason_len);

/* Builds the payload of a Close frame: code (network order) then reason, cut to
 * UP_WS_MAX_CLOSE_REASON bytes at a character boundary. Returns its length (2 to 125). The
 * reason is dropped when it is not valid UTF-8 (the peer would fail us with 1007). A code of 0,
 * or one up_ws_close_code_valid refuses, gives an empty payload (a Close without a code), which
 * is all RFC 6455 lets such a frame be. */
size_t up_ws_close_payload(uint8_t out[UP_WS_MAX_CONTROL_PAYLOAD], unsigned code,
                           const char *reason, size_t reason_len);

/* ---- Writing frames ---- */

/* Writes the header of a server frame: unmasked, the length in its shortest form. fin and rsv1
 * are 0 or 1 (any non-zero counts as 1); opcode is 0..15; len < 2^63. Returns the header's size
 * (2, 4 or 10), or 0 when the arguments cannot make a frame. */
size_t up_ws_frame_header(uint8_t out[UP_WS_MAX_HEADER], int fin, int rsv1, int opcode,
                          uint64_t len);

/* The same for a client frame, which carries a masking key (RFC 6455 §5.3): the header is 4
 * bytes longer (6, 8 or 14). The caller masks the payload with up_ws_mask and the same key. A
 * real client draws a fresh key per frame from a strong random source (§10.3). */
size_t up_ws_frame_header_masked(uint8_t out[UP_WS_MAX_HEADER], int fin, int rsv1, int opcode,
                                 uint64_t len, const uint8_t key[4]);

/* XORs data[0..len) with key, as bytes offset.. of a payload masked with it (§5.3): masking and
 * unmasking are the same operation, and a payload may be done in pieces. */
void up_ws_mask(char *data, size_t len, const uint8_t key[4], uint64_t offset);

#endif
