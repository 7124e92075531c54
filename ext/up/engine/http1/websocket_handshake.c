/* The WebSocket opening handshake, server side; see websocket_handshake.h for the contract. */

#include <string.h>
#include "base/base64.h"
#include "base/sha1.h"
#include "http1/websocket_handshake.h"

static int is_ows(char c)
{
    return c == ' ' || c == '\t';
}

static up_slice_t trim(up_slice_t s)
{
    while (s.len > 0 && is_ows(s.base[0])) {
        s.base++;
        s.len--;
    }
    while (s.len > 0 && is_ows(s.base[s.len - 1]))
        s.len--;
    return s;
}

/* ---- Lists ---- */

int up_ws_list_next(up_slice_t *list, up_slice_t *element)
{
    const char *p = list->base, *end = list->base + list->len;

    while (p < end) {
        const char *start = p;
        while (p < end && *p != ',')
            p++;
        up_slice_t e = trim(up_slice(start, (size_t)(p - start)));
        if (p < end)
            p++; /* the comma */
        if (e.len > 0) {
            *element = e;
            list->base = p;
            list->len = (size_t)(end - p);
            return 1;
        }
    }
    list->base = end;
    list->len = 0;
    return 0;
}

static int ascii_case_eq(const char *a, const char *b, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        char x = a[i], y = b[i];
        if (x >= 'A' && x <= 'Z')
            x = (char)(x + 32);
        if (y >= 'A' && y <= 'Z')
            y = (char)(y + 32);
        if (x != y)
            return 0;
    }
    return 1;
}

int up_ws_list_contains(up_slice_t list, const char *token, size_t len, int ignore_case)
{
    up_slice_t e;
    while (up_ws_list_next(&list, &e)) {
        if (e.len == len &&
            (ignore_case ? ascii_case_eq(e.base, token, len) : memcmp(e.base, token, len) == 0))
            return 1;
    }
    return 0;
}

/* ---- The request ---- */

void up_ws_handshake_init(up_ws_handshake_t *h)
{
    memset(h, 0, sizeof(*h));
}

void up_ws_handshake_header(up_ws_handshake_t *h, up_slice_t name, up_slice_t value)
{
    if (UP_LOWER_EQ(name.base, name.len, "upgrade")) {
        /* RFC 6455 §4.2.1 item 3: "websocket", an ASCII case-insensitive value */
        if (up_ws_list_contains(value, "websocket", 9, 1))
            h->_upgrade_websocket = 1;
    } else if (UP_LOWER_EQ(name.base, name.len, "connection")) {
        if (up_ws_list_contains(value, "upgrade", 7, 1))
            h->_connection_upgrade = 1;
    } else if (UP_LOWER_EQ(name.base, name.len, "sec-websocket-key")) {
        h->key = trim(value);
        if (h->_keys < 2)
            h->_keys++;
    } else if (UP_LOWER_EQ(name.base, name.len, "sec-websocket-version")) {
        up_slice_t v = trim(value);
        h->_version_13 = up_slice_eq(v, UP_WS_VERSION, sizeof(UP_WS_VERSION) - 1);
        if (h->_versions < 2)
            h->_versions++;
    }
}

static int key_valid(up_slice_t key)
{
    /* 16 bytes in base64 are 24 characters; decode into room for one more byte, so that a
     * longer value is refused by the length it decodes to, not by a buffer too small */
    uint8_t raw[UP_WS_KEY_BYTES + 3];
    if (key.len != UP_BASE64_ENCODED_LEN(UP_WS_KEY_BYTES))
        return 0;
    return up_base64_decode(key.base, key.len, raw, sizeof(raw)) == UP_WS_KEY_BYTES;
}

up_ws_handshake_result_t up_ws_handshake_check(const up_ws_handshake_t *h, up_slice_t method,
                                               int minor_version)
{
    if (!h->_upgrade_websocket || !h->_connection_upgrade)
        return UP_WS_HANDSHAKE_NOT_WEBSOCKET;
    if (minor_version < 1)
        return UP_WS_HANDSHAKE_BAD_HTTP_VERSION;
    /* methods are case-sensitive (RFC 9110 §9.1) */
    if (!up_slice_eq(method, "GET", 3))
        return UP_WS_HANDSHAKE_BAD_METHOD;
    if (h->_versions != 1 || !h->_version_13)
        return UP_WS_HANDSHAKE_BAD_VERSION;
    if (h->_keys != 1 || !key_valid(h->key))
        return UP_WS_HANDSHAKE_BAD_KEY;
    return UP_WS_HANDSHAKE_OK;
}

int up_ws_handshake_status(up_ws_handshake_result_t result)
{
    switch (result) {
    case UP_WS_HANDSHAKE_OK:
        return 101;
    case UP_WS_HANDSHAKE_BAD_METHOD:
    case UP_WS_HANDSHAKE_BAD_VERSION:
    case UP_WS_HANDSHAKE_BAD_KEY:
        return 400;
    case UP_WS_HANDSHAKE_NOT_WEBSOCKET:
    case UP_WS_HANDSHAKE_BAD_HTTP_VERSION:
        break;
    }
    return 0;
}

const char *up_ws_handshake_reason(up_ws_handshake_result_t result)
{
    switch (result) {
    case UP_WS_HANDSHAKE_NOT_WEBSOCKET: return "Not a WebSocket upgrade";
    case UP_WS_HANDSHAKE_OK: return "WebSocket upgrade";
    case UP_WS_HANDSHAKE_BAD_HTTP_VERSION: return "WebSocket upgrade needs HTTP/1.1";
    case UP_WS_HANDSHAKE_BAD_METHOD: return "WebSocket upgrade needs GET";
    case UP_WS_HANDSHAKE_BAD_VERSION: return "Unsupported Sec-WebSocket-Version (13 is)";
    case UP_WS_HANDSHAKE_BAD_KEY: return "Invalid Sec-WebSocket-Key";
    }
    return "Invalid WebSocket upgrade";
}

void up_ws_accept_key(const char *key, size_t len, char out[UP_WS_ACCEPT_LEN + 1])
{
    up_sha1_t c;
    uint8_t digest[UP_SHA1_DIGEST_SIZE];

    up_sha1_init(&c);
    up_sha1_update(&c, key, len);
    up_sha1_update(&c, UP_WS_GUID, sizeof(UP_WS_GUID) - 1);
    up_sha1_final(&c, digest);
    out[up_base64_encode(digest, sizeof(digest), out)] = '\0';
}
