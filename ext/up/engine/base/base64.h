#ifndef UP_BASE64_H
#define UP_BASE64_H

/* Base64 (RFC 4648 §4, the standard alphabet, with padding), for the WebSocket handshake's keys.
 * Pure: no allocation, no global state, any thread. */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Characters that encoding n bytes takes. */
#define UP_BASE64_ENCODED_LEN(n) (((n) + 2) / 3 * 4)

/* Writes the UP_BASE64_ENCODED_LEN(len) characters of in[0..len) to out, without a NUL; returns
 * their number. */
size_t up_base64_encode(const uint8_t *in, size_t len, char *out);

/* Decodes in[0..len) into out (room for cap bytes). Strict, as RFC 4648 §3.5 lets a decoder be:
 * the length is a multiple of 4, '=' only as the last one or two characters, no whitespace or
 * other characters, and the bits padding leaves over are zero, so that one byte string has one
 * encoding. Returns the number of bytes, or -1 when in is not such base64 or out is too small. */
ssize_t up_base64_decode(const char *in, size_t len, uint8_t *out, size_t cap);

#endif
