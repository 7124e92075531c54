#ifndef UP_WEBSOCKET_DEFLATE_H
#define UP_WEBSOCKET_DEFLATE_H

/* permessage-deflate (RFC 7692) for the WebSocket protocol: the handshake's negotiation, an
 * inflater and a deflater per connection, and a compressor that compresses a message once for
 * every connection that can take it (broadcasts). Pure: zlib and the engine's buffers, no
 * sockets, no connection, no threads. The WebSocket protocol (websocket.c) drives it:
 *
 *   handshake   up_ws_deflate_negotiate() on the request's Sec-WebSocket-Extensions lines
 *               gives the connection's parameters and the value for the 101's header.
 *   reading     the frame reader hands out a message's payload in chunks, with the RSV1 bit of
 *               its first frame. For a compressed message every chunk goes through
 *               up_ws_inflate(), the last one with fin = 1; the inflated bytes are appended to
 *               the message's buffer. An uncompressed message (RSV1 clear, RFC 7692 §6.1)
 *               skips the inflater and is no part of its window, which only ever holds what
 *               went through DEFLATE.
 *               RSV1 on a continuation or control frame, or without permessage-deflate, is
 *               the frame reader's to refuse with 1002 (RFC 7692 §6.1, RFC 6455 §5.2).
 *   writing     a message to one connection goes through up_ws_deflate(): 1 means "send what it
 *               appended, with RSV1 set", 0 "send the message as it is, RSV1 clear".
 *   broadcast   up_ws_compress() compresses the message once with an empty window; every
 *               subscriber for which up_ws_deflate_accepts_shared() holds sends those same
 *               bytes with RSV1 set, after up_ws_deflater_note_shared() on its deflater.
 *
 * Memory, per connection, with the policy we recommend (both no_context_takeover flags set):
 * nothing while the connection is idle. An inflater holds a zlib stream (7 KiB of state plus
 * a window of 1 << bits bytes) only from the first chunk of a compressed message to its last.
 * Outgoing messages are compressed by the thread's up_ws_compressor_t, whose streams (256 KiB
 * each at 15 bits) are shared by all its connections. With context takeover those costs become
 * per connection and permanent: the inflater keeps its window between messages (39 KiB at 15
 * bits), the deflater its whole stream (UP_WS_DEFLATE_CONTEXT_MEM_LEVEL: 136 KiB at 15 bits).
 * At 10,000 connections that is 1.7 GB, hence the recommendation.
 *
 * Threads: none of these objects locks. An inflater belongs to the thread that reads its
 * connection, a deflater to the one that writes it, a compressor to one thread at a time (give
 * each compressing thread its own). Any thread may negotiate. */

#include <stddef.h>
#include "base/buffer.h"
#include "base/slice.h"

/* The longest response value up_ws_deflate_negotiate() writes (every parameter, NUL included). */
#define UP_WS_DEFLATE_RESPONSE_MAX 128

/* zlib's compression level. Messages are compressed on the way out of every write, so speed
 * comes first: on JSON, 3 compresses small messages better than 1 at the same speed (large ones
 * a little slower), while 6, zlib's default, gains little more for much more time
 * (bench/websocket_deflate.c). */
#define UP_WS_DEFLATE_LEVEL 3
/* zlib's memLevel: a deflate stream takes 1 << (bits + 2) bytes for its window and
 * 1 << (mem_level + 9) for its hash table and pending output. The compressor's streams exist
 * once per thread, so they take zlib's default. */
#define UP_WS_DEFLATE_MEM_LEVEL 8
/* A connection that keeps its context keeps its whole stream for good, so it gets the window as
 * negotiated, which is what finds the repeats between messages, but a smaller hash table: 128
 * KiB of window and 8 KiB of the rest at 15 bits instead of 256 KiB. Memory per connection is
 * what limits a server of long-lived connections; the price is some speed (more hash
 * collisions to walk), most on large messages. */
#define UP_WS_DEFLATE_CONTEXT_MEM_LEVEL 4
/* up_ws_deflate() sends messages shorter than this uncompressed (the deflater's min_size): a
 * few bytes rarely shrink, and skipping them costs neither side anything. */
#define UP_WS_DEFLATE_MIN_SIZE 32

/* What the server is willing to do, from its configuration. */
typedef struct up_ws_deflate_policy_t {
    int enabled; /* 0: never negotiate permessage-deflate */
    /* Compress each message with an empty window (server_no_context_takeover in every
     * response, RFC 7692 §7.1.1.1): no deflate stream per connection. */
    int server_no_context_takeover;
    /* Ask clients to do the same (client_no_context_takeover, §7.1.1.2): the inflater keeps no
     * window between messages. */
    int client_no_context_takeover;
    /* 0, or 8..15: the largest window asked of clients that offer client_max_window_bits
     * (§7.1.2.2): it bounds the client's memory, not ours (the inflater keeps a 15-bit window,
     * up_ws_inflater_init says why). Prefer 9 or more: a client on zlib that does not raise 8
     * to 9 as we do cannot compress at all. */
    int client_max_window_bits;
} up_ws_deflate_policy_t;

/* What one connection agreed on (RFC 7692 §7.1). */
typedef struct up_ws_deflate_params_t {
    unsigned char enabled; /* 0: no permessage-deflate; the other fields mean nothing */
    unsigned char server_no_context_takeover;
    unsigned char client_no_context_takeover;
    /* The largest window our messages may use (15 unless the client asked for less). zlib
     * cannot compress raw deflate with 8 bits; for 8 the deflater uses 9, which stays within a
     * 256-byte window: zlib's compressor never reaches back further than its window minus 262
     * bytes (its lookahead), 250 bytes at 9 bits. */
    unsigned char server_max_window_bits;
    /* The largest window the client's messages may use: the inflater's window. */
    unsigned char client_max_window_bits;
} up_ws_deflate_params_t;

/* Negotiation (RFC 7692 §5, §7.1; syntax RFC 6455 §9.1 with RFC 9110 §5.6 tokens and quoted
 * strings). values are the request's Sec-WebSocket-Extensions field lines, in order; together
 * they are one list of offers. The first permessage-deflate offer that is valid is accepted;
 * an offer with an unknown or repeated parameter, a value where none belongs, a missing or bad
 * window size (8..15 without leading zeros, quoted or not) is declined (§7) and the next one
 * tried. A malformed list element is skipped like a bad offer. Other extensions are ignored.
 *
 * Returns the length of the response value written to out, NUL-terminated, with *params filled
 * in; or 0 when nothing was accepted (disabled policy, no valid offer, or out_size under
 * UP_WS_DEFLATE_RESPONSE_MAX): then params->enabled is 0 and the 101 names no extension. Never
 * an error: a bad offer only costs the client its compression. */
size_t up_ws_deflate_negotiate(const up_ws_deflate_policy_t *policy, const up_slice_t *values,
                               size_t nvalues, up_ws_deflate_params_t *params, char *out,
                               size_t out_size);

/* ---- Inflating the client's messages (RFC 7692 §7.2.2) ---- */

typedef enum up_ws_inflate_result_t {
    UP_WS_INFLATE_OK = 0,
    /* The message inflates past max: close with 1009 (RFC 6455 §7.4.1, message too big). At
     * most max bytes were inflated. */
    UP_WS_INFLATE_TOO_BIG,
    /* Not valid DEFLATE data, data after a final block, or a message that ends inside a
     * block: close with 1007. The frames were well formed; what they carry is not what RSV1
     * says it is, which is 1007's meaning ("data within a message that was not consistent
     * with the type of the message"), as for bad UTF-8 in a text message. */
    UP_WS_INFLATE_BAD_DATA
} up_ws_inflate_result_t;

typedef struct up_ws_inflater_t {
    size_t max;         /* the most a message may inflate to; set by init */
    size_t message_len; /* bytes the current message inflated to so far */
    /* the rest is the inflater's own */
    struct z_stream_s *_z; /* NULL between messages without context takeover */
    up_ws_inflate_result_t _failed;
    unsigned char _window_bits;
    unsigned char _takeover;  /* the client may use context takeover: keep the window */
    unsigned char _ended;     /* the message's DEFLATE data had a final block */
    unsigned char _after_end; /* bytes of the message seen after that block */
} up_ws_inflater_t;

/* For a connection that negotiated params (enabled). Allocates nothing. */
void up_ws_inflater_init(up_ws_inflater_t *inf, const up_ws_deflate_params_t *params, size_t max);

/* Inflates the next chunk of a compressed message (len may be 0), appending the result to out
 * (taking room from pool; out may already hold bytes, the message's earlier chunks for
 * instance). fin says it is the message's last chunk: then the 4 bytes 00 00 ff ff are
 * appended (§7.2.2), the inflater checks that the message ended on a block boundary, and it
 * gets ready for the next message (dropping its stream without context takeover). A reader
 * that learns of the end only after the last chunk ends the message with an empty chunk.
 *
 * max is checked while inflating: out never receives more than max bytes of one message, and
 * its capacity grows by at most what is still allowed. An error sticks: the inflater answers
 * it again to every call, having freed its stream; the caller closes the connection with
 * up_ws_inflate_close_code(). Called by the thread that reads the connection. */
up_ws_inflate_result_t up_ws_inflate(up_ws_inflater_t *inf, const void *chunk, size_t len, int fin,
                                     up_buffer_t *out, up_buffer_pool_t *pool);

/* 1009, 1007, or 0 for UP_WS_INFLATE_OK. */
int up_ws_inflate_close_code(up_ws_inflate_result_t result);

/* Frees the stream, if any; the inflater may be initialised again. */
void up_ws_inflater_dispose(up_ws_inflater_t *inf);

/* ---- Compressing messages (RFC 7692 §7.2.1) ---- */

/* Compresses messages each with an empty window, for every connection of one thread: one lazily
 * made zlib stream per window size asked for (9..15 bits), reset per message. 262 KiB for the
 * usual 15 bits; 1.1 MB if clients asked for every size. */
typedef struct up_ws_compressor_t {
    struct z_stream_s *_z[7]; /* by zlib window bits - 9 */
} up_ws_compressor_t;

void up_ws_compressor_init(up_ws_compressor_t *c);
void up_ws_compressor_dispose(up_ws_compressor_t *c);

/* Compresses a whole message with an empty window of window_bits (8..15; 8 compresses with 9,
 * see up_ws_deflate_params_t) and appends the payload to send with RSV1 to out: the DEFLATE
 * data without its trailing 00 00 ff ff, or the single byte 00 for an empty message
 * (§7.2.3.6). Returns the bytes appended (at least 1). The result depends on the message
 * alone, so the same bytes can go to every connection that accepts them (broadcasts). */
size_t up_ws_compress(up_ws_compressor_t *c, unsigned window_bits, const void *msg, size_t len,
                      up_buffer_t *out, up_buffer_pool_t *pool);

/* 1 when a connection with params can read a message that up_ws_compress() compressed with
 * window_bits: permessage-deflate is on and the window fits its server_max_window_bits. Its
 * context takeover does not matter: a message compressed with an empty window refers to
 * nothing before it, so a client that keeps its window reads it too (RFC 7692 §7.1.1.1 only
 * lets the client forbid the server to use the window, never require it). */
int up_ws_deflate_accepts_shared(const up_ws_deflate_params_t *params, unsigned window_bits);

/* A connection's compression of its own messages. */
typedef struct up_ws_deflater_t {
    size_t min_size; /* shorter messages go out uncompressed; init sets UP_WS_DEFLATE_MIN_SIZE */
    /* the rest is the deflater's own */
    struct z_stream_s *_z; /* only with context takeover, made by the first message */
    unsigned char _window_bits;
    unsigned char _takeover;
    unsigned char _restart; /* the peer's window holds messages _z never saw */
} up_ws_deflater_t;

/* For a connection that negotiated params (enabled). Allocates nothing. */
void up_ws_deflater_init(up_ws_deflater_t *d, const up_ws_deflate_params_t *params);

/* Compresses one whole message for this connection. Returns 1 after appending the payload to
 * send with RSV1 to out; 0 when the message goes out uncompressed (RSV1 clear) and nothing was
 * appended: shorter than min_size, or, without context takeover, not smaller compressed. With
 * context takeover (server_no_context_takeover not negotiated) the connection's own stream
 * keeps its window between messages; otherwise c compresses it. Called by the one thread that
 * writes the connection, in the order its messages go out. */
int up_ws_deflate(up_ws_deflater_t *d, up_ws_compressor_t *c, const void *msg, size_t len,
                  up_buffer_t *out, up_buffer_pool_t *pool);

/* The caller queued a message compressed elsewhere (up_ws_compress) to this connection, ahead
 * of its next up_ws_deflate(): the client's window now holds bytes this deflater never saw, so
 * its next message must not refer back past them. It starts from an empty window instead (a
 * reset, done lazily: several shared messages in a row cost one). */
void up_ws_deflater_note_shared(up_ws_deflater_t *d);

/* Frees the stream, if any. */
void up_ws_deflater_dispose(up_ws_deflater_t *d);

#endif
