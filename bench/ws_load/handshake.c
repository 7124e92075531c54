#include "handshake.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/sha1.h"

/* RFC 6455 §1.3: the GUID a server appends to the key before hashing. */
static const char GUID[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

static void base64(const uint8_t *in, size_t len, char *out)
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t at = 0;
    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16;
        if (i + 1 < len)
            v |= (uint32_t)in[i + 1] << 8;
        if (i + 2 < len)
            v |= in[i + 2];
        out[at++] = alphabet[(v >> 18) & 63];
        out[at++] = alphabet[(v >> 12) & 63];
        out[at++] = i + 1 < len ? alphabet[(v >> 6) & 63] : '=';
        out[at++] = i + 2 < len ? alphabet[v & 63] : '=';
    }
    out[at] = '\0';
}

void wsl_handshake_key(const uint8_t nonce[16], char key[WSL_KEY_LEN])
{
    base64(nonce, 16, key);
}

void wsl_handshake_accept(const char *key, char accept[WSL_ACCEPT_LEN])
{
    char joined[WSL_KEY_LEN + sizeof GUID];
    size_t key_len = strnlen(key, WSL_KEY_LEN - 1);
    memcpy(joined, key, key_len);
    memcpy(joined + key_len, GUID, sizeof GUID - 1);
    uint8_t digest[UP_SHA1_DIGEST_SIZE];
    up_sha1(joined, key_len + sizeof GUID - 1, digest);
    base64(digest, sizeof digest, accept);
}

size_t wsl_handshake_request(char *out, size_t cap, const char *host, const char *path,
                             const char *key)
{
    int n = snprintf(out, cap,
                     "GET %s HTTP/1.1\r\n"
                     "Host: %s\r\n"
                     "Upgrade: websocket\r\n"
                     "Connection: Upgrade\r\n"
                     "Sec-WebSocket-Key: %s\r\n"
                     "Sec-WebSocket-Version: 13\r\n"
                     "\r\n",
                     path, host, key);
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

/* A header value with its optional whitespace (RFC 9110 §5.6.3) trimmed. */
typedef struct {
    const char *at;
    size_t len;
} slice_t;

static slice_t trim(const char *at, size_t len)
{
    while (len > 0 && (*at == ' ' || *at == '\t')) {
        at++;
        len--;
    }
    while (len > 0 && (at[len - 1] == ' ' || at[len - 1] == '\t'))
        len--;
    return (slice_t){at, len};
}

static bool equals_nocase(slice_t s, const char *word)
{
    return s.len == strlen(word) && strncasecmp(s.at, word, s.len) == 0;
}

/* Connection is a comma-separated list of tokens (RFC 9110 §7.6.1). */
static bool has_token(slice_t list, const char *token)
{
    size_t start = 0;
    for (size_t i = 0; i <= list.len; i++) {
        if (i == list.len || list.at[i] == ',') {
            if (equals_nocase(trim(list.at + start, i - start), token))
                return true;
            start = i + 1;
        }
    }
    return false;
}

static const char *find_end(const char *buf, size_t len)
{
    for (size_t i = 0; i + 3 < len; i++)
        if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' && buf[i + 3] == '\n')
            return buf + i;
    return NULL;
}

static long refuse(wsl_handshake_error_t *error, wsl_handshake_error_t why)
{
    *error = why;
    return -1;
}

long wsl_handshake_parse(const char *buf, size_t len, const char *accept,
                         wsl_handshake_error_t *error)
{
    static const char status[] = "HTTP/1.1 101";
    size_t head_cap = len < WSL_HANDSHAKE_MAX ? len : WSL_HANDSHAKE_MAX;
    size_t prefix = head_cap < sizeof status ? head_cap : sizeof status;
    /* "HTTP/1.1 101" and a space (RFC 9112 §4): refused as soon as a byte differs. */
    if (memcmp(buf, status, prefix < sizeof status - 1 ? prefix : sizeof status - 1) != 0 ||
        (prefix == sizeof status && buf[sizeof status - 1] != ' '))
        return refuse(error, WSL_HANDSHAKE_STATUS);
    const char *end = find_end(buf, head_cap);
    if (!end)
        return len >= WSL_HANDSHAKE_MAX ? refuse(error, WSL_HANDSHAKE_TOO_LONG) : 0;

    bool upgrade = false, connection = false, accepted = false;
    /* The status line ends at or before the head's last CRLF. */
    const char *line = (const char *)memchr(buf, '\n', (size_t)(end - buf) + 2) + 1;
    while (line < end + 2) {
        const char *eol = line;
        while (eol[0] != '\r' || eol[1] != '\n')
            eol++;
        if (*line == ' ' || *line == '\t')
            return refuse(error, WSL_HANDSHAKE_MALFORMED); /* obs-fold, RFC 9112 §5.2 */
        const char *colon = memchr(line, ':', (size_t)(eol - line));
        if (!colon || colon == line || memchr(line, '\n', (size_t)(eol - line)) ||
            memchr(line, '\r', (size_t)(eol - line)))
            return refuse(error, WSL_HANDSHAKE_MALFORMED);
        slice_t name = {line, (size_t)(colon - line)};
        slice_t value = trim(colon + 1, (size_t)(eol - colon - 1));
        if (equals_nocase(name, "upgrade")) {
            upgrade = equals_nocase(value, "websocket");
        } else if (equals_nocase(name, "connection")) {
            connection = connection || has_token(value, "upgrade");
        } else if (equals_nocase(name, "sec-websocket-accept")) {
            if (accepted || value.len != WSL_ACCEPT_LEN - 1 ||
                memcmp(value.at, accept, value.len) != 0)
                return refuse(error, WSL_HANDSHAKE_ACCEPT);
            accepted = true;
        } else if (equals_nocase(name, "sec-websocket-extensions") ||
                   equals_nocase(name, "sec-websocket-protocol")) {
            return refuse(error, WSL_HANDSHAKE_EXTENSION);
        }
        line = eol + 2;
    }
    if (!upgrade)
        return refuse(error, WSL_HANDSHAKE_UPGRADE);
    if (!connection)
        return refuse(error, WSL_HANDSHAKE_CONNECTION);
    if (!accepted)
        return refuse(error, WSL_HANDSHAKE_ACCEPT);
    *error = WSL_HANDSHAKE_OK;
    return (long)(end - buf) + 4;
}

const char *wsl_handshake_error_name(wsl_handshake_error_t error)
{
    switch (error) {
    case WSL_HANDSHAKE_OK: return "none";
    case WSL_HANDSHAKE_TOO_LONG: return "response head too long";
    case WSL_HANDSHAKE_STATUS: return "not a 101 response";
    case WSL_HANDSHAKE_MALFORMED: return "malformed header line";
    case WSL_HANDSHAKE_UPGRADE: return "no Upgrade: websocket";
    case WSL_HANDSHAKE_CONNECTION: return "no Connection: upgrade";
    case WSL_HANDSHAKE_ACCEPT: return "wrong Sec-WebSocket-Accept";
    case WSL_HANDSHAKE_EXTENSION: return "extension or subprotocol not asked for";
    }
    return "unknown";
}
