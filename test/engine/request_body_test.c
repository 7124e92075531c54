/* The request body store: what a client declares (Content-Length) never sizes memory past a
 * small bound; the buffer grows with the bytes that really came, and moves to a temporary file
 * at the spool threshold. */

#include <stdint.h>
#include "base/buffer.h"
#include "http1/request_body.h"
#include "test.h"

#define THRESHOLD (1024 * 1024)

static void test_declared_length_does_not_size_the_buffer(void)
{
    static const struct {
        const char *name;
        uint64_t declared;
        uint64_t threshold;
    } cases[] = {
        {"2^62 with no spooling in sight", UINT64_C(1) << 62, UINT64_MAX},
        {"1e9 under the default threshold", 1000000000, THRESHOLD},
        {"just over the presize bound", UP_REQUEST_BODY_MAX_PRESIZE + 1, THRESHOLD},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        up_buffer_pool_t pool;
        up_request_body_t body;
        up_buffer_pool_init(&pool);
        up_request_body_init(&body);
        int r = up_request_body_append(&body, &pool, "x", 1, cases[i].declared,
                                       cases[i].threshold, "/tmp");
        CHECK(r == 0, "%s: append failed", cases[i].name);
        CHECK(body.len == 1 && body.fd < 0, "%s: one byte in memory", cases[i].name);
        CHECK(body._buf.cap <= UP_REQUEST_BODY_MAX_PRESIZE, "%s: reserved %zu bytes for one",
              cases[i].name, body._buf.cap);
        CHECK(body.mem != NULL && body.mem[0] == 'x', "%s: the byte kept", cases[i].name);
        up_request_body_reset(&body, &pool);
        up_buffer_pool_dispose(&pool);
    }
}

/* Never more than the spool threshold, even under the presize bound. */
static void test_presize_stops_at_the_spool_threshold(void)
{
    up_buffer_pool_t pool;
    up_request_body_t body;
    up_buffer_pool_init(&pool);
    up_request_body_init(&body);
    uint64_t threshold = UP_BUFFER_CHUNK * 2;
    CHECK(up_request_body_append(&body, &pool, "x", 1, UP_REQUEST_BODY_MAX_PRESIZE, threshold,
                                 "/tmp") == 0,
          "append");
    CHECK(body._buf.cap <= threshold, "reserved %zu past a threshold of %llu", body._buf.cap,
          (unsigned long long)threshold);
    up_request_body_reset(&body, &pool);
    up_buffer_pool_dispose(&pool);
}

/* A small declared body still gets its buffer once, so its pieces are never copied again. */
static void test_small_declared_body_is_sized_once(void)
{
    enum { LEN = 40000, PIECE = 1000 };
    static char data[LEN];
    for (size_t i = 0; i < LEN; i++)
        data[i] = (char)('a' + i % 26);
    up_buffer_pool_t pool;
    up_request_body_t body;
    up_buffer_pool_init(&pool);
    up_request_body_init(&body);
    const char *first = NULL;
    int moved = 0;
    for (size_t at = 0; at < LEN; at += PIECE) {
        CHECK(up_request_body_append(&body, &pool, data + at, PIECE, LEN, THRESHOLD, "/tmp") == 0,
              "append at %zu", at);
        if (first == NULL)
            first = body.mem;
        moved |= body.mem != first;
    }
    CHECK(!moved, "the buffer was reallocated while a %d-byte body came in", LEN);
    CHECK(body.len == LEN && memcmp(body.mem, data, LEN) == 0, "the body as sent");
    up_request_body_reset(&body, &pool);
    up_buffer_pool_dispose(&pool);
}

/* A body that keeps coming grows its buffer with the bytes, then moves to a file. */
static void test_body_grows_with_its_bytes_then_spools(void)
{
    enum { PIECE = 4096 };
    static char piece[PIECE];
    memset(piece, 'y', sizeof(piece));
    up_buffer_pool_t pool;
    up_request_body_t body;
    up_buffer_pool_init(&pool);
    up_request_body_init(&body);
    uint64_t declared = UINT64_C(1) << 40;
    size_t max_cap = 0;
    while (body.fd < 0 && body.len < 2 * THRESHOLD) {
        CHECK(up_request_body_append(&body, &pool, piece, PIECE, declared, THRESHOLD, "/tmp") == 0,
              "append at %llu", (unsigned long long)body.len);
        if (body.fd < 0) {
            CHECK(body._buf.cap <= 2 * body.len || body._buf.cap <= UP_REQUEST_BODY_MAX_PRESIZE,
                  "%zu bytes reserved for %llu", body._buf.cap, (unsigned long long)body.len);
            if (body._buf.cap > max_cap)
                max_cap = body._buf.cap;
        }
    }
    CHECK(body.fd >= 0, "spooled past the threshold");
    CHECK(body.len <= THRESHOLD + PIECE, "spooled at %llu bytes", (unsigned long long)body.len);
    CHECK(max_cap <= THRESHOLD, "the buffer reached %zu bytes", max_cap);
    up_request_body_reset(&body, &pool);
    up_buffer_pool_dispose(&pool);
}

int main(void)
{
    test_declared_length_does_not_size_the_buffer();
    test_presize_stops_at_the_spool_threshold();
    test_small_declared_body_is_sized_once();
    test_body_grows_with_its_bytes_then_spools();
    return test_report("request_body");
}
