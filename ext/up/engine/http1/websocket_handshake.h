#ifndef UP_WEBSOCKET_HANDSHAKE_H
#define UP_WEBSOCKET_HANDSHAKE_H

/* The server side of the WebSocket opening handshake (RFC 6455 §4.2): is a request a valid
 * upgrade, and what Sec-WebSocket-Accept answers its key. Pure: the caller hands in the request's
 * method, version and header fields as slices; nothing is allocated or kept but those slices.
 * Any thread; one up_ws_handshake_t per request.
 *
 * Use: up_ws_handshake_init, up_ws_handshake_header for every header field of the request (the
 * ones that do not matter are ignored), then up_ws_handshake_check. */

#include <stddef.h>
#include <stdint.h>
#include "base/slice.h"

/* RFC 6455 §1.3: the GUID appended to the key before hashing. */
#define UP_WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
/* The one protocol version there is (RFC 6455 §4.1 item 9): what Sec-WebSocket-Version must say,
 * and what a 400 for another version lists. */
#define UP_WS_VERSION "13"
/* A Sec-WebSocket-Key is base64 of this many random bytes (§4.1 item 7), 24 characters. */
#define UP_WS_KEY_BYTES 16
/* The length of a Sec-WebSocket-Accept value: base64 of a SHA-1 digest. */
#define UP_WS_ACCEPT_LEN 28

typedef enum up_ws_handshake_result_t {
    /* Not an upgrade to WebSocket: no "websocket" in Upgrade, or no "upgrade" in Connection
     * (RFC 6455 §4.2.1 items 3 and 4). A plain request: the app sees rack.upgrade? nil. */
    UP_WS_HANDSHAKE_NOT_WEBSOCKET = 0,
    /* A valid upgrade: answer 101 with up_ws_accept_key(h.key) if the app takes it. */
    UP_WS_HANDSHAKE_OK,
    /* Upgrade tokens in an HTTP/1.0 request. RFC 9110 §7.8: a server MUST ignore Upgrade in an
     * HTTP/1.0 request, so this is a plain request too, not an error. */
    UP_WS_HANDSHAKE_BAD_HTTP_VERSION,
    /* An upgrade to WebSocket with a method other than GET (§4.1 item 1): 400. The client asked
     * for a WebSocket and cannot get one; serving the request as if it had not asked would hide
     * why. */
    UP_WS_HANDSHAKE_BAD_METHOD,
    /* Sec-WebSocket-Version missing, not exactly 13, or sent twice: 400 with
     * "Sec-WebSocket-Version: 13" (§4.2.2, §4.4) so that the client can retry with it. */
    UP_WS_HANDSHAKE_BAD_VERSION,
    /* Sec-WebSocket-Key missing, sent twice, or not the base64 of exactly 16 bytes (§4.2.1 item
     * 5, §11.3.1): 400. */
    UP_WS_HANDSHAKE_BAD_KEY
} up_ws_handshake_result_t;

typedef struct up_ws_handshake_t {
    up_slice_t key; /* the Sec-WebSocket-Key value, for up_ws_accept_key once the check is OK */
    /* The rest is the module's own. */
    uint8_t _upgrade_websocket;  /* "websocket" seen in an Upgrade field */
    uint8_t _connection_upgrade; /* "upgrade" seen in a Connection field */
    uint8_t _keys;               /* Sec-WebSocket-Key fields seen (stops at 2) */
    uint8_t _versions;           /* Sec-WebSocket-Version fields seen (stops at 2) */
    uint8_t _version_13;         /* the (last) one said 13 */
} up_ws_handshake_t;

void up_ws_handshake_init(up_ws_handshake_t *h);

/* One header field of the request, name as sent (compared case-insensitively), value with its
 * surrounding whitespace already stripped (as up_http1_parse_request gives it). A field sent
 * several times is passed once per line; a caller that only has the lines joined with ", " (a
 * Rack env) passes that: both come to the same answer, since a repeated key or version is
 * refused either way. The slices must stay valid until up_ws_handshake_check. */
void up_ws_handshake_header(up_ws_handshake_t *h, up_slice_t name, up_slice_t value);

/* The verdict once every field was passed. method as sent; minor_version the N of HTTP/1.N (the
 * parser answers 505 to other majors). Checked in this order: the Upgrade and Connection tokens,
 * the HTTP version, the method, Sec-WebSocket-Version, Sec-WebSocket-Key. */
up_ws_handshake_result_t up_ws_handshake_check(const up_ws_handshake_t *h, up_slice_t method,
                                               int minor_version);

/* What to answer: 101 for OK (when the app accepts), 400 for BAD_METHOD, BAD_VERSION and
 * BAD_KEY, 0 for a plain request (NOT_WEBSOCKET, BAD_HTTP_VERSION). */
int up_ws_handshake_status(up_ws_handshake_result_t result);
/* A short reason for a 400's body and the log. */
const char *up_ws_handshake_reason(up_ws_handshake_result_t result);

/* Sec-WebSocket-Accept for a key (RFC 6455 §4.2.2 item 5.4): base64(SHA-1(key + GUID)), 28
 * characters and a NUL in out. The key is taken as given, checked or not. */
void up_ws_accept_key(const char *key, size_t len, char out[UP_WS_ACCEPT_LEN + 1]);

/* ---- Comma-separated lists (RFC 9110 §5.6.1) ---- */

/* Takes the next element off a list: skips empty elements and the optional whitespace around
 * elements; *list is advanced past it. Returns 1 with *element set (never empty), 0 when the
 * list has no element left. Elements are taken as they are: one that is not a token simply
 * matches nothing. */
int up_ws_list_next(up_slice_t *list, up_slice_t *element);

/* 1 when token is one of the list's elements. ignore_case for case-insensitive tokens (Upgrade,
 * Connection: RFC 9110 §7.6.1, §7.8); 0 for subprotocol names, which are matched exactly: a
 * binding checks with it that the subprotocol its app chose is one the client offered in
 * Sec-WebSocket-Protocol (RFC 6455 §4.2.2 item 5.4), once per field when it came in several. */
int up_ws_list_contains(up_slice_t list, const char *token, size_t len, int ignore_case);

#endif
