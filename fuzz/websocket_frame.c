/* libFuzzer target for the WebSocket frame reader (ext/up/engine/websocket/websocket_frame.c), with the
 * UTF-8 validator and the close-frame helpers it is used with.
 *
 * The first input byte picks the reader's options: bit 0 permessage-deflate (RSV1 allowed), bit
 * 1 a small message limit (MAX_SMALL) instead of 16 MiB, bit 2 a client reading server frames
 * (unmasked). The rest is fed whole, in pieces of random sizes with the reader asked to stop
 * after random events (then fed again from where it stopped), and one byte at a time when short;
 * each piece in its own exactly-sized heap block. All ways must report the same messages,
 * control frames, error and stop. Along the way:
 *  - every event keeps its promises: opcodes, the compressed flag only with deflate and the same
 *    for a whole message, control payloads of at most 125 bytes, no message past the limit, a
 *    return value within the piece, an error that sticks and a Close that ends the reading;
 *  - a text message's bytes checked piece by piece by up_utf8_validate agree with
 *    up_utf8_valid on the whole message;
 *  - a Close payload that up_ws_parse_close accepts is rebuilt by up_ws_close_payload to the
 *    same code and reason, and anything it refuses gets 1002 or 1007;
 *  - each control frame and each short message, written again with up_ws_frame_header_masked
 *    (or up_ws_frame_header) and up_ws_mask, reads back the same. */

#include <sys/types.h>
#include "fuzz.h"
#include "base/utf8.h"
#include "websocket/websocket_frame.h"

#define MAX_SMALL 300
#define MAX_LARGE (16u << 20)
/* Inputs up to this size are also fed one byte at a time (a call and a block per byte). */
#define BYTEWISE_MAX 1024
/* Messages up to this size are written again and read back. */
#define ROUND_TRIP_MAX 4096

/* What a way of feeding saw: a log of records, compared byte for byte between ways. */
typedef struct outcome_t {
    uint8_t *log;
    size_t log_len, log_cap;
    /* the open message */
    uint8_t *message;
    size_t message_len, message_cap;
    int open, opcode, compressed;
    up_utf8_state_t utf8;
    /* the reader's setup, for the checks */
    unsigned flags;
    uint64_t max_message;
    int closed;
    /* pausing */
    uint32_t *rng;
    int pause_odds; /* stop after an event with odds 1 in pause_odds; 0: never */
} outcome_t;

static void grow(uint8_t **p, size_t *cap, size_t need)
{
    if (need <= *cap)
        return;
    size_t cap2 = *cap ? *cap : 64;
    while (cap2 < need)
        cap2 *= 2;
    *p = realloc(*p, cap2);
    FUZZ_CHECK(*p != NULL);
    *cap = cap2;
}

static void log_add(outcome_t *o, const void *data, size_t n)
{
    grow(&o->log, &o->log_cap, o->log_len + n);
    if (n > 0)
        memcpy(o->log + o->log_len, data, n);
    o->log_len += n;
}

/* A record: a tag, a length, the bytes. */
static void log_record(outcome_t *o, uint8_t tag, const void *data, size_t n)
{
    uint64_t len = n;
    log_add(o, &tag, 1);
    log_add(o, &len, sizeof(len));
    log_add(o, data, n);
}

static void round_trip(const outcome_t *o, int opcode, int rsv1, const uint8_t *payload, size_t n);

static int maybe_pause(outcome_t *o)
{
    return o->pause_odds > 0 && fuzz_next(o->rng) % (uint32_t)o->pause_odds == 0;
}

static int on_data(void *user, int opcode, int compressed, const char *data, size_t len, int fin)
{
    outcome_t *o = user;
    FUZZ_CHECK(!o->closed);
    FUZZ_CHECK(opcode == UP_WS_OP_TEXT || opcode == UP_WS_OP_BINARY);
    FUZZ_CHECK(compressed == 0 || compressed == 1);
    FUZZ_CHECK(!compressed || (o->flags & UP_WS_READER_DEFLATE));
    if (!o->open) {
        o->open = 1;
        o->opcode = opcode;
        o->compressed = compressed;
        o->message_len = 0;
        o->utf8 = UP_UTF8_ACCEPT;
    }
    FUZZ_CHECK(opcode == o->opcode && compressed == o->compressed);
    grow(&o->message, &o->message_cap, o->message_len + len);
    if (len > 0)
        memcpy(o->message + o->message_len, data, len);
    o->message_len += len;
    FUZZ_CHECK(o->message_len <= o->max_message);
    if (opcode == UP_WS_OP_TEXT) {
        size_t r = up_utf8_validate(&o->utf8, data, len);
        FUZZ_CHECK(r <= len && (r == len || up_utf8_failed(o->utf8)));
    }
    if (fin) {
        if (opcode == UP_WS_OP_TEXT) {
            int whole = up_utf8_valid((const char *)o->message, o->message_len);
            FUZZ_CHECK(whole == up_utf8_complete(o->utf8));
        }
        log_record(o, (uint8_t)(opcode << 1 | compressed), o->message, o->message_len);
        round_trip(o, opcode, compressed, o->message, o->message_len);
        o->open = 0;
    }
    return maybe_pause(o);
}

static void check_close(const char *payload, size_t len)
{
    uint16_t code;
    const char *reason;
    size_t reason_len;
    up_ws_error_t e = up_ws_parse_close(payload, len, &code, &reason, &reason_len);
    if (e.code != 0) {
        FUZZ_CHECK(e.code == UP_WS_CLOSE_PROTOCOL_ERROR || e.code == UP_WS_CLOSE_INVALID_PAYLOAD);
        FUZZ_CHECK(e.reason != NULL && e.reason[0] != '\0');
        return;
    }
    FUZZ_CHECK(e.reason == NULL);
    if (len == 0) {
        FUZZ_CHECK(code == UP_WS_CLOSE_NO_STATUS && reason_len == 0);
        return;
    }
    FUZZ_CHECK(up_ws_close_code_valid(code) && reason_len == len - 2 && reason == payload + 2);
    FUZZ_CHECK(up_utf8_valid(reason, reason_len));
    uint8_t rebuilt[UP_WS_MAX_CONTROL_PAYLOAD];
    size_t n = up_ws_close_payload(rebuilt, code, reason, reason_len);
    FUZZ_CHECK(n == len && memcmp(rebuilt, payload, len) == 0);
}

static int on_control(void *user, int opcode, const char *payload, size_t len)
{
    outcome_t *o = user;
    FUZZ_CHECK(!o->closed);
    FUZZ_CHECK(opcode == UP_WS_OP_CLOSE || opcode == UP_WS_OP_PING || opcode == UP_WS_OP_PONG);
    FUZZ_CHECK(len <= UP_WS_MAX_CONTROL_PAYLOAD);
    log_record(o, (uint8_t)(0x10 | opcode), payload, len);
    if (opcode == UP_WS_OP_CLOSE) {
        check_close(payload, len);
        o->closed = 1;
    }
    round_trip(o, opcode, 0, (const uint8_t *)payload, len);
    return maybe_pause(o);
}

static const up_ws_reader_callbacks_t callbacks = {on_data, on_control};

/* ---- Writing it again ---- */

typedef struct echo_t {
    const uint8_t *want;
    size_t want_len, got_len;
    int opcode, events;
} echo_t;

static int echo_on_data(void *user, int opcode, int compressed, const char *data, size_t len, int fin)
{
    echo_t *e = user;
    (void)compressed;
    FUZZ_CHECK(opcode == e->opcode && e->got_len + len <= e->want_len);
    FUZZ_CHECK(len == 0 || memcmp(data, e->want + e->got_len, len) == 0);
    e->got_len += len;
    e->events += fin;
    return 0;
}

static int echo_on_control(void *user, int opcode, const char *payload, size_t len)
{
    echo_t *e = user;
    FUZZ_CHECK(opcode == e->opcode && len == e->want_len);
    FUZZ_CHECK(len == 0 || memcmp(payload, e->want, len) == 0);
    e->got_len = len;
    e->events++;
    return 0;
}

static void round_trip(const outcome_t *o, int opcode, int rsv1, const uint8_t *payload, size_t n)
{
    static const up_ws_reader_callbacks_t echo_callbacks = {echo_on_data, echo_on_control};
    int from_server = (o->flags & UP_WS_READER_FROM_SERVER) != 0;
    uint8_t header[UP_WS_MAX_HEADER];
    uint8_t key[4] = {(uint8_t)n, (uint8_t)(n >> 8), 0x5a, (uint8_t)opcode};
    size_t hl;

    if (n > ROUND_TRIP_MAX)
        return;
    hl = from_server ? up_ws_frame_header(header, 1, rsv1, opcode, n)
                     : up_ws_frame_header_masked(header, 1, rsv1, opcode, n, key);
    FUZZ_CHECK(hl >= 2 && hl <= UP_WS_MAX_HEADER);
    char *frame = malloc(hl + n + 1);
    FUZZ_CHECK(frame != NULL);
    memcpy(frame, header, hl);
    if (n > 0)
        memcpy(frame + hl, payload, n);
    if (!from_server) {
        /* in two pieces, to mask across a key boundary */
        size_t half = n / 2 + (n & 1);
        up_ws_mask(frame + hl, half, key, 0);
        up_ws_mask(frame + hl + half, n - half, key, half);
    }
    echo_t e = {payload, n, 0, opcode, 0};
    up_ws_reader_t r;
    up_ws_reader_init(&r, &echo_callbacks, &e, 0, o->flags);
    ssize_t got = up_ws_read(&r, frame, hl + n);
    FUZZ_CHECK(got == (ssize_t)(hl + n) && e.events == 1 && e.got_len == n);
    free(frame);
}

/* ---- Feeding ---- */

static void outcome_init(outcome_t *o, unsigned flags, uint64_t max, uint32_t *rng, int pause_odds)
{
    memset(o, 0, sizeof(*o));
    o->flags = flags;
    o->max_message = max;
    o->rng = rng;
    o->pause_odds = pause_odds;
}

static void outcome_free(outcome_t *o)
{
    free(o->log);
    free(o->message);
}

/* Feeds data[0..size) in pieces of 1 to span bytes (0: in one piece); records the end: an
 * error, or a Close with what was left unread, or a message still open. */
static void feed(outcome_t *o, const uint8_t *data, size_t size, size_t span, uint32_t *rng)
{
    up_ws_reader_t r;
    size_t at = 0;
    int done = 0;

    up_ws_reader_init(&r, &callbacks, o, o->max_message, o->flags);
    while (at < size && !done) {
        size_t n = span == 0 ? size : fuzz_piece(rng, span, size - at), used = 0;
        char *piece = fuzz_copy(data + at, n);
        while (used < n) {
            ssize_t got = up_ws_read(&r, piece + used, n - used);
            if (got == UP_WS_ERROR) {
                FUZZ_CHECK(r.state == UP_WS_READ_FAILED && r.error.code != 0 && r.error.reason != NULL);
                FUZZ_CHECK(r.error.code == UP_WS_CLOSE_PROTOCOL_ERROR ||
                           r.error.code == UP_WS_CLOSE_MESSAGE_TOO_BIG);
                FUZZ_CHECK(up_ws_read(&r, piece, n) == UP_WS_ERROR);
                log_record(o, 0x40, &r.error.code, sizeof(r.error.code));
                done = 1;
                break;
            }
            FUZZ_CHECK(got >= 0 && (size_t)got <= n - used);
            used += (size_t)got;
            if (r.state == UP_WS_READ_CLOSED) {
                FUZZ_CHECK(o->closed);
                FUZZ_CHECK(up_ws_read(&r, piece, n) == 0);
                uint64_t unread = size - at - used;
                log_record(o, 0x41, &unread, sizeof(unread));
                done = 1;
                break;
            }
            /* short only when asked to stop, and then after at least one byte */
            FUZZ_CHECK(used == n || (o->pause_odds > 0 && got > 0));
        }
        at += n;
        free(piece);
    }
    /* (a message begins at its first header; the first event may not have come yet) */
    if (o->open && r.state != UP_WS_READ_FAILED)
        FUZZ_CHECK(up_ws_reader_in_message(&r));
    if (o->open)
        log_record(o, 0x42, o->message, o->message_len);
}

static void check_same(const outcome_t *a, const outcome_t *b)
{
    FUZZ_CHECK(a->log_len == b->log_len);
    FUZZ_CHECK(a->log_len == 0 || memcmp(a->log, b->log, a->log_len) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    unsigned options = data[0];
    unsigned flags = (options & 1 ? UP_WS_READER_DEFLATE : 0) | (options & 4 ? UP_WS_READER_FROM_SERVER : 0);
    uint64_t max = options & 2 ? MAX_SMALL : MAX_LARGE;
    data++, size--;

    uint32_t rng = fuzz_seed(data, size);
    outcome_t whole, other;
    outcome_init(&whole, flags, max, &rng, 0);
    feed(&whole, data, size, 0, &rng);

    outcome_init(&other, flags, max, &rng, 3);
    feed(&other, data, size, size / 2 + 1, &rng);
    check_same(&whole, &other);
    outcome_free(&other);

    if (size <= BYTEWISE_MAX) {
        outcome_init(&other, flags, max, &rng, 0);
        feed(&other, data, size, 1, &rng);
        check_same(&whole, &other);
        outcome_free(&other);
    }
    outcome_free(&whole);
    return 0;
}
