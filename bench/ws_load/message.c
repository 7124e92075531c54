#include "message.h"

#include <string.h>

static const char HEX[] = "0123456789abcdef";
static const char PROBE[] = "probe";

/* The filler: byte i of a message past its head is letter i % 26, so every message is valid
 * UTF-8. FILLER holds 64 periods, so FILLER + i % 26 is the filler from offset i on for
 * FILLER_RUN bytes, and a message is written and checked with memcpy and memcmp. */
#define PERIOD 26
#define LETTERS "abcdefghijklmnopqrstuvwxyz"
#define TIMES2(s) s s
#define TIMES64(s) TIMES2(TIMES2(TIMES2(TIMES2(TIMES2(TIMES2(s))))))
static const char FILLER[] = TIMES64(LETTERS);
#define FILLER_RUN (sizeof FILLER - 1 - PERIOD)

/* Writes or compares the filler of offsets [offset, offset + len) against data. */
static bool filler(uint8_t *write, const uint8_t *compare, uint64_t offset, size_t len)
{
    while (len > 0) {
        size_t n = len < FILLER_RUN ? len : FILLER_RUN;
        const char *from = FILLER + offset % PERIOD;
        if (write) {
            memcpy(write, from, n);
            write += n;
        } else {
            if (memcmp(compare, from, n) != 0)
                return false;
            compare += n;
        }
        offset += n;
        len -= n;
    }
    return true;
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
    filler(out + WSL_MESSAGE_HEAD, NULL, WSL_MESSAGE_HEAD, size - WSL_MESSAGE_HEAD);
}

void wsl_message_write_probe(uint8_t *out, size_t size)
{
    memcpy(out, PROBE, sizeof PROBE - 1);
    filler(out + sizeof PROBE - 1, NULL, sizeof PROBE - 1, size - (sizeof PROBE - 1));
}

bool wsl_message_matches_tail(size_t size, uint64_t offset, const uint8_t *data, size_t len)
{
    if (offset > size || len > size - offset)
        return false;
    if (offset + len <= WSL_MESSAGE_HEAD)
        return true;
    size_t skip = offset < WSL_MESSAGE_HEAD ? (size_t)(WSL_MESSAGE_HEAD - offset) : 0;
    return filler(NULL, data + skip, offset + skip, len - skip);
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
