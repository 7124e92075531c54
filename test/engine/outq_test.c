/* Tests for the output queue (outq.c). Most cases are scripts run against a model: each
 * appends owned bytes, shared slices and file ranges, marks, truncates, writes and clears,
 * while the test keeps the bytes the queue should hold in a plain string. At the end the
 * queue is written out and must give exactly the model's bytes, every shared slice must have
 * been disposed exactly once and every file closed. Each script runs through a transport
 * that takes everything, one that takes 1000 bytes a call and one that takes a byte a call,
 * so every boundary between segments is crossed mid-write. Then the real thing: a socketpair
 * with a small send buffer, a reader draining it in steps, and a peer that leaves. */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/socket.h>
#include "core/conn.h"
#include "engine_harness.h"
#include "core/outq.h"
#include "test.h"

/* ---------------------------------------------------------------- a transport that records */

/* What the fake transport took, and how it takes it. */
typedef struct fake_t {
    char *got;
    size_t len, cap;
    size_t per_call; /* at most this many bytes a call; 0: no limit */
    size_t window;   /* bytes it takes before saying "would block" (then refilled by tests) */
    int calls;
    int max_iovcnt;
} fake_t;

static fake_t fake;

static void fake_reset(size_t per_call)
{
    free(fake.got);
    memset(&fake, 0, sizeof(fake));
    fake.per_call = per_call;
    fake.window = SIZE_MAX;
}

static void fake_take(const char *src, size_t n)
{
    if (fake.len + n > fake.cap) {
        fake.cap = (fake.len + n) * 2 + 1024;
        fake.got = realloc(fake.got, fake.cap);
        if (fake.got == NULL)
            exit(2);
    }
    memcpy(fake.got + fake.len, src, n);
    fake.len += n;
    fake.window -= n;
}

static size_t fake_budget(size_t want)
{
    size_t n = want;
    if (fake.per_call != 0 && n > fake.per_call)
        n = fake.per_call;
    if (n > fake.window)
        n = fake.window;
    return n;
}

static ssize_t fake_writev(up_conn_t *conn, const struct iovec *iov, int iovcnt)
{
    (void)conn;
    fake.calls++;
    if (iovcnt > fake.max_iovcnt)
        fake.max_iovcnt = iovcnt;
    size_t want = 0;
    for (int i = 0; i < iovcnt; i++)
        want += iov[i].iov_len;
    size_t budget = fake_budget(want);
    if (budget == 0 && want > 0)
        return UP_IO_AGAIN;
    size_t done = 0;
    for (int i = 0; i < iovcnt && done < budget; i++) {
        size_t n = iov[i].iov_len < budget - done ? iov[i].iov_len : budget - done;
        fake_take(iov[i].iov_base, n);
        done += n;
    }
    return (ssize_t)done;
}

static ssize_t fake_sendfile(up_conn_t *conn, int fd, off_t *offset, size_t len)
{
    (void)conn;
    fake.calls++;
    size_t budget = fake_budget(len);
    if (budget == 0 && len > 0)
        return UP_IO_AGAIN;
    char buf[65536];
    if (budget > sizeof(buf))
        budget = sizeof(buf);
    ssize_t n = pread(fd, buf, budget, *offset);
    if (n < 0)
        return UP_IO_ERROR;
    fake_take(buf, (size_t)n);
    *offset += n;
    return n;
}

static const up_transport_t fake_transport = {
    .name = "fake",
    .writev = fake_writev,
    .sendfile = fake_sendfile,
};

/* ---------------------------------------------------------------- shared slices, files */

#define MAX_SHARED 64

/* A shared slice that owns a copy of its bytes and counts its disposals. */
typedef struct test_shared_t {
    up_shared_t shared; /* first: dispose gets this pointer */
    int id;
} test_shared_t;

static int disposed[MAX_SHARED];
static int num_shared;

static void test_shared_dispose(up_shared_t *shared)
{
    test_shared_t *ts = (test_shared_t *)shared;
    disposed[ts->id]++;
    free((char *)shared->base);
    free(ts);
}

/* A new shared slice holding a copy of len bytes; the caller has its one reference. */
static up_shared_t *shared_new(const char *data, size_t len)
{
    test_shared_t *ts = calloc(1, sizeof(*ts));
    char *copy = malloc(len + 1);
    if (ts == NULL || copy == NULL || num_shared == MAX_SHARED)
        exit(2);
    memcpy(copy, data, len);
    ts->id = num_shared++;
    disposed[ts->id] = 0;
    up_shared_init(&ts->shared, copy, len, test_shared_dispose);
    return &ts->shared;
}

static void shared_reset(void)
{
    num_shared = 0;
}

static int fd_is_open(int fd)
{
    return fcntl(fd, F_GETFD) != -1 || errno != EBADF;
}

/* ---------------------------------------------------------------- scripts */

/* A script is space-separated steps; a step may end in "*N" to repeat it N times.
 *   b<text>  append owned bytes          B<n>  append n pattern bytes
 *   r<n>/<k> reserve n, commit k of them  s<text>, S<n>  a shared slice (from offset 2)
 *   f<text>, F<n>  a file range (from offset 3 of the file)
 *   m        take the mark                t     truncate to the mark
 *   w<n>     write at most n bytes: exactly min(n, pending) must go out
 *   c        clear
 * The model is what the queue should still write, after what it wrote already. */
typedef struct script_case_t {
    const char *name;
    const char *script;
} script_case_t;

static const script_case_t script_cases[] = {
    {"owned bytes come out in order", "bhello b, bworld"},
    {"many small appends cross chunk boundaries", "bsmall!*6000"},
    {"an append bigger than a chunk", "B40000"},
    {"appends of a chunk, just under and just over", "B16384 B16383 B16385 bend"},
    {"reserve then commit what was used", "r100/10 r20000/20000 r50/0 bafter"},
    {"a shared slice", "sshared-bytes"},
    {"a file range from an offset", "ffile-bytes"},
    {"big shared slice and file range", "S70000 F70000"},
    {"kinds mixed keep their order", "babc sdef fghi bjkl F40000 S20000 bend"},
    {"empty shared slice and file range add nothing", "ba s f bb"},
    {"truncate on an empty queue drops everything", "m bA sB fC B20000 t"},
    {"truncate keeps what came before the mark", "bhead m btail t"},
    {"truncate rolls back bytes in the same tail chunk", "bhead m bX*100 t bafter"},
    {"truncate after an append spilled into new chunks", "bhead m B40000 sx fy bz t bafter"},
    {"truncate with the mark on a shared slice", "bone sshared m bafter S100 t bnext"},
    {"truncate with the mark on a file range", "ffile m bafter F100 t bnext"},
    {"truncate after the head was partly written", "B30000 w10000 m bX sY t bZ"},
    {"truncate then append, twice", "ba m bb t bc m bd t be"},
    {"write caps at max", "B50000 w1 w999 w0 w16384 sX w3 fY w100000"},
    {"writes across kinds", "bab sc fd be w2 w1 w1 w1"},
    {"clear drops the unwritten rest", "B30000 w5000 sX fY c"},
    {"clear then reuse", "bA sB c bC fD"},
};

typedef struct model_t {
    char *bytes;
    size_t len, cap;
    size_t written; /* prefix of bytes already written */
    size_t mark;    /* model length at the mark */
    int fds[MAX_SHARED];
    int num_fds;
} model_t;

static void model_add(model_t *m, const char *data, size_t len)
{
    if (m->len + len > m->cap) {
        m->cap = (m->len + len) * 2 + 1024;
        m->bytes = realloc(m->bytes, m->cap);
        if (m->bytes == NULL)
            exit(2);
    }
    memcpy(m->bytes + m->len, data, len);
    m->len += len;
}

/* Runs one step; returns 0, or -1 with a check failed. */
static int run_step(const script_case_t *c, const char *how, const char *step, size_t step_len,
                    up_outq_t *q, up_buffer_pool_t *pool, up_outq_mark_t *mark, model_t *m)
{
    char arg[256];
    size_t arg_len = step_len - 1;
    if (arg_len >= sizeof(arg))
        exit(2);
    memcpy(arg, step + 1, arg_len);
    arg[arg_len] = '\0';
    size_t n = strtoul(arg, NULL, 10);
    char *data = NULL;
    if (step[0] == 'B' || step[0] == 'S' || step[0] == 'F') {
        data = malloc(n + 1);
        harness_pattern(data, n, m->len);
    } else if (step[0] == 'b' || step[0] == 's' || step[0] == 'f') {
        data = strdup(arg);
        n = arg_len;
    }
    switch (step[0]) {
    case 'b':
    case 'B':
        up_outq_append(q, pool, data, n);
        model_add(m, data, n);
        break;
    case 'r': {
        size_t k = strtoul(strchr(arg, '/') + 1, NULL, 10);
        char *p = up_outq_reserve(q, pool, n);
        char *fill = malloc(n + 1);
        harness_pattern(fill, n, m->len);
        memcpy(p, fill, n);
        up_outq_commit(q, k);
        model_add(m, fill, k);
        free(fill);
        break;
    }
    case 's':
    case 'S': {
        /* Two bytes before and after the slice, so the offset matters. */
        char *wide = malloc(n + 5);
        memcpy(wide, "<<", 2);
        memcpy(wide + 2, data, n);
        memcpy(wide + 2 + n, ">>", 3);
        up_shared_t *shared = shared_new(wide, n + 4);
        up_outq_append_shared(q, shared, 2, n);
        up_shared_release(shared); /* the queue's reference is the last */
        model_add(m, data, n);
        free(wide);
        break;
    }
    case 'f':
    case 'F': {
        char *wide = malloc(n + 6);
        memcpy(wide, "###", 3);
        memcpy(wide + 3, data, n);
        memcpy(wide + 3 + n, "###", 3);
        int fd = harness_temp_file(wide, n + 6);
        m->fds[m->num_fds++] = fd;
        up_outq_append_file(q, fd, 3, n);
        model_add(m, data, n);
        free(wide);
        break;
    }
    case 'm':
        *mark = up_outq_mark(q);
        m->mark = m->len;
        break;
    case 't':
        up_outq_truncate(q, pool, *mark);
        m->len = m->mark;
        break;
    case 'w': {
        size_t pending = m->len - m->written;
        size_t expect = n < pending ? n : pending;
        size_t before = fake.len;
        int64_t r = up_outq_write(q, pool, &fake_transport, NULL, n);
        int ok = r == (int64_t)expect && fake.len - before == expect &&
                 (expect == 0 || memcmp(fake.got + before, m->bytes + m->written, expect) == 0);
        m->written += expect;
        if (!ok) {
            CHECK(ok, "%s (%s): step %.*s wrote %lld, expected %zu", c->name, how, (int)step_len,
                  step, (long long)r, expect);
            free(data);
            return -1;
        }
        break;
    }
    case 'c':
        up_outq_clear(q, pool);
        m->len = m->written;
        break;
    default: fprintf(stderr, "%s: unknown step %.*s\n", c->name, (int)step_len, step); exit(2);
    }
    free(data);
    uint64_t pending = q->bytes + q->file_bytes;
    if (pending != m->len - m->written) {
        CHECK(pending == m->len - m->written,
              "%s (%s): after step %.*s the queue holds %llu, expected %zu", c->name, how,
              (int)step_len, step, (unsigned long long)pending, m->len - m->written);
        return -1;
    }
    return 0;
}

static void run_script(const script_case_t *c, size_t per_call, const char *how)
{
    up_buffer_pool_t pool;
    up_buffer_pool_init(&pool);
    up_outq_t q;
    up_outq_init(&q);
    up_outq_mark_t mark = up_outq_mark(&q);
    model_t m = {0};
    fake_reset(per_call);
    shared_reset();

    int ok = 1;
    for (const char *p = c->script; *p != '\0' && ok;) {
        size_t len = strcspn(p, " ");
        const char *star = memchr(p, '*', len);
        size_t step_len = star != NULL ? (size_t)(star - p) : len;
        unsigned long times = star != NULL ? strtoul(star + 1, NULL, 10) : 1;
        for (unsigned long i = 0; i < times && ok; i++)
            ok = run_step(c, how, p, step_len, &q, &pool, &mark, &m) == 0;
        p += len;
        p += strspn(p, " ");
    }

    CHECK(ok, "%s (%s): every step matched the model", c->name, how);

    /* Everything left goes out, and is exactly what the model holds. */
    size_t before = fake.len;
    int64_t r = up_outq_write(&q, &pool, &fake_transport, NULL, SIZE_MAX);
    size_t rest = m.len - m.written;
    CHECK(r == (int64_t)rest && fake.len - before == rest, "%s (%s): final write %lld of %zu",
          c->name, how, (long long)r, rest);
    CHECK(fake.len == m.len && (m.len == 0 || memcmp(fake.got, m.bytes, m.len) == 0),
          "%s (%s): wrote %zu bytes that differ from the %zu expected", c->name, how, fake.len,
          m.len);
    CHECK(up_outq_empty(&q) && q.bytes == 0 && q.file_bytes == 0 && q.tail == NULL,
          "%s (%s): queue not empty after writing all", c->name, how);
    for (int i = 0; i < num_shared; i++)
        CHECK(disposed[i] == 1, "%s (%s): shared slice %d disposed %d times", c->name, how, i,
              disposed[i]);
    for (int i = 0; i < m.num_fds; i++)
        CHECK(!fd_is_open(m.fds[i]), "%s (%s): file %d still open", c->name, how, i);
    CHECK(fake.max_iovcnt <= 64, "%s (%s): %d iovecs in one call", c->name, how, fake.max_iovcnt);

    up_outq_clear(&q, &pool);
    up_buffer_pool_dispose(&pool);
    free(m.bytes);
}

static void test_scripts(void)
{
    for (size_t i = 0; i < sizeof(script_cases) / sizeof(script_cases[0]); i++) {
        run_script(&script_cases[i], 0, "all at once");
        run_script(&script_cases[i], 1000, "1000 bytes a call");
        run_script(&script_cases[i], 1, "a byte a call");
    }
}

/* ---------------------------------------------------------------- shared between queues */

static void test_shared_slice_in_two_queues_disposed_after_the_last(void)
{
    up_buffer_pool_t pool;
    up_buffer_pool_init(&pool);
    up_outq_t a, b;
    up_outq_init(&a);
    up_outq_init(&b);
    shared_reset();
    fake_reset(3);

    up_shared_t *s = shared_new("hello world", 11);
    up_outq_append_shared(&a, s, 0, 5);
    up_outq_append_shared(&b, s, 6, 5);
    up_outq_append_shared(&b, s, 0, 0); /* an empty slice takes no reference */
    up_shared_release(s);
    CHECK(disposed[0] == 0, "disposed while two queues reference it");

    CHECK(up_outq_write(&a, &pool, &fake_transport, NULL, 4) == 4, "part of a written");
    CHECK(disposed[0] == 0, "disposed while a still has a byte of it");
    CHECK(up_outq_write(&a, &pool, &fake_transport, NULL, SIZE_MAX) == 1, "rest of a written");
    CHECK(disposed[0] == 0, "disposed while b still references it");
    CHECK(fake.len == 5 && memcmp(fake.got, "hello", 5) == 0, "a wrote %.*s", (int)fake.len,
          fake.got);

    CHECK(up_outq_write(&b, &pool, &fake_transport, NULL, 2) == 2, "part of b written");
    CHECK(disposed[0] == 0, "disposed while b has not written all of it");
    up_outq_clear(&b, &pool);
    CHECK(disposed[0] == 1, "clearing the last queue disposes it once: %d", disposed[0]);
    CHECK(fake.len == 7 && memcmp(fake.got, "hellowo", 7) == 0, "wrote %.*s", (int)fake.len,
          fake.got);

    /* A queue that references it twice releases it twice. */
    shared_reset();
    s = shared_new("abc", 3);
    up_outq_append_shared(&a, s, 0, 3);
    up_outq_append(&a, &pool, "-", 1);
    up_outq_append_shared(&a, s, 1, 2);
    up_shared_release(s);
    CHECK(up_outq_write(&a, &pool, &fake_transport, NULL, 3) == 3 && disposed[0] == 0,
          "first reference written, second not");
    CHECK(up_outq_write(&a, &pool, &fake_transport, NULL, SIZE_MAX) == 3 && disposed[0] == 1,
          "both references written: disposed %d", disposed[0]);

    up_buffer_pool_dispose(&pool);
}

/* ---------------------------------------------------------------- splice */

static void test_splice_moves_everything_in_order(void)
{
    up_buffer_pool_t pool;
    up_buffer_pool_init(&pool);
    up_outq_t dst, src;
    up_outq_init(&dst);
    up_outq_init(&src);
    shared_reset();
    fake_reset(0);

    up_outq_splice(&dst, &src);
    CHECK(up_outq_empty(&dst) && up_outq_empty(&src), "splicing two empty queues");

    up_outq_append(&src, &pool, "one ", 4);
    up_outq_append_file(&src, harness_temp_file("two ", 4), 0, 4);
    up_outq_splice(&dst, &src);
    CHECK(up_outq_empty(&src) && src.bytes == 0 && src.file_bytes == 0 && src.tail == NULL,
          "src emptied");
    CHECK(dst.bytes == 4 && dst.file_bytes == 4, "dst has %llu + %llu bytes",
          (unsigned long long)dst.bytes, (unsigned long long)dst.file_bytes);

    up_shared_t *s = shared_new("three ", 6);
    up_outq_append_shared(&src, s, 0, 6);
    up_shared_release(s);
    up_outq_append(&src, &pool, "four ", 5);
    up_outq_splice(&dst, &src);
    /* src is empty now: nothing happens; then an append goes after the spliced tail. */
    up_outq_splice(&dst, &src);
    up_outq_append(&dst, &pool, "five", 4);
    CHECK(dst.bytes == 19 && dst.file_bytes == 4, "dst counts %llu + %llu",
          (unsigned long long)dst.bytes, (unsigned long long)dst.file_bytes);

    int64_t r = up_outq_write(&dst, &pool, &fake_transport, NULL, SIZE_MAX);
    CHECK(r == 23 && fake.len == 23 && memcmp(fake.got, "one two three four five", 23) == 0,
          "spliced queue wrote %lld: %.*s", (long long)r, (int)fake.len, fake.got);
    CHECK(disposed[0] == 1, "shared slice disposed after the write");
    up_buffer_pool_dispose(&pool);
}

/* ---------------------------------------------------------------- a would-block transport */

static void test_write_stops_when_the_transport_would_block(void)
{
    up_buffer_pool_t pool;
    up_buffer_pool_init(&pool);
    up_outq_t q;
    up_outq_init(&q);
    fake_reset(0);
    char data[30000];
    harness_pattern(data, sizeof(data), 0);
    up_outq_append(&q, &pool, data, 20000);
    up_outq_append_file(&q, harness_temp_file(data + 20000, 10000), 0, 10000);

    fake.window = 7000;
    CHECK(up_outq_write(&q, &pool, &fake_transport, NULL, SIZE_MAX) == 7000,
          "stops at the window in memory");
    fake.window = 0;
    CHECK(up_outq_write(&q, &pool, &fake_transport, NULL, SIZE_MAX) == 0,
          "nothing taken: 0, not an error");
    fake.window = 18000;
    CHECK(up_outq_write(&q, &pool, &fake_transport, NULL, SIZE_MAX) == 18000,
          "stops at the window inside the file range");
    CHECK(q.bytes == 0 && q.file_bytes == 5000, "left %llu + %llu", (unsigned long long)q.bytes,
          (unsigned long long)q.file_bytes);
    fake.window = SIZE_MAX;
    CHECK(up_outq_write(&q, &pool, &fake_transport, NULL, SIZE_MAX) == 5000, "the rest");
    CHECK(fake.len == sizeof(data) && memcmp(fake.got, data, sizeof(data)) == 0,
          "bytes in order across would-blocks");
    up_buffer_pool_dispose(&pool);
}

static void test_file_shorter_than_its_range_is_an_error(void)
{
    up_buffer_pool_t pool;
    up_buffer_pool_init(&pool);
    up_outq_t q;
    up_outq_init(&q);
    fake_reset(0);
    int fd = harness_temp_file("short", 5);
    up_outq_append(&q, &pool, "x", 1);
    up_outq_append_file(&q, fd, 2, 10); /* promises 10 bytes from offset 2; 3 exist */
    int64_t r = up_outq_write(&q, &pool, &fake_transport, NULL, SIZE_MAX);
    CHECK(r == UP_IO_ERROR, "a file that ends early: %lld", (long long)r);
    CHECK(fake.len == 4 && memcmp(fake.got, "xort", 4) == 0, "what the file had went out");
    up_outq_clear(&q, &pool);
    CHECK(!fd_is_open(fd), "clear closed the file");

    /* A zero-length range takes nothing, and the fd is closed at once. */
    fd = harness_temp_file("abc", 3);
    up_outq_append_file(&q, fd, 0, 0);
    CHECK(up_outq_empty(&q) && !fd_is_open(fd), "zero-length range closed at once");
    up_buffer_pool_dispose(&pool);
}

/* ---------------------------------------------------------------- over a socketpair */

/* A connection that exists only for its fd: the TCP transport reads conn->_watcher.fd. */
typedef struct pair_t {
    up_conn_t *conn; /* the writing end */
    int reader;
} pair_t;

static void pair_open(pair_t *p, int sndbuf)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0)
        exit(2);
    if (setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)) != 0)
        exit(2);
    p->conn = calloc(1, sizeof(*p->conn));
    p->conn->_watcher.fd = sv[0];
    p->reader = sv[1];
}

static void pair_close(pair_t *p)
{
    close(p->conn->_watcher.fd);
    if (p->reader >= 0)
        close(p->reader);
    free(p->conn);
}

static void test_partial_writes_over_a_small_socket_buffer(void)
{
    enum { OWNED = 300000, SHARED = 300000, FILE_LEN = 400000, TOTAL = OWNED + SHARED + FILE_LEN };
    static char expect[TOTAL], got[TOTAL];
    harness_pattern(expect, TOTAL, 0);
    up_buffer_pool_t pool;
    up_buffer_pool_init(&pool);
    up_outq_t q;
    up_outq_init(&q);
    shared_reset();
    pair_t p;
    pair_open(&p, 4096);

    /* Owned bytes in pieces of every size, then a shared slice, then a file range. */
    size_t at = 0;
    for (size_t piece = 1; at < OWNED; piece = piece * 3 % 5000 + 1) {
        size_t n = piece < OWNED - at ? piece : OWNED - at;
        up_outq_append(&q, &pool, expect + at, n);
        at += n;
    }
    up_shared_t *s = shared_new(expect + OWNED, SHARED);
    up_outq_append_shared(&q, s, 0, SHARED);
    up_shared_release(s);
    int fd = harness_temp_file(expect, TOTAL);
    up_outq_append_file(&q, fd, OWNED + SHARED, FILE_LEN);

    size_t read_total = 0;
    int64_t written = 0;
    int partial = 0, errors = 0, miscounted = 0;
    uint64_t deadline = harness_now_ms() + HARNESS_TIMEOUT_MS;
    while ((!up_outq_empty(&q) || read_total < TOTAL) && harness_now_ms() < deadline) {
        int64_t r = up_outq_write(&q, &pool, &up_transport_tcp, p.conn, SIZE_MAX);
        if (r < 0) {
            errors++;
            break;
        }
        written += r;
        if (!up_outq_empty(&q))
            partial++;
        if (q.bytes + q.file_bytes != (uint64_t)(TOTAL - written))
            miscounted++;
        /* The reader drains 3000 bytes at a time. */
        ssize_t n =
            read(p.reader, got + read_total, TOTAL - read_total < 3000 ? TOTAL - read_total : 3000);
        if (n > 0)
            read_total += (size_t)n;
    }
    CHECK(errors == 0, "write failed: %s", strerror(errno));
    CHECK(miscounted == 0, "the queue's byte counts disagreed with the writes %d times",
          miscounted);
    CHECK(partial > 10, "the socket buffer never filled (%d partial writes)", partial);
    CHECK(written == TOTAL && read_total == TOTAL, "wrote %lld, read %zu of %d", (long long)written,
          read_total, TOTAL);
    CHECK(memcmp(got, expect, TOTAL) == 0, "the bytes read differ from those queued");
    CHECK(disposed[0] == 1, "shared slice disposed once written: %d", disposed[0]);
    CHECK(!fd_is_open(fd), "file closed once written");
    pair_close(&p);
    up_buffer_pool_dispose(&pool);
}

static void test_write_caps_at_max_over_a_socket(void)
{
    up_buffer_pool_t pool;
    up_buffer_pool_init(&pool);
    up_outq_t q;
    up_outq_init(&q);
    pair_t p;
    pair_open(&p, 1 << 20);
    char data[6000];
    harness_pattern(data, sizeof(data), 0);
    up_outq_append(&q, &pool, data, 3000);
    up_outq_append_file(&q, harness_temp_file(data + 3000, 3000), 0, 3000);
    int64_t r1 = up_outq_write(&q, &pool, &up_transport_tcp, p.conn, 2500);
    int64_t r2 = up_outq_write(&q, &pool, &up_transport_tcp, p.conn, 2500);
    int64_t r3 = up_outq_write(&q, &pool, &up_transport_tcp, p.conn, 2500);
    CHECK(r1 == 2500 && r2 == 2500 && r3 == 1000, "writes of at most 2500: %lld %lld %lld",
          (long long)r1, (long long)r2, (long long)r3);
    char got[6000];
    ssize_t n = read(p.reader, got, sizeof(got));
    CHECK(n == 6000 && memcmp(got, data, 6000) == 0, "read %zd", n);
    pair_close(&p);
    up_buffer_pool_dispose(&pool);
}

static void test_write_to_a_peer_that_left_is_an_error(void)
{
    up_buffer_pool_t pool;
    up_buffer_pool_init(&pool);
    up_outq_t q;
    up_outq_init(&q);
    shared_reset();
    pair_t p;
    pair_open(&p, 4096);
    close(p.reader);
    p.reader = -1;

    up_outq_append(&q, &pool, "bytes", 5);
    up_shared_t *s = shared_new("shared", 6);
    up_outq_append_shared(&q, s, 0, 6);
    up_shared_release(s);
    int64_t r = up_outq_write(&q, &pool, &up_transport_tcp, p.conn, SIZE_MAX);
    CHECK(r == UP_IO_ERROR, "writev to a closed peer: %lld", (long long)r);

    int fd = harness_temp_file("file", 4);
    up_outq_t fq;
    up_outq_init(&fq);
    up_outq_append_file(&fq, fd, 0, 4);
    r = up_outq_write(&fq, &pool, &up_transport_tcp, p.conn, SIZE_MAX);
    CHECK(r == UP_IO_ERROR, "sendfile to a closed peer: %lld", (long long)r);

    up_outq_clear(&q, &pool);
    up_outq_clear(&fq, &pool);
    CHECK(disposed[0] == 1 && !fd_is_open(fd), "clear released the slice and the file");
    pair_close(&p);
    up_buffer_pool_dispose(&pool);
}

int main(void)
{
    harness_watchdog(60);
    /* sendfile to a peer that left raises SIGPIPE; the runtimes ignore it (see harness). */
    signal(SIGPIPE, SIG_IGN);
    test_scripts();
    test_shared_slice_in_two_queues_disposed_after_the_last();
    test_splice_moves_everything_in_order();
    test_write_stops_when_the_transport_would_block();
    test_file_shorter_than_its_range_is_an_error();
    test_partial_writes_over_a_small_socket_buffer();
    test_write_caps_at_max_over_a_socket();
    test_write_to_a_peer_that_left_is_an_error();
    fake_reset(0);
    free(fake.got);
    return test_report("outq");
}
