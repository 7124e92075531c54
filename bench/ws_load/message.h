#ifndef WSL_MESSAGE_H
#define WSL_MESSAGE_H

/* The messages ws_load sends: printable ASCII (valid text frames), the same size every time,
 * starting with a 34-byte head, "<sequence> <send time> ", both as 16 lowercase hex digits
 * (the time in CLOCK_MONOTONIC ns), and filled up with a fixed pattern. So a receiver can
 * check every byte, and a broadcast subscriber can tell each message's latency and order from
 * the message alone. A probe (broadcast's subscription check) has "probe" instead of a head. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WSL_MESSAGE_HEAD 34

/* Writes a message of size bytes (at least WSL_MESSAGE_HEAD) with seq and ns into out. */
void wsl_message_write(uint8_t *out, size_t size, uint64_t seq, uint64_t ns);

/* Writes a probe of size bytes into out. */
void wsl_message_write_probe(uint8_t *out, size_t size);

/* True when len bytes at offset of a received message match what wsl_message_write gave for
 * seq and ns (past size they never do). */
bool wsl_message_matches(size_t size, uint64_t seq, uint64_t ns, uint64_t offset,
                         const uint8_t *data, size_t len);

/* True when the pattern part of a message (offsets from WSL_MESSAGE_HEAD to size) matches. */
bool wsl_message_matches_tail(size_t size, uint64_t offset, const uint8_t *data, size_t len);

/* Reads a head: true with *seq and *ns set, false when it is not one. */
bool wsl_message_parse(const uint8_t head[WSL_MESSAGE_HEAD], uint64_t *seq, uint64_t *ns);

bool wsl_message_is_probe(const uint8_t *head, size_t len);

#endif
