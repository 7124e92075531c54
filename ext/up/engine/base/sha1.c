/* SHA-1 per FIPS 180-4: §5.1.1 padding, §6.1.2 the hash computation (the 80-word message
 * schedule kept as a rolling window of 16 words). */

#include <string.h>
#include "base/sha1.h"

static uint32_t rotl(uint32_t x, int n)
{
    return x << n | x >> (32 - n);
}

static uint32_t load_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* One 64-byte block into the state (§6.1.2 steps 1 to 4). */
static void compress(uint32_t h[5], const uint8_t *block)
{
    uint32_t w[16];
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];

    for (int t = 0; t < 16; t++)
        w[t] = load_be32(block + 4 * t);
    for (int t = 0; t < 80; t++) {
        uint32_t f, k;
        if (t >= 16) {
            /* W[t] = ROTL1(W[t-3] ^ W[t-8] ^ W[t-14] ^ W[t-16]), in a window of 16 */
            w[t & 15] = rotl(w[(t - 3) & 15] ^ w[(t - 8) & 15] ^ w[(t - 14) & 15] ^ w[t & 15], 1);
        }
        if (t < 20) {
            f = (b & c) | (~b & d); /* Ch */
            k = 0x5a827999;
        } else if (t < 40) {
            f = b ^ c ^ d; /* Parity */
            k = 0x6ed9eba1;
        } else if (t < 60) {
            f = (b & c) | (b & d) | (c & d); /* Maj */
            k = 0x8f1bbcdc;
        } else {
            f = b ^ c ^ d;
            k = 0xca62c1d6;
        }
        uint32_t temp = rotl(a, 5) + f + e + k + w[t & 15];
        e = d;
        d = c;
        c = rotl(b, 30);
        b = a;
        a = temp;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
}

void up_sha1_init(up_sha1_t *c)
{
    /* §5.3.1 */
    c->_h[0] = 0x67452301;
    c->_h[1] = 0xefcdab89;
    c->_h[2] = 0x98badcfe;
    c->_h[3] = 0x10325476;
    c->_h[4] = 0xc3d2e1f0;
    c->_bytes = 0;
    c->_block_len = 0;
}

void up_sha1_update(up_sha1_t *c, const void *data, size_t len)
{
    const uint8_t *p = data;

    if (len == 0)
        return;
    c->_bytes += len;
    if (c->_block_len > 0) {
        size_t n = UP_SHA1_BLOCK_SIZE - c->_block_len;
        if (n > len)
            n = len;
        memcpy(c->_block + c->_block_len, p, n);
        c->_block_len += n;
        p += n;
        len -= n;
        if (c->_block_len < UP_SHA1_BLOCK_SIZE)
            return;
        compress(c->_h, c->_block);
        c->_block_len = 0;
    }
    for (; len >= UP_SHA1_BLOCK_SIZE; p += UP_SHA1_BLOCK_SIZE, len -= UP_SHA1_BLOCK_SIZE)
        compress(c->_h, p);
    memcpy(c->_block, p, len);
    c->_block_len = len;
}

void up_sha1_final(up_sha1_t *c, uint8_t digest[UP_SHA1_DIGEST_SIZE])
{
    uint64_t bits = c->_bytes * 8;

    /* §5.1.1: a 1 bit, zeros up to 56 bytes mod 64, the length in bits as 64 bits big-endian */
    c->_block[c->_block_len++] = 0x80;
    if (c->_block_len > UP_SHA1_BLOCK_SIZE - 8) {
        memset(c->_block + c->_block_len, 0, UP_SHA1_BLOCK_SIZE - c->_block_len);
        compress(c->_h, c->_block);
        c->_block_len = 0;
    }
    memset(c->_block + c->_block_len, 0, UP_SHA1_BLOCK_SIZE - 8 - c->_block_len);
    for (int i = 0; i < 8; i++)
        c->_block[UP_SHA1_BLOCK_SIZE - 8 + i] = (uint8_t)(bits >> (56 - 8 * i));
    compress(c->_h, c->_block);
    for (int i = 0; i < 5; i++) {
        digest[4 * i] = (uint8_t)(c->_h[i] >> 24);
        digest[4 * i + 1] = (uint8_t)(c->_h[i] >> 16);
        digest[4 * i + 2] = (uint8_t)(c->_h[i] >> 8);
        digest[4 * i + 3] = (uint8_t)c->_h[i];
    }
}

void up_sha1(const void *data, size_t len, uint8_t digest[UP_SHA1_DIGEST_SIZE])
{
    up_sha1_t c;
    up_sha1_init(&c);
    up_sha1_update(&c, data, len);
    up_sha1_final(&c, digest);
}
