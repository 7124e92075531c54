/* WebSocket frame reader and writer; see websocket_frame.h for the contract.
 *
 * The reader is a state machine over the parts of a frame (RFC 6455 §5.2):
 *
 *   HEADER (2 bytes) -> [LENGTH (2 or 8)] -> MASK (4) -> PAYLOAD | CONTROL -> HEADER ...
 *
 * Each header part is taken straight from the caller's buffer when it is all there, and
 * gathered in _header when a read ends inside it. Every rule that a header can break is checked
 * as soon as the part that shows it is read, so a bad frame fails before its payload comes. */

#include <string.h>
#include "base/utf8.h"
#include "websocket/websocket_frame.h"

#define B0_FIN 0x80
#define B0_RSV1 0x40
#define B0_RSV2 0x20
#define B0_RSV3 0x10
#define B0_OPCODE 0x0f
#define B1_MASK 0x80
#define B1_LEN 0x7f

/* The 7-bit length values that announce an extended length (RFC 6455 §5.2). */
#define LEN7_16BIT 126
#define LEN7_64BIT 127

/* ---- Masking ---- */

void up_ws_mask(char *data, size_t len, const uint8_t key[4], uint64_t offset)
{
    uint8_t rotated[8];
    uint64_t word_key;
    size_t i = 0;

    /* The key as it lines up with data[0], twice: eight bytes XOR as one word, and since 8 is a
     * multiple of 4 every word lines up the same way. */
    for (int k = 0; k < 8; k++)
        rotated[k] = key[(offset + (uint64_t)k) & 3];
    memcpy(&word_key, rotated, 8);
    for (; len - i >= 8; i += 8) {
        uint64_t word;
        memcpy(&word, data + i, 8);
        word ^= word_key;
        memcpy(data + i, &word, 8);
    }
    for (; i < len; i++)
        data[i] = (char)(data[i] ^ rotated[i & 7]);
}

/* ---- Reader ---- */

void up_ws_reader_init(up_ws_reader_t *r, const up_ws_reader_callbacks_t *callbacks, void *user,
                       uint64_t max_message, unsigned flags)
{
    memset(r, 0, sizeof(*r));
    r->callbacks = callbacks;
    r->user = user;
    r->max_message = max_message;
    r->_flags = (uint8_t)(flags & (UP_WS_READER_DEFLATE | UP_WS_READER_FROM_SERVER));
    r->state = UP_WS_READ_HEADER;
}

void up_ws_reader_fail(up_ws_reader_t *r, uint16_t code, const char *reason)
{
    if (r->state == UP_WS_READ_FAILED)
        return;
    r->error.code = code;
    r->error.reason = reason;
    r->state = UP_WS_READ_FAILED;
}

static ssize_t protocol_error(up_ws_reader_t *r, const char *reason)
{
    up_ws_reader_fail(r, UP_WS_CLOSE_PROTOCOL_ERROR, reason);
    return UP_WS_ERROR;
}

/* Makes `need` bytes of a header part available from buf[*pos..len): in place when nothing is
 * kept and they are all there, else through r->_header. Returns NULL when the bytes ran out
 * first (those there were are kept, *pos is len). */
static const uint8_t *gather(up_ws_reader_t *r, const char *buf, size_t len, size_t *pos,
                             size_t need)
{
    size_t avail = len - *pos;
    if (r->_have == 0 && avail >= need) {
        const uint8_t *part = (const uint8_t *)buf + *pos;
        *pos += need;
        return part;
    }
    size_t n = need - r->_have;
    if (n > avail)
        n = avail;
    memcpy(r->_header + r->_have, buf + *pos, n);
    r->_have = (uint8_t)(r->_have + n);
    *pos += n;
    if (r->_have < need)
        return NULL;
    r->_have = 0;
    return r->_header;
}

/* The first two bytes: every rule they can break (RFC 6455 §5.2, §5.4, §5.5; RFC 7692 §6). */
static ssize_t read_first_bytes(up_ws_reader_t *r, const uint8_t *h)
{
    int fin = (h[0] & B0_FIN) != 0, rsv1 = (h[0] & B0_RSV1) != 0;
    int opcode = h[0] & B0_OPCODE, masked = (h[1] & B1_MASK) != 0;
    int len7 = h[1] & B1_LEN;

    if (h[0] & (B0_RSV2 | B0_RSV3))
        return protocol_error(r, "RSV2 and RSV3 must be clear");
    switch (opcode) {
    case UP_WS_OP_CONTINUATION:
        if (r->_message_opcode == 0)
            return protocol_error(r, "continuation frame without a message to continue");
        if (rsv1)
            return protocol_error(r, "RSV1 set on a continuation frame");
        break;
    case UP_WS_OP_TEXT:
    case UP_WS_OP_BINARY:
        if (r->_message_opcode != 0)
            return protocol_error(r, "new message before the fragmented one ended");
        if (rsv1 && !(r->_flags & UP_WS_READER_DEFLATE))
            return protocol_error(r, "RSV1 set without a negotiated extension");
        break;
    case UP_WS_OP_CLOSE:
    case UP_WS_OP_PING:
    case UP_WS_OP_PONG:
        if (rsv1)
            return protocol_error(r, "RSV1 set on a control frame");
        if (!fin)
            return protocol_error(r, "fragmented control frame");
        if (len7 > UP_WS_MAX_CONTROL_PAYLOAD)
            return protocol_error(r, "control frame payload over 125 bytes");
        break;
    default:
        return protocol_error(r, "reserved opcode");
    }
    if (r->_flags & UP_WS_READER_FROM_SERVER) {
        if (masked)
            return protocol_error(r, "masked server frame");
    } else if (!masked) {
        return protocol_error(r, "unmasked client frame");
    }

    if (opcode == UP_WS_OP_TEXT || opcode == UP_WS_OP_BINARY) {
        r->_message_opcode = (uint8_t)opcode;
        r->_compressed = (uint8_t)rsv1;
        r->_message_total = 0;
    }
    r->_fin = (uint8_t)fin;
    r->_opcode = (uint8_t)opcode;
    r->_len7 = (uint8_t)len7;
    return 0;
}

/* The payload length is known: the size rules, then on to the masking key or the payload. */
static ssize_t read_length(up_ws_reader_t *r, uint64_t len)
{
    if (r->_len7 == LEN7_64BIT && (len >> 63) != 0)
        return protocol_error(r, "64-bit payload length with its top bit set");
    if ((r->_len7 == LEN7_16BIT && len < LEN7_16BIT) || (r->_len7 == LEN7_64BIT && len <= 0xffff))
        return protocol_error(r, "payload length not in its shortest form");
    if (!up_ws_op_is_control(r->_opcode)) {
        if (r->max_message != 0 &&
            (len > r->max_message || r->_message_total > r->max_message - len)) {
            up_ws_reader_fail(r, UP_WS_CLOSE_MESSAGE_TOO_BIG, "message too big");
            return UP_WS_ERROR;
        }
        r->_message_total += len;
    }
    r->_left = len;
    r->_mask_offset = 0;
    r->state = (r->_flags & UP_WS_READER_FROM_SERVER) ? UP_WS_READ_PAYLOAD : UP_WS_READ_MASK;
    return 0;
}

/* Hands out data payload[0..n), already unmasked, moving the state on first: a callback that
 * stops the reader finds it ready for the next step. Returns the callback's answer. */
static int emit_data(up_ws_reader_t *r, const char *payload, size_t n)
{
    int opcode = r->_message_opcode, compressed = r->_compressed, message_fin = 0;
    r->_left -= n;
    if (r->_left == 0) {
        r->state = UP_WS_READ_HEADER;
        if (r->_fin) {
            message_fin = 1;
            r->_message_opcode = 0;
        }
    }
    if (r->callbacks == NULL || r->callbacks->on_data == NULL)
        return 0;
    return r->callbacks->on_data(r->user, opcode, compressed, payload, n, message_fin);
}

static int emit_control(up_ws_reader_t *r, const char *payload, size_t n)
{
    int opcode = r->_opcode;
    r->_left = 0;
    r->_control_len = 0;
    r->state = opcode == UP_WS_OP_CLOSE ? UP_WS_READ_CLOSED : UP_WS_READ_HEADER;
    if (r->callbacks == NULL || r->callbacks->on_control == NULL)
        return 0;
    return r->callbacks->on_control(r->user, opcode, payload, n);
}

/* The header is read: the payload comes next. An empty payload is reported now, as nothing
 * else would announce it. Returns the callback's answer. */
static int begin_payload(up_ws_reader_t *r, const char *at)
{
    if (up_ws_op_is_control(r->_opcode)) {
        r->state = UP_WS_READ_CONTROL;
        return r->_left == 0 ? emit_control(r, at, 0) : 0;
    }
    r->state = UP_WS_READ_PAYLOAD;
    return r->_left == 0 ? emit_data(r, at, 0) : 0;
}

static void unmask(up_ws_reader_t *r, char *data, size_t n)
{
    if (r->_flags & UP_WS_READER_FROM_SERVER)
        return;
    up_ws_mask(data, n, r->_mask, r->_mask_offset);
    r->_mask_offset = (uint8_t)((r->_mask_offset + n) & 3);
}

ssize_t up_ws_read(up_ws_reader_t *r, char *buf, size_t len)
{
    size_t pos = 0;

    if (r->state == UP_WS_READ_FAILED)
        return UP_WS_ERROR;
    while (pos < len) {
        const uint8_t *part;
        int stop = 0;

        switch (r->state) {
        case UP_WS_READ_HEADER:
            if ((part = gather(r, buf, len, &pos, 2)) == NULL)
                return (ssize_t)pos;
            if (read_first_bytes(r, part) < 0)
                return UP_WS_ERROR;
            if (r->_len7 == LEN7_16BIT || r->_len7 == LEN7_64BIT) {
                r->state = UP_WS_READ_LENGTH;
                break;
            }
            if (read_length(r, r->_len7) < 0)
                return UP_WS_ERROR;
            if (r->state == UP_WS_READ_PAYLOAD)
                stop = begin_payload(r, buf + pos);
            break;
        case UP_WS_READ_LENGTH: {
            size_t need = r->_len7 == LEN7_16BIT ? 2 : 8;
            uint64_t n = 0;
            if ((part = gather(r, buf, len, &pos, need)) == NULL)
                return (ssize_t)pos;
            for (size_t i = 0; i < need; i++)
                n = n << 8 | part[i];
            if (read_length(r, n) < 0)
                return UP_WS_ERROR;
            if (r->state == UP_WS_READ_PAYLOAD)
                stop = begin_payload(r, buf + pos);
            break;
        }
        case UP_WS_READ_MASK:
            if ((part = gather(r, buf, len, &pos, 4)) == NULL)
                return (ssize_t)pos;
            memcpy(r->_mask, part, 4);
            stop = begin_payload(r, buf + pos);
            break;
        case UP_WS_READ_PAYLOAD: {
            size_t n = len - pos;
            if (n > r->_left)
                n = (size_t)r->_left;
            unmask(r, buf + pos, n);
            pos += n;
            stop = emit_data(r, buf + pos - n, n);
            break;
        }
        case UP_WS_READ_CONTROL: {
            size_t n = len - pos;
            if (r->_control_len == 0 && n >= r->_left) {
                /* all there: unmask and hand it out in place */
                n = (size_t)r->_left;
                unmask(r, buf + pos, n);
                pos += n;
                stop = emit_control(r, buf + pos - n, n);
                break;
            }
            if (n > r->_left - r->_control_len)
                n = (size_t)(r->_left - r->_control_len);
            memcpy(r->_control + r->_control_len, buf + pos, n);
            r->_control_len = (uint8_t)(r->_control_len + n);
            pos += n;
            if (r->_control_len == r->_left) {
                unmask(r, r->_control, r->_control_len);
                stop = emit_control(r, r->_control, r->_control_len);
            }
            break;
        }
        case UP_WS_READ_CLOSED:
            return (ssize_t)pos;
        case UP_WS_READ_FAILED:
            return UP_WS_ERROR;
        }
        if (r->state == UP_WS_READ_FAILED)
            return UP_WS_ERROR;
        if (stop)
            return (ssize_t)pos;
    }
    return (ssize_t)pos;
}

/* ---- Close frames ---- */

int up_ws_close_code_valid(unsigned code)
{
    return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) ||
           (code >= 3000 && code <= 4999);
}

up_ws_error_t up_ws_parse_close(const char *payload, size_t len, uint16_t *code,
                                const char **reason, size_t *reason_len)
{
    const uint8_t *p = (const uint8_t *)payload;

    *code = UP_WS_CLOSE_NO_STATUS;
    *reason = payload;
    *reason_len = 0;
    if (len == 0)
        return (up_ws_error_t){0, NULL};
    if (len == 1)
        return (up_ws_error_t){UP_WS_CLOSE_PROTOCOL_ERROR, "close payload of one byte"};
    if (len > UP_WS_MAX_CONTROL_PAYLOAD)
        return (up_ws_error_t){UP_WS_CLOSE_PROTOCOL_ERROR, "control frame payload over 125 bytes"};
    unsigned c = (unsigned)p[0] << 8 | p[1];
    if (!up_ws_close_code_valid(c))
        return (up_ws_error_t){UP_WS_CLOSE_PROTOCOL_ERROR, "invalid close code"};
    if (!up_utf8_valid(payload + 2, len - 2))
        return (up_ws_error_t){UP_WS_CLOSE_INVALID_PAYLOAD, "close reason is not UTF-8"};
    *code = (uint16_t)c;
    *reason = payload + 2;
    *reason_len = len - 2;
    return (up_ws_error_t){0, NULL};
}

size_t up_ws_close_payload(uint8_t out[UP_WS_MAX_CONTROL_PAYLOAD], unsigned code,
                           const char *reason, size_t reason_len)
{
    if (!up_ws_close_code_valid(code))
        return 0;
    out[0] = (uint8_t)(code >> 8);
    out[1] = (uint8_t)code;
    if (reason == NULL)
        return 2;
    if (reason_len > UP_WS_MAX_CLOSE_REASON) {
        /* back up to the first byte of the character the limit cuts */
        reason_len = UP_WS_MAX_CLOSE_REASON;
        while (reason_len > 0 && ((uint8_t)reason[reason_len] & 0xc0) == 0x80)
            reason_len--;
    }
    if (!up_utf8_valid(reason, reason_len))
        return 2;
    memcpy(out + 2, reason, reason_len);
    return 2 + reason_len;
}

/* ---- Writer ---- */

static size_t write_header(uint8_t *out, int fin, int rsv1, int opcode, uint64_t len, int masked)
{
    size_t n = 2;
    if (opcode < 0 || opcode > B0_OPCODE || (len >> 63) != 0)
        return 0;
    out[0] = (uint8_t)((fin ? B0_FIN : 0) | (rsv1 ? B0_RSV1 : 0) | opcode);
    out[1] = masked ? B1_MASK : 0;
    if (len < LEN7_16BIT) {
        out[1] |= (uint8_t)len;
    } else if (len <= 0xffff) {
        out[1] |= LEN7_16BIT;
        out[2] = (uint8_t)(len >> 8);
        out[3] = (uint8_t)len;
        n = 4;
    } else {
        out[1] |= LEN7_64BIT;
        for (int i = 0; i < 8; i++)
            out[2 + i] = (uint8_t)(len >> (56 - 8 * i));
        n = 10;
    }
    return n;
}

size_t up_ws_frame_header(uint8_t out[UP_WS_MAX_HEADER], int fin, int rsv1, int opcode,
                          uint64_t len)
{
    return write_header(out, fin, rsv1, opcode, len, 0);
}

size_t up_ws_frame_header_masked(uint8_t out[UP_WS_MAX_HEADER], int fin, int rsv1, int opcode,
                                 uint64_t len, const uint8_t key[4])
{
    size_t n = write_header(out, fin, rsv1, opcode, len, 1);
    if (n == 0)
        return 0;
    memcpy(out + n, key, 4);
    return n + 4;
}
