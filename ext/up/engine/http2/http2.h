#ifndef UP_HTTP2_H
#define UP_HTTP2_H

/* HTTP/2 (RFC 9113) on libnghttp2: the library does the framing, HPACK, stream states and
 * flow control; this protocol maps its callbacks to exchanges. Every stream whose request is
 * complete (head and whole body) becomes an exchange of its own, handed to the same handler
 * chain as HTTP/1's requests and lent to the binding, several at once on one connection; the
 * binding answers it with the same response writer calls (http1/response.h), which land here
 * through the exchange's ops. The connection itself is never lent: it goes on reading and
 * writing other streams while an app thread works on one. A stream the app upgrades (a
 * WebSocket by RFC 8441's extended CONNECT, an event stream) goes on as a connection of its
 * own that the stream carries (http2_tunnel.h).
 *
 * Threads: the nghttp2 session is the loop thread's alone. A borrower writes its stream's
 * response head and body into the stream under the session's lock and tells the loop
 * (up_conn_any_notify); the loop submits them to the session, whose data source pulls the
 * body as the stream's window and the connection's output bound allow, so a slow stream never
 * holds the others.
 *
 * The whole module is empty when the engine is built without libnghttp2 (UP_HAVE_NGHTTP2). */

#include "core/protocol.h"

/* A listener's protocol when HTTP/2 is on: each connection is read as HTTP/2 when ALPN chose
 * h2 (TLS) or its first bytes are the client preface (h2c with prior knowledge, RFC 9113
 * §3.3), and as HTTP/1.1 otherwise. TLS listeners of it answer ALPN with h2, then http/1.1. */
extern const up_protocol_t up_http2_negotiate_protocol;
/* HTTP/2 itself, switched to by the negotiating protocol. */
extern const up_protocol_t up_http2_protocol;

/* Whether the engine was built with HTTP/2. */
int up_http2_available(void);

/* Limits (each with a test in test/test_http2*.rb). */
/* SETTINGS_MAX_CONCURRENT_STREAMS: as many app calls at once as a connection may ask for; the
 * app threads bound how many run, the rest wait their turn like HTTP/1 requests. */
#define UP_HTTP2_MAX_CONCURRENT_STREAMS 100
/* RST_STREAM frames a client may send within UP_HTTP2_RESET_WINDOW_MS (rapid reset,
 * CVE-2023-44487): past it, GOAWAY ENHANCE_YOUR_CALM and close. Browsers cancel a few streams
 * when a page changes, not hundreds a second. */
#define UP_HTTP2_MAX_RESETS 200
#define UP_HTTP2_RESET_WINDOW_MS 1000
/* CONTINUATION frames after one HEADERS (the 2024 CONTINUATION flood): a header block of
 * max_head_size arrives in a few frames of the default size. */
#define UP_HTTP2_MAX_CONTINUATIONS 8
/* SETTINGS and PING ACKs (and RST_STREAMs) nghttp2 may queue before the client reads them:
 * past it the client is flooding and the session ends. */
#define UP_HTTP2_MAX_OUTBOUND_ACK 1000
/* Entries in one SETTINGS frame. */
#define UP_HTTP2_MAX_SETTINGS 32
/* The dynamic table our HPACK encoder keeps per connection (SETTINGS_HEADER_TABLE_SIZE is the
 * client's bound; this keeps ours at the RFC's default whatever it allows). */
#define UP_HTTP2_MAX_DEFLATE_TABLE 4096
/* Bytes the session frames into the connection's output before it waits for the socket to take
 * them: data sources are pulled only while the output is under it. */
#define UP_HTTP2_OUTPUT_BOUND (64 * 1024)

/* Receive flow control (RFC 9113 §6.9): the windows reopen only as request bodies are taken, a
 * byte of a body counting as taken once it is in a spool file or its stream is freed; bytes
 * kept in memory keep their window closed, so the windows bound the memory a client can make a
 * connection hold. */
/* SETTINGS_INITIAL_WINDOW_SIZE: a stream's body is kept in memory up to the spool threshold
 * and this, and goes to a file when it reaches either (the window then reopens); four times
 * nghttp2's default, so one upload is not held to 64 KiB a round trip. */
#define UP_HTTP2_STREAM_WINDOW (256 * 1024)
/* The connection's window, four streams' worth: uploads on several streams go on at once. */
#define UP_HTTP2_CONNECTION_WINDOW (1024 * 1024)
/* The bodies a connection keeps in memory, at most (streams past it spool): under half the
 * connection's window, so the window never closes on bytes held in memory alone (nghttp2
 * announces consumed bytes once they reach half the window). */
#define UP_HTTP2_BODY_MEMORY (UP_HTTP2_CONNECTION_WINDOW / 4)

#endif
