#include "frame.h"

#include <string.h>

/* RFC 6455 §5.2: byte 0 is FIN, RSV1-3 and the opcode; byte 1 is MASK and a 7-bit length,
 * 126 for a 16-bit length that follows, 127 for a 64-bit one. */
#define FIN_BIT 0x80
#define RSV_BITS 0x70
#define OPCODE_BITS 0x0f
#define MASK_BIT 0x80
#define LEN7_BITS 0x7f
#define LEN16 126
#define LEN64 127

size_t wsl_frame_header(uint8_t out[WSL_FRAME_HEADER_MAX], uint8_t opcode, bool fin, uint64_t len,
                        const uint8_t mask[4])
{
    size_t at = 0;
    out[at++] = (uint8_t)((fin ? FIN_BIT : 0) | (opcode & OPCODE_BITS));
    if (len < LEN16) {
        out[at++] = (uint8_t)(MASK_BIT | len);
    } else if (len <= 0xffff) {
        out[at++] = MASK_BIT | LEN16;
        out[at++] = (uint8_t)(len >> 8);
        out[at++] = (uint8_t)len;
    } else {
        out[at++] = MASK_BIT | LEN64;
        for (int shift = 56; shift >= 0; shift -= 8)
            out[at++] = (uint8_t)(len >> shift);
    }
    memcpy(out + at, mask, 4);
    return at + 4;
}

void wsl_frame_mask(uint8_t *data, size_t len, const uint8_t mask[4], uint64_t offset)
{
    /* Eight bytes at a time with the mask turned to where data starts: the client masks every
     * byte it sends, and a byte-wide loop cost more than the rest of an echo round trip. */
    uint8_t turned[8];
    for (int i = 0; i < 8; i++)
        turned[i] = mask[(offset + (uint64_t)i) & 3];
    uint64_t word;
    memcpy(&word, turned, 8);
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t v;
        memcpy(&v, data + i, 8);
        v ^= word;
        memcpy(data + i, &v, 8);
    }
    for (; i < len; i++)
        data[i] ^= turned[i & 7];
}

void wsl_frame_reader_init(wsl_frame_reader_t *r, uint64_t max_message)
{
    memset(r, 0, sizeof *r);
    r->_max_message = max_message;
}

static bool is_control(uint8_t opcode)
{
    return (opcode & 0x8) != 0;
}

/* The header's full length once its first two bytes are in. */
static size_t header_length(const wsl_frame_reader_t *r)
{
    if (r->_have < 2)
        return 2;
    uint8_t len7 = r->_header[1] & LEN7_BITS;
    return 2 + (len7 == LEN16 ? 2 : len7 == LEN64 ? 8 : 0);
}

static size_t fail(wsl_frame_reader_t *r, wsl_frame_event_t *ev, wsl_frame_error_t error,
                   size_t consumed)
{
    r->_broken = true;
    r->_error = (uint8_t)error;
    ev->kind = WSL_FRAME_ERROR;
    ev->error = error;
    return consumed;
}

/* What the first two bytes alone can refuse, checked before waiting for the rest. */
static wsl_frame_error_t check_start(const wsl_frame_reader_t *r)
{
    uint8_t b0 = r->_header[0], b1 = r->_header[1];
    uint8_t opcode = b0 & OPCODE_BITS;
    if (b0 & RSV_BITS)
        return WSL_FRAME_ERR_RSV;
    if (opcode > WSL_OP_BINARY && opcode != WSL_OP_CLOSE && opcode != WSL_OP_PING &&
        opcode != WSL_OP_PONG)
        return WSL_FRAME_ERR_OPCODE;
    if (b1 & MASK_BIT)
        return WSL_FRAME_ERR_MASKED;
    if (is_control(opcode)) {
        if (!(b0 & FIN_BIT))
            return WSL_FRAME_ERR_CONTROL_FRAGMENT;
        if ((b1 & LEN7_BITS) > WSL_CONTROL_MAX)
            return WSL_FRAME_ERR_CONTROL_LENGTH;
    } else if (opcode == WSL_OP_CONTINUATION && !r->_in_message) {
        return WSL_FRAME_ERR_CONTINUATION;
    } else if (opcode != WSL_OP_CONTINUATION && r->_in_message) {
        return WSL_FRAME_ERR_INTERLEAVED;
    }
    return WSL_FRAME_OK;
}

/* The payload length of a complete header; 0 with *error set when it is malformed. */
static uint64_t payload_length(const wsl_frame_reader_t *r, wsl_frame_error_t *error)
{
    uint8_t len7 = r->_header[1] & LEN7_BITS;
    uint64_t len = len7;
    if (len7 == LEN16) {
        len = (uint64_t)r->_header[2] << 8 | r->_header[3];
        /* §5.2: "the minimal number of bytes MUST be used to encode the length". */
        if (len < LEN16)
            *error = WSL_FRAME_ERR_LENGTH;
    } else if (len7 == LEN64) {
        len = 0;
        for (int i = 2; i < 10; i++)
            len = len << 8 | r->_header[i];
        if (len >> 63 || len <= 0xffff)
            *error = WSL_FRAME_ERR_LENGTH;
    }
    return len;
}

size_t wsl_frame_read(wsl_frame_reader_t *r, const uint8_t *buf, size_t len, wsl_frame_event_t *ev)
{
    memset(ev, 0, sizeof *ev);
    if (r->_broken)
        return fail(r, ev, (wsl_frame_error_t)r->_error, 0);

    if (r->_in_payload) {
        ev->opcode = r->_opcode;
        ev->fin = r->_fin;
        if (r->_left == 0) {
            r->_in_payload = false;
            ev->kind = WSL_FRAME_END;
            return 0;
        }
        if (len == 0) {
            ev->kind = WSL_FRAME_NEED_MORE;
            return 0;
        }
        size_t n = len < r->_left ? len : (size_t)r->_left;
        r->_left -= n;
        ev->kind = WSL_FRAME_DATA;
        ev->data = buf;
        ev->len = n;
        return n;
    }

    size_t used = 0;
    for (;;) {
        size_t need = header_length(r);
        if (r->_have >= need)
            break;
        if (used == len) {
            ev->kind = WSL_FRAME_NEED_MORE;
            return used;
        }
        size_t take = need - r->_have < len - used ? need - r->_have : len - used;
        memcpy(r->_header + r->_have, buf + used, take);
        r->_have = (uint8_t)(r->_have + take);
        used += take;
        if (r->_have == 2) {
            wsl_frame_error_t error = check_start(r);
            if (error != WSL_FRAME_OK)
                return fail(r, ev, error, used);
        }
    }

    wsl_frame_error_t error = WSL_FRAME_OK;
    uint64_t length = payload_length(r, &error);
    if (error != WSL_FRAME_OK)
        return fail(r, ev, error, used);
    uint8_t opcode = r->_header[0] & OPCODE_BITS;
    bool fin = (r->_header[0] & FIN_BIT) != 0;
    if (!is_control(opcode)) {
        uint64_t so_far = opcode == WSL_OP_CONTINUATION ? r->_message_len : 0;
        if (length > r->_max_message || so_far > r->_max_message - length)
            return fail(r, ev, WSL_FRAME_ERR_TOO_BIG, used);
        r->_message_len = fin ? 0 : so_far + length;
        r->_in_message = !fin;
    }
    r->_have = 0;
    r->_opcode = opcode;
    r->_fin = fin;
    r->_left = length;
    r->_in_payload = true;
    ev->kind = WSL_FRAME_HEADER;
    ev->opcode = opcode;
    ev->fin = fin;
    ev->length = length;
    return used;
}

const char *wsl_frame_error_name(wsl_frame_error_t error)
{
    switch (error) {
    case WSL_FRAME_OK: return "none";
    case WSL_FRAME_ERR_RSV: return "reserved bits set";
    case WSL_FRAME_ERR_OPCODE: return "reserved opcode";
    case WSL_FRAME_ERR_MASKED: return "masked server frame";
    case WSL_FRAME_ERR_CONTROL_LENGTH: return "control frame over 125 bytes";
    case WSL_FRAME_ERR_CONTROL_FRAGMENT: return "fragmented control frame";
    case WSL_FRAME_ERR_LENGTH: return "length not in its shortest form";
    case WSL_FRAME_ERR_TOO_BIG: return "message too big";
    case WSL_FRAME_ERR_CONTINUATION: return "continuation without a message";
    case WSL_FRAME_ERR_INTERLEAVED: return "data frame inside a fragmented message";
    }
    return "unknown";
}
