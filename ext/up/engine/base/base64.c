/* Base64; see base64.h for the contract. */

#include "base/base64.h"

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* The value of an alphabet character, -1 for anything else ('=' included). */
static int value_of(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

size_t up_base64_encode(const uint8_t *in, size_t len, char *out)
{
    size_t i = 0, o = 0;
    for (; len - i >= 3; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = alphabet[v >> 18];
        out[o++] = alphabet[(v >> 12) & 63];
        out[o++] = alphabet[(v >> 6) & 63];
        out[o++] = alphabet[v & 63];
    }
    if (len - i == 1) {
        uint32_t v = (uint32_t)in[i] << 16;
        out[o++] = alphabet[v >> 18];
        out[o++] = alphabet[(v >> 12) & 63];
        out[o++] = '=';
        out[o++] = '=';
    } else if (len - i == 2) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
        out[o++] = alphabet[v >> 18];
        out[o++] = alphabet[(v >> 12) & 63];
        out[o++] = alphabet[(v >> 6) & 63];
        out[o++] = '=';
    }
    return o;
}

ssize_t up_base64_decode(const char *in, size_t len, uint8_t *out, size_t cap)
{
    const unsigned char *u = (const unsigned char *)in;
    size_t o = 0;

    if (len % 4 != 0)
        return -1;
    for (size_t i = 0; i < len; i += 4) {
        int v[4], pad = 0;
        for (int k = 0; k < 4; k++) {
            v[k] = value_of(u[i + k]);
            if (v[k] < 0) {
                /* '=' may only be the last one or two characters of the last quantum */
                if (u[i + k] != '=' || i + 4 != len || k < 2)
                    return -1;
                pad++;
                v[k] = 0;
            } else if (pad > 0) {
                return -1;
            }
        }
        uint32_t bits = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | v[3];
        size_t n = 3 - (size_t)pad;
        /* the bits under the padding must be zero (RFC 4648 §3.5) */
        if ((pad == 1 && (bits & 0xff) != 0) || (pad == 2 && (bits & 0xffff) != 0))
            return -1;
        if (cap - o < n)
            return -1;
        out[o++] = (uint8_t)(bits >> 16);
        if (n > 1)
            out[o++] = (uint8_t)(bits >> 8);
        if (n > 2)
            out[o++] = (uint8_t)bits;
    }
    return (ssize_t)o;
}
