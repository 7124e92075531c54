#ifndef WSL_SHA1_H
#define WSL_SHA1_H

/* SHA-1 (FIPS 180-4 §6.1), only for the one place RFC 6455 needs it: checking the server's
 * Sec-WebSocket-Accept against the key the client sent (RFC 6455 §4.1, point 4 of the client's
 * checks). Not for anything that needs a secure hash. */

#include <stddef.h>
#include <stdint.h>

#define WSL_SHA1_LEN 20

/* Writes the 20-byte digest of len bytes at data into out. Pure; any thread. */
void wsl_sha1(const void *data, size_t len, uint8_t out[WSL_SHA1_LEN]);

#endif
