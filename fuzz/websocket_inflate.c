/* libFuzzer target for permessage-deflate (ext/up/engine/websocket/websocket_deflate.c).
 *
 * The first byte picks the options: bits 6-7 the mode, bits 0-2 the window (8 to 15 bits),
 * bit 3 whether the sender may keep its context, bits 4-5 the size limit (64, 1000, 64 KiB,
 * 1 MiB). For modes 0 to 2 the rest is a list of messages, each a 2-byte little-endian length
 * and that many bytes (fewer at the end).
 *
 * Mode 0 inflates the messages as a client's compressed messages, each one whole (one call per
 * message) and cut into pieces (cut points from a hash of the input, each piece in its own
 * exactly-sized block, empty pieces included), through two inflaters, and once more with a
 * large limit. Both ways must give the same result and bytes; a result stays within the limit
 * (a message too big stops at exactly the limit) and agrees with the large limit's; an error
 * sticks. Modes 1 (our deflater keeps its context) and 2 (it does not) compress the messages
 * with our deflater (some as shared broadcasts), inflate them in pieces with the client's
 * parameters, and must get them back. Mode 3 negotiates the rest of the input as the
 * Sec-WebSocket-Extensions lines of a request. */

#include "websocket/websocket_deflate.h"
#include "fuzz.h"

#define BIG_MAX ((size_t)4 << 20)
static const size_t maxes[4] = {64, 1000, 65536, 1 << 20};
#define MAX_LINES 16

typedef struct side_t {
    up_ws_inflater_t inf;
    up_buffer_t out;
    up_ws_inflate_result_t r;
} side_t;

static void side_init(side_t *s, const up_ws_deflate_params_t *p, size_t max)
{
    up_ws_inflater_init(&s->inf, p, max);
    memset(&s->out, 0, sizeof(s->out));
    s->r = UP_WS_INFLATE_OK;
}

static void side_dispose(side_t *s, up_buffer_pool_t *pool)
{
    up_ws_inflater_dispose(&s->inf);
    up_buffer_release(&s->out, pool);
}

/* One call on an exact copy of the piece; checks what the contract says about the output. */
static up_ws_inflate_result_t feed(side_t *s, const uint8_t *p, size_t n, int fin,
                                   up_buffer_pool_t *pool)
{
    char *copy = fuzz_copy(p, n);
    size_t before = s->out.len;
    up_ws_inflate_result_t r = up_ws_inflate(&s->inf, copy, n, fin, &s->out, pool);
    free(copy);
    FUZZ_CHECK(r == UP_WS_INFLATE_OK || r == UP_WS_INFLATE_TOO_BIG || r == UP_WS_INFLATE_BAD_DATA);
    FUZZ_CHECK(s->out.len >= before && s->out.len <= s->inf.max);
    FUZZ_CHECK(s->out.cap <= (s->inf.max > UP_BUFFER_CHUNK ? s->inf.max : UP_BUFFER_CHUNK));
    if (r == UP_WS_INFLATE_TOO_BIG)
        FUZZ_CHECK(s->out.len == s->inf.max);
    return r;
}

static void inflate_mode(const up_ws_deflate_params_t *p, size_t max, const uint8_t *data,
                         size_t size, uint32_t *rng, up_buffer_pool_t *pool)
{
    side_t whole, pieces, big;
    side_init(&whole, p, max);
    side_init(&pieces, p, max);
    side_init(&big, p, BIG_MAX);
    while (size >= 2 && whole.r == UP_WS_INFLATE_OK) {
        size_t len = (size_t)data[0] | (size_t)data[1] << 8;
        data += 2;
        size -= 2;
        if (len > size)
            len = size;
        whole.out.len = pieces.out.len = big.out.len = 0;

        whole.r = feed(&whole, data, len, 1, pool);
        big.r = feed(&big, data, len, 1, pool);
        size_t at = 0;
        do {
            size_t n = fuzz_next(rng) % 8 == 0 ? 0 : fuzz_piece(rng, 64, len - at);
            pieces.r = feed(&pieces, data + at, n, at + n == len, pool);
            at += n;
        } while (pieces.r == UP_WS_INFLATE_OK && at < len);

        FUZZ_CHECK(whole.r == pieces.r);
        /* Bad data is found where zlib finds it, which depends on how the message was cut: the
         * output before it differs, and the caller drops it (the connection fails with 1007). */
        if (whole.r != UP_WS_INFLATE_BAD_DATA) {
            FUZZ_CHECK(whole.out.len == pieces.out.len);
            FUZZ_CHECK(whole.out.len == 0 ||
                       memcmp(whole.out.base, pieces.out.base, whole.out.len) == 0);
        }
        /* The limit changes nothing but where a message too big stops. */
        if (big.r == UP_WS_INFLATE_OK) {
            FUZZ_CHECK(big.out.len > max
                           ? whole.r == UP_WS_INFLATE_TOO_BIG
                           : whole.r == UP_WS_INFLATE_OK && whole.out.len == big.out.len);
        } else if (big.r == UP_WS_INFLATE_BAD_DATA) {
            FUZZ_CHECK(whole.r != UP_WS_INFLATE_OK);
        }
        size_t common = whole.out.len < big.out.len ? whole.out.len : big.out.len;
        FUZZ_CHECK(common == 0 || memcmp(whole.out.base, big.out.base, common) == 0);
        if (whole.r != UP_WS_INFLATE_OK) {
            FUZZ_CHECK(feed(&whole, data, len, 1, pool) == whole.r); /* sticks */
            FUZZ_CHECK(whole.inf._z == NULL);
        }
        if (big.r != UP_WS_INFLATE_OK) { /* its next message would fail anyway: a fresh one */
            up_ws_inflater_dispose(&big.inf);
            up_ws_inflater_init(&big.inf, p, BIG_MAX);
            big.r = UP_WS_INFLATE_OK;
        }
        data += len;
        size -= len;
    }
    side_dispose(&whole, pool);
    side_dispose(&pieces, pool);
    side_dispose(&big, pool);
}

static void round_trip_mode(const up_ws_deflate_params_t *server, const uint8_t *data, size_t size,
                            uint32_t *rng, up_buffer_pool_t *pool)
{
    /* The client's view of the same agreement: it inflates what the server deflates. */
    up_ws_deflate_params_t client = {
        1, server->client_no_context_takeover, server->server_no_context_takeover,
        server->client_max_window_bits, server->server_max_window_bits};
    up_ws_compressor_t c;
    up_ws_deflater_t d;
    side_t s;
    up_buffer_t wire = {0};
    up_ws_compressor_init(&c);
    up_ws_deflater_init(&d, server);
    d.min_size = fuzz_next(rng) % 2 ? 0 : UP_WS_DEFLATE_MIN_SIZE;
    side_init(&s, &client, BIG_MAX);
    while (size >= 2) {
        size_t len = (size_t)data[0] | (size_t)data[1] << 8;
        data += 2;
        size -= 2;
        if (len > size)
            len = size;
        wire.len = 0;
        int compressed;
        if (fuzz_next(rng) % 4 == 0) {
            unsigned bits = 8 + fuzz_next(rng) % 8;
            compressed = up_ws_deflate_accepts_shared(server, bits);
            if (compressed) {
                up_ws_compress(&c, bits, data, len, &wire, pool);
                up_ws_deflater_note_shared(&d);
            }
        } else {
            compressed = up_ws_deflate(&d, &c, data, len, &wire, pool);
        }
        s.out.len = 0;
        if (compressed) {
            size_t at = 0;
            do {
                size_t n = fuzz_piece(rng, 64, wire.len - at);
                s.r = feed(&s, (const uint8_t *)wire.base + at, n, at + n == wire.len, pool);
                at += n;
            } while (s.r == UP_WS_INFLATE_OK && at < wire.len);
            FUZZ_CHECK(s.r == UP_WS_INFLATE_OK);
            FUZZ_CHECK(s.out.len == len && (len == 0 || memcmp(s.out.base, data, len) == 0));
        } else {
            FUZZ_CHECK(wire.len == 0);
        }
        data += len;
        size -= len;
    }
    up_buffer_release(&wire, pool);
    side_dispose(&s, pool);
    up_ws_deflater_dispose(&d);
    up_ws_compressor_dispose(&c);
}

/* The rest of the input as Sec-WebSocket-Extensions field lines (split at '\n', each in its own
 * exactly-sized block), negotiated under a policy from the option bits. What is accepted must
 * be a well-formed answer, and itself an offer we accept. */
static void negotiate_mode(uint8_t opt, const uint8_t *data, size_t size)
{
    up_ws_deflate_policy_t policy = {!(opt & 0x20), opt & 1, (opt >> 1) & 1,
                                     (opt >> 2) & 7 ? 8 + ((opt >> 2) & 7) : 0};
    up_slice_t lines[MAX_LINES];
    size_t n = 0, start = 0;
    for (size_t i = 0; i <= size && n < MAX_LINES; i++) {
        if (i == size || (data[i] == '\n' && n < MAX_LINES - 1)) {
            lines[n++] = up_slice(fuzz_copy(data + start, i - start), i - start);
            start = i + 1;
        }
    }
    up_ws_deflate_params_t p, again;
    char out[UP_WS_DEFLATE_RESPONSE_MAX], out2[UP_WS_DEFLATE_RESPONSE_MAX];
    size_t len = up_ws_deflate_negotiate(&policy, lines, n, &p, out, sizeof(out));
    FUZZ_CHECK(len < sizeof(out) && out[len] == '\0' && strlen(out) == len);
    if (len == 0) {
        FUZZ_CHECK(p.enabled == 0);
    } else {
        FUZZ_CHECK(policy.enabled && p.enabled == 1);
        FUZZ_CHECK(strncmp(out, "permessage-deflate", 18) == 0);
        FUZZ_CHECK(p.server_max_window_bits >= 8 && p.server_max_window_bits <= 15);
        FUZZ_CHECK(p.client_max_window_bits >= 8 && p.client_max_window_bits <= 15);
        FUZZ_CHECK(!policy.server_no_context_takeover || p.server_no_context_takeover);
        FUZZ_CHECK(!policy.client_no_context_takeover || p.client_no_context_takeover);
        up_slice_t answer = up_slice(out, len);
        FUZZ_CHECK(up_ws_deflate_negotiate(&policy, &answer, 1, &again, out2, sizeof(out2)) > 0);
        FUZZ_CHECK(again.server_max_window_bits == p.server_max_window_bits);
    }
    for (size_t i = 0; i < n; i++)
        free((char *)lines[i].base);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t opt = data[0];
    unsigned bits = 8 + (opt & 7);
    int takeover = (opt >> 3) & 1;
    size_t max = maxes[(opt >> 4) & 3];
    uint32_t rng = fuzz_seed(data, size);
    up_buffer_pool_t pool;
    up_buffer_pool_init(&pool);
    if (opt >> 6 == 3) {
        negotiate_mode(opt, data + 1, size - 1);
    } else if (opt >> 6 != 0) {
        /* server side: mode 1 keeps our context, 2 does not; bit 3 the client's */
        up_ws_deflate_params_t server = {1, (unsigned char)(opt >> 7), (unsigned char)!takeover,
                                         (unsigned char)bits, (unsigned char)(23 - bits)};
        round_trip_mode(&server, data + 1, size - 1, &rng, &pool);
    } else {
        up_ws_deflate_params_t p = {1, 0, (unsigned char)!takeover, 15, (unsigned char)bits};
        inflate_mode(&p, max, data + 1, size - 1, &rng, &pool);
    }
    up_buffer_pool_dispose(&pool);
    return 0;
}
