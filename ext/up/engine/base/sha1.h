#ifndef UP_SHA1_H
#define UP_SHA1_H

/* SHA-1 (FIPS 180-4 §6.1), for the WebSocket handshake's Sec-WebSocket-Accept (RFC 6455 §4.2.2)
 * and nothing else: SHA-1 is broken for collisions, which the handshake does not rely on (it only
 * proves the server read the key). Pure: no allocation, no global state, any thread. */

#include <stddef.h>
#include <stdint.h>

#define UP_SHA1_DIGEST_SIZE 20
#define UP_SHA1_BLOCK_SIZE 64

typedef struct up_sha1_t {
    uint32_t _h[5];
    uint64_t _bytes;                    /* message length so far */
    uint8_t _block[UP_SHA1_BLOCK_SIZE]; /* a block not yet full */
    size_t _block_len;
} up_sha1_t;

void up_sha1_init(up_sha1_t *c);
/* Adds len more bytes of the message; any number of calls, any sizes. */
void up_sha1_update(up_sha1_t *c, const void *data, size_t len);
/* Pads, writes the digest; c must be initialized again before another use. */
void up_sha1_final(up_sha1_t *c, uint8_t digest[UP_SHA1_DIGEST_SIZE]);

/* The digest of one buffer. */
void up_sha1(const void *data, size_t len, uint8_t digest[UP_SHA1_DIGEST_SIZE]);

#endif
