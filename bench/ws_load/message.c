#include "message.h"

#include <string.h>

static const char HEX[] = "0123456789abcdef";
static const char PROBE[] = "probe";

/* The filler at offset i: letters, so that every message is valid UTF-8. */
static uint8_t filler(uint64_t i)
{
    return (uint8_t)('a' + i % 26);
}

static void hex16(uint8_t *out, uint64_t v)
{
    for (int i = 15; i >= 0; i--, v >>= 4)
        out[i] = (uint8_t)HEX[v & 15];
}

void wsl_message_write(uint8_t *out, size_t size, uint64_t seq, uint64_t ns)
{
    hex16(out, seq);
    out[16] = ' ';
    hex16(out + 17, ns);
    out[33] = ' ';
    for (size_t i = WSL_MESSAGE_HEAD; i < size; i++)
        out[i] = filler(i);
}

void wsl_message_write_probe(uint8_t *out, size_t size)
{
    for (size_t i = 0; i < size; i++)
        out[i] = i < sizeof PROBE - 1 ? (uint8_t)PROBE[i] : filler(i);
}

bool wsl_message_matches_tail(size_t size, uint64_t offset, const uint8_t *data, size_t len)
{
    if (offset > size || len > size - offset)
        return false;
    for (size_t i = 0; i < len; i++)
        if (offset + i >= WSL_MESSAGE_HEAD && data[i] != filler(offset + i))
            return false;
    return true;
}

bool wsl_message_matches(size_t size, uint64_t seq, uint64_t ns, uint64_t offset,
                         const uint8_t *data, size_t len)
{
    if (!wsl_message_matches_tail(size, offset, data, len))
        return false;
    if (offset >= WSL_MESSAGE_HEAD)
        return true;
    uint8_t head[WSL_MESSAGE_HEAD];
    wsl_message_write(head, WSL_MESSAGE_HEAD, seq, ns);
    size_t n = WSL_MESSAGE_HEAD - offset < len ? WSL_MESSAGE_HEAD - offset : len;
    return memcmp(data, head + offset, n) == 0;
}

static bool parse_hex16(const uint8_t *in, uint64_t *v)
{
    uint64_t x = 0;
    for (int i = 0; i < 16; i++) {
        const char *d = memchr(HEX, in[i], 16);
        if (!d)
            return false;
        x = x << 4 | (uint64_t)(d - HEX);
    }
    *v = x;
    return true;
}

bool wsl_message_parse(const uint8_t head[WSL_MESSAGE_HEAD], uint64_t *seq, uint64_t *ns)
{
    return head[16] == ' ' && head[33] == ' ' && parse_hex16(head, seq) &&
           parse_hex16(head + 17, ns);
}

bool wsl_message_is_probe(const uint8_t *head, size_t len)
{
    return len >= sizeof PROBE - 1 && memcmp(head, PROBE, sizeof PROBE - 1) == 0;
}
