/* Throughput and memory of permessage-deflate (ext/up/engine/websocket/websocket_deflate.c), on its own:
 * no sockets, one thread. Messages are JSON like a chat or a feed sends: 512-byte objects that
 * differ in their values, and 64 KiB arrays of them.
 *
 * For each size it compresses and inflates a stream of different messages, with an empty
 * window per message (a broadcast, or a connection with no_context_takeover) and with context
 * takeover, and prints MB/s of uncompressed bytes (the median of 5 runs of about 0.3 s each,
 * after a warm-up run) and the compressed size (with context: once the window holds earlier
 * messages). Then the memory a connection holds between messages in each mode, from
 * mallinfo2() over 1,000 connections. From the repository's root:
 *
 *   cc -O2 -std=gnu11 -Iext/up/engine -o /tmp/websocket_deflate_bench \
 *      bench/websocket_deflate.c ext/up/engine/websocket/websocket_deflate.c \
 *      ext/up/engine/base/buffer.c ext/up/engine/base/memory.c -lz -lpthread
 *   /tmp/websocket_deflate_bench
 */

#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>
#include "websocket/websocket_deflate.h"

#define VARIANTS 256
#define RUNS 5
#define RUN_SECONDS 0.3
#define CONNECTIONS 1000

static up_buffer_pool_t pool;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One chat message of exactly 512 bytes, its values picked by i: some 200 bytes of text from a
 * small vocabulary, ids, a timestamp and an opaque token that fills it up. */
static void json_512(char *dst, unsigned i)
{
    static const char *names[] = {"alice", "bob", "carol", "dave", "erin", "frank"};
    static const char *words[] = {
        "the",  "deploy", "went", "fine",   "but", "latency", "on",  "eu-west", "doubled", "after",
        "noon", "so",     "I",    "rolled", "it",  "back",    "and", "paged",   "ops"};
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    uint32_t x = 2463534242u ^ (i * 2654435761u);
    char text[400];
    size_t n = 0;
    while (n < 200) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        n += (size_t)snprintf(text + n, sizeof(text) - n, "%s ",
                              words[x % (sizeof(words) / sizeof(words[0]))]);
    }
    text[n - 1] = '\0';
    int len =
        snprintf(dst, 600,
                 "{\"type\":\"message\",\"id\":%u,\"channel\":\"room-%u\",\"user\":{\"id\":%u,"
                 "\"name\":\"%s\",\"avatar\":\"https://cdn.example.com/u/%u.png\"},"
                 "\"sent_at\":\"2024-05-%02uT12:%02u:%02u.%03uZ\",\"text\":\"%s\","
                 "\"reactions\":[],\"token\":\"",
                 100000 + i * 7919, i % 12, 4000 + i % 97, names[i % 6], 4000 + i % 97, 1 + i % 28,
                 i % 60, (i * 13) % 60, (i * 37) % 1000, text);
    for (; len < 510; len++) { /* an opaque token: random base64 */
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        dst[len] = b64[x % 64];
    }
    memcpy(dst + 510, "\"}", 2);
}

typedef struct messages_t {
    char *data[VARIANTS];
    size_t len;
} messages_t;

static void messages_make(messages_t *m, size_t len)
{
    m->len = len;
    for (unsigned v = 0; v < VARIANTS; v++) {
        m->data[v] = malloc(len);
        char one[600];
        for (size_t at = 0, k = 0; at < len; at += 512, k++) {
            json_512(one, v * 131 + (unsigned)k);
            if (len > 512) /* an array of objects: [ {..}, {..} ... ] with ',' in between */
                one[0] = k == 0 ? '[' : ',';
            memcpy(m->data[v] + at, one, len - at < 512 ? len - at : 512);
        }
        if (len > 512)
            m->data[v][len - 1] = ']';
    }
}

static void messages_free(messages_t *m)
{
    for (unsigned v = 0; v < VARIANTS; v++)
        free(m->data[v]);
}

/* The compressed messages of one variant cycle, as a client would send them. */
typedef struct wire_t {
    up_buffer_t buf[VARIANTS];
    size_t total_in, total_out;
} wire_t;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Runs step() over the variants until RUN_SECONDS pass; returns MB/s of uncompressed bytes. */
typedef void (*step_fn)(void *ctx, unsigned v);

static double measure(step_fn step, void *ctx, size_t bytes_per_step)
{
    double runs[RUNS];
    for (int r = -1; r < RUNS; r++) {
        size_t steps = 0;
        double start = now(), elapsed;
        do {
            for (unsigned v = 0; v < VARIANTS; v++)
                step(ctx, v);
            steps += VARIANTS;
            elapsed = now() - start;
        } while (elapsed < RUN_SECONDS);
        if (r >= 0)
            runs[r] = (double)steps * (double)bytes_per_step / elapsed / 1e6;
    }
    qsort(runs, RUNS, sizeof(runs[0]), cmp_double);
    return runs[RUNS / 2];
}

typedef struct deflate_ctx_t {
    const messages_t *m;
    up_ws_compressor_t c;
    up_ws_deflater_t d;
    up_buffer_t out;
    int alone;
} deflate_ctx_t;

static void deflate_step(void *p, unsigned v)
{
    deflate_ctx_t *x = p;
    x->out.len = 0;
    if (x->alone)
        up_ws_compress(&x->c, 15, x->m->data[v], x->m->len, &x->out, &pool);
    else
        up_ws_deflate(&x->d, &x->c, x->m->data[v], x->m->len, &x->out, &pool);
}

typedef struct inflate_ctx_t {
    const wire_t *w;
    up_ws_inflater_t inf;
    up_buffer_t out;
} inflate_ctx_t;

static void inflate_step(void *p, unsigned v)
{
    inflate_ctx_t *x = p;
    x->out.len = 0;
    if (up_ws_inflate(&x->inf, x->w->buf[v].base, x->w->buf[v].len, 1, &x->out, &pool) !=
        UP_WS_INFLATE_OK) {
        fprintf(stderr, "inflate failed\n");
        exit(1);
    }
}

static void bench_size(size_t len)
{
    messages_t m;
    messages_make(&m, len);
    for (int takeover = 0; takeover <= 1; takeover++) {
        up_ws_deflate_params_t server = {1, (unsigned char)!takeover, (unsigned char)!takeover, 15,
                                         15};
        /* compress: a broadcast (compressor) or a connection with its context */
        deflate_ctx_t d = {.m = &m, .alone = !takeover};
        up_ws_compressor_init(&d.c);
        up_ws_deflater_init(&d.d, &server);
        d.d.min_size = 0;
        double deflate_mbs = measure(deflate_step, &d, len);

        /* the compressed messages of one cycle, in order, for the inflater */
        wire_t w = {0};
        up_ws_deflater_t fresh;
        up_ws_deflater_init(&fresh, &server);
        fresh.min_size = 0;
        up_ws_compressor_t c;
        up_ws_compressor_init(&c);
        for (unsigned v = 0; v < VARIANTS; v++) {
            if (takeover)
                up_ws_deflate(&fresh, &c, m.data[v], len, &w.buf[v], &pool);
            else
                up_ws_compress(&c, 15, m.data[v], len, &w.buf[v], &pool);
        }
        inflate_ctx_t x = {.w = &w};
        up_ws_inflater_init(&x.inf, &server, 1 << 24);
        double inflate_mbs = 0;
        if (!takeover) {
            inflate_mbs = measure(inflate_step, &x, len);
        } else {
            /* With context a message can only be inflated after the ones before it. The
             * inflater reads the first cycle; the deflater then compresses the cycle again,
             * with the same cycle in its window as every later replay will find in the
             * inflater's: the second cycle's bytes can be inflated over and over. */
            for (unsigned v = 0; v < VARIANTS; v++)
                inflate_step(&x, v);
            for (unsigned v = 0; v < VARIANTS; v++) {
                w.buf[v].len = 0;
                up_ws_deflate(&fresh, &c, m.data[v], len, &w.buf[v], &pool);
            }
            inflate_mbs = measure(inflate_step, &x, len);
        }
        for (unsigned v = 0; v < VARIANTS; v++) {
            w.total_in += len;
            w.total_out += w.buf[v].len;
        }
        printf("| %6zu B | %-22s | %8.1f | %8.1f | %6.1f %% |\n", len,
               takeover ? "context takeover" : "no context (shared)", deflate_mbs, inflate_mbs,
               100.0 * (double)w.total_out / (double)w.total_in);

        for (unsigned v = 0; v < VARIANTS; v++)
            up_buffer_release(&w.buf[v], &pool);
        up_buffer_release(&d.out, &pool);
        up_buffer_release(&x.out, &pool);
        up_ws_inflater_dispose(&x.inf);
        up_ws_deflater_dispose(&fresh);
        up_ws_deflater_dispose(&d.d);
        up_ws_compressor_dispose(&d.c);
        up_ws_compressor_dispose(&c);
    }
    messages_free(&m);
}

/* Bytes held by CONNECTIONS connections between messages, after each sent and received one
 * compressed message, per connection. */
static void bench_memory(void)
{
    messages_t m;
    messages_make(&m, 512);
    for (int takeover = 0; takeover <= 1; takeover++) {
        up_ws_deflate_params_t server = {1, (unsigned char)!takeover, (unsigned char)!takeover, 15,
                                         15};
        up_ws_compressor_t c;
        up_ws_compressor_init(&c);
        up_buffer_t wire = {0}, out = {0};
        up_ws_compress(&c, 15, m.data[0], 512, &wire,
                       &pool); /* the thread's compressor, made once */
        static up_ws_inflater_t inf[CONNECTIONS];
        static up_ws_deflater_t def[CONNECTIONS];
        malloc_trim(0);
        size_t before = mallinfo2().uordblks;
        for (int i = 0; i < CONNECTIONS; i++) {
            up_ws_inflater_init(&inf[i], &server, 1 << 20);
            up_ws_deflater_init(&def[i], &server);
            out.len = 0;
            if (up_ws_inflate(&inf[i], wire.base, wire.len, 1, &out, &pool) != UP_WS_INFLATE_OK)
                exit(1);
            out.len = 0;
            up_ws_deflate(&def[i], &c, m.data[i % VARIANTS], 512, &out, &pool);
        }
        size_t after = mallinfo2().uordblks;
        printf("| %-22s | %8.1f KiB |\n", takeover ? "context takeover" : "no context",
               (double)(after - before) / CONNECTIONS / 1024.0);
        for (int i = 0; i < CONNECTIONS; i++) {
            up_ws_inflater_dispose(&inf[i]);
            up_ws_deflater_dispose(&def[i]);
        }
        up_buffer_release(&wire, &pool);
        up_buffer_release(&out, &pool);
        up_ws_compressor_dispose(&c);
    }
    up_ws_compressor_t c;
    up_ws_compressor_init(&c);
    up_buffer_t out = {0};
    malloc_trim(0);
    size_t before = mallinfo2().uordblks;
    up_ws_compress(&c, 15, m.data[0], 512, &out, &pool);
    up_buffer_release(&out, &pool);
    printf("| the thread's compressor, 15 bits | %8.1f KiB |\n",
           (double)(mallinfo2().uordblks - before) / 1024.0);
    up_ws_compressor_dispose(&c);
    messages_free(&m);
}

int main(void)
{
    up_buffer_pool_init(&pool);
    printf("zlib %s, level %d, memLevel %d (compressor) and %d (a connection's context), 15-bit "
           "windows\n\n",
           zlibVersion(), UP_WS_DEFLATE_LEVEL, UP_WS_DEFLATE_MEM_LEVEL,
           UP_WS_DEFLATE_CONTEXT_MEM_LEVEL);
    printf(
        "| message | mode | deflate MB/s | inflate MB/s | compressed |\n|---|---|---|---|---|\n");
    bench_size(512);
    bench_size(65536);
    printf("\n| memory per connection between messages | |\n|---|---|\n");
    bench_memory();
    up_buffer_pool_dispose(&pool);
    return 0;
}
