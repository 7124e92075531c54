/* libFuzzer target for the chunked decoder (ext/up/engine/http1/chunked.c).
 *
 * Each input is decoded in one call, then in pieces the way the connection calls it: each
 * piece in its own exactly-sized block; after INCOMPLETE the decoded bytes are kept elsewhere
 * and the input dropped; after success the bytes left in the block, followed by the pieces not
 * yet fed, are the next request. All ways must give the same outcome, body and leftover. Every
 * input runs with and without a body limit, and the two must agree up to the limit. */

#include <sys/types.h>
#include "http1/chunked.h"
#include "fuzz.h"

#define MAX_BODY 1000
/* Inputs up to this size are also fed one byte at a time (one call and one block per byte). */
#define BYTEWISE_MAX 1024

/* What decoding an input came to. body and rest hold up to the input's size. */
typedef struct outcome_t {
    ssize_t ret;
    up_chunked_error_t error;
    uint64_t total;
    char *body;
    size_t body_len;
    char *rest; /* what followed the body, when ret >= 0 */
    size_t rest_len;
} outcome_t;

static void outcome_init(outcome_t *o, size_t size)
{
    memset(o, 0, sizeof(*o));
    o->body = malloc(size + 1);
    o->rest = malloc(size + 1);
    FUZZ_CHECK(o->body != NULL && o->rest != NULL);
}

static void outcome_free(outcome_t *o)
{
    free(o->body);
    free(o->rest);
}

static void decoder_init(up_chunked_decoder_t *d, uint64_t max_body)
{
    memset(d, 0, sizeof(*d));
    d->max_body = max_body;
}

/* One call on one piece, with what the contract promises about where the bytes went. */
static ssize_t decode_piece(up_chunked_decoder_t *d, char *piece, size_t n, size_t *len)
{
    uint64_t before = d->total;
    *len = n;
    ssize_t r = up_chunked_decode(d, piece, len);
    FUZZ_CHECK(r == UP_CHUNKED_INCOMPLETE || r == UP_CHUNKED_ERROR || r >= 0);
    FUZZ_CHECK(*len <= n && d->total == before + *len);
    if (r >= 0)
        FUZZ_CHECK(*len + (size_t)r <= n);
    return r;
}

/* The end state every way of feeding must share. */
static void finish(outcome_t *o, const up_chunked_decoder_t *d, ssize_t ret)
{
    o->ret = ret;
    o->error = d->error;
    o->total = d->total;
    FUZZ_CHECK(o->total == o->body_len);
    FUZZ_CHECK((ret == UP_CHUNKED_ERROR) == (d->error != UP_CHUNKED_E_NONE));
    if (d->max_body != 0)
        FUZZ_CHECK(o->total <= d->max_body);
}

static void decode_whole(const uint8_t *data, size_t size, uint64_t max_body, outcome_t *o)
{
    up_chunked_decoder_t d;
    decoder_init(&d, max_body);
    char *buf = fuzz_copy(data, size);
    size_t len;
    ssize_t r = decode_piece(&d, buf, size, &len);
    memcpy(o->body, buf, len);
    o->body_len = len;
    if (r >= 0) {
        /* the leftover is moved, never changed: it is the input's last r bytes */
        FUZZ_CHECK(memcmp(buf + len, data + size - (size_t)r, (size_t)r) == 0);
        memcpy(o->rest, buf + len, (size_t)r);
        o->rest_len = (size_t)r;
    }
    finish(o, &d, r);
    free(buf);
}

/* Pieces of 1 to span bytes. What a piece decodes to is kept whatever the answer, so an error
 * must also come after the same body bytes. */
static void decode_pieces(const uint8_t *data, size_t size, uint64_t max_body, size_t span,
                          uint32_t *rng, outcome_t *o)
{
    up_chunked_decoder_t d;
    decoder_init(&d, max_body);
    ssize_t r = UP_CHUNKED_INCOMPLETE;
    size_t at = 0;
    while (r == UP_CHUNKED_INCOMPLETE && at < size) {
        size_t n = fuzz_piece(rng, span, size - at), len;
        char *piece = fuzz_copy(data + at, n);
        r = decode_piece(&d, piece, n, &len);
        memcpy(o->body + o->body_len, piece, len);
        o->body_len += len;
        at += n;
        if (r >= 0) {
            memcpy(o->rest, piece + len, (size_t)r);
            memcpy(o->rest + r, data + at, size - at);
            o->rest_len = (size_t)r + size - at;
        }
        free(piece);
    }
    finish(o, &d, r);
    /* an error sticks: the connection may call again before it closes */
    if (r == UP_CHUNKED_ERROR) {
        size_t zero = 0;
        FUZZ_CHECK(up_chunked_decode(&d, o->rest, &zero) == UP_CHUNKED_ERROR && zero == 0);
    }
}

static void check_error(const outcome_t *o)
{
    if (o->ret != UP_CHUNKED_ERROR)
        return;
    int status = up_chunked_error_status(o->error);
    FUZZ_CHECK(status == 400 || status == 413);
    FUZZ_CHECK((status == 413) == (o->error == UP_CHUNKED_E_BODY_TOO_LARGE));
    const char *reason = up_chunked_error_reason(o->error);
    FUZZ_CHECK(reason != NULL && reason[0] != '\0');
}

/* Same outcome, same body, same leftover. An INCOMPLETE answer has no leftover; it is success
 * that must agree on where the body ended. */
static void check_same(const outcome_t *a, const outcome_t *b)
{
    FUZZ_CHECK((a->ret >= 0) == (b->ret >= 0));
    if (a->ret < 0)
        FUZZ_CHECK(a->ret == b->ret);
    FUZZ_CHECK(a->error == b->error && a->total == b->total);
    FUZZ_CHECK(a->body_len == b->body_len && memcmp(a->body, b->body, a->body_len) == 0);
    FUZZ_CHECK(a->rest_len == b->rest_len && memcmp(a->rest, b->rest, a->rest_len) == 0);
}

/* The input through every way of feeding it, under one limit; returns the whole outcome. */
static void decode_all_ways(const uint8_t *data, size_t size, uint64_t max_body, outcome_t *whole)
{
    uint32_t rng = fuzz_seed(data, size);
    outcome_t pieces;
    decode_whole(data, size, max_body, whole);
    check_error(whole);

    outcome_init(&pieces, size);
    decode_pieces(data, size, max_body, size / 2 + 1, &rng, &pieces);
    check_same(whole, &pieces);
    outcome_free(&pieces);

    if (size <= BYTEWISE_MAX) {
        outcome_init(&pieces, size);
        decode_pieces(data, size, max_body, 1, &rng, &pieces);
        check_same(whole, &pieces);
        outcome_free(&pieces);
    }
}

/* The limit only ever turns an answer into 413: short of it, limited and unlimited decoding
 * are the same thing. Past it, the unlimited decoder read on from where the limited one
 * stopped, and it cannot have met an error before crossing the limit itself. */
static void check_limit(const outcome_t *limited, const outcome_t *unlimited)
{
    if (limited->ret != UP_CHUNKED_ERROR || limited->error != UP_CHUNKED_E_BODY_TOO_LARGE) {
        check_same(limited, unlimited);
        return;
    }
    FUZZ_CHECK(unlimited->body_len >= limited->body_len);
    FUZZ_CHECK(memcmp(unlimited->body, limited->body, limited->body_len) == 0);
    FUZZ_CHECK(unlimited->ret != UP_CHUNKED_ERROR || unlimited->total > MAX_BODY);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    outcome_t limited, unlimited;
    outcome_init(&limited, size);
    outcome_init(&unlimited, size);
    decode_all_ways(data, size, MAX_BODY, &limited);
    decode_all_ways(data, size, 0, &unlimited);
    check_limit(&limited, &unlimited);
    outcome_free(&limited);
    outcome_free(&unlimited);
    return 0;
}
