#ifndef WSL_HANDSHAKE_H
#define WSL_HANDSHAKE_H

/* The client's side of the WebSocket opening handshake (RFC 6455 §4.1): the key, the upgrade
 * request, and the checks of the server's response. Pure functions over caller buffers; any
 * thread. */

#include <stddef.h>
#include <stdint.h>

/* Base64 of a 16-byte nonce (§4.1, point 7 of the request's requirements) and its NUL. */
#define WSL_KEY_LEN 25
/* Base64 of a SHA-1 digest and its NUL. */
#define WSL_ACCEPT_LEN 29
/* The longest response head this client accepts; a server's 101 is a few hundred bytes. */
#define WSL_HANDSHAKE_MAX 8192

typedef enum {
    WSL_HANDSHAKE_OK = 0,
    WSL_HANDSHAKE_TOO_LONG,   /* no end of head within WSL_HANDSHAKE_MAX bytes */
    WSL_HANDSHAKE_STATUS,     /* not "HTTP/1.1 101" */
    WSL_HANDSHAKE_MALFORMED,  /* a header line without a colon, or folded */
    WSL_HANDSHAKE_UPGRADE,    /* Upgrade is not "websocket" (§4.1, client check 2) */
    WSL_HANDSHAKE_CONNECTION, /* Connection has no "upgrade" token (§4.1, client check 3) */
    WSL_HANDSHAKE_ACCEPT,     /* Sec-WebSocket-Accept missing or wrong (§4.1, client check 4) */
    WSL_HANDSHAKE_EXTENSION,  /* an extension or subprotocol nobody asked for (§4.1, 5 and 6) */
} wsl_handshake_error_t;

/* Writes the base64 of the 16 nonce bytes into key. */
void wsl_handshake_key(const uint8_t nonce[16], char key[WSL_KEY_LEN]);

/* Writes the Sec-WebSocket-Accept a server must answer to key (§4.2.2, point 5.4). */
void wsl_handshake_accept(const char *key, char accept[WSL_ACCEPT_LEN]);

/* Writes the upgrade request for path on host (the Host header, "127.0.0.1:8080") with key
 * into out; returns its length, or 0 when it does not fit in cap bytes. */
size_t wsl_handshake_request(char *out, size_t cap, const char *host, const char *path,
                             const char *key);

/* Looks at the first len bytes a server sent after the request. Returns the length of a
 * complete, valid 101 head (the frames start right after it), 0 when the head is not complete
 * yet (call again with more), or -1 with *error set when the response is refused. accept is
 * what wsl_handshake_accept gave for the key sent. */
long wsl_handshake_parse(const char *buf, size_t len, const char *accept,
                         wsl_handshake_error_t *error);

/* A short name for an error, for reports. */
const char *wsl_handshake_error_name(wsl_handshake_error_t error);

#endif
