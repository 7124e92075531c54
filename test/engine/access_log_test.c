/* The access log (access_log.c), shared by up_ruby and up: each line's format (common log
 * format, then the seconds taken), bytes that could break a line escaped as \xHH, an overlong
 * target cut, a missing address as "-"; lines held until a flush, half a buffer or the close;
 * a reopen after a rename going on in a new file; a file that cannot be opened refused. Each
 * request's target ends right before an unmapped page, so an overread crashes. */

#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "http1/access_log.h"
#include "http1/http1.h"
#include "test.h"

typedef struct line_case_t {
    const char *name;
    const char *addr;
    const char *method;
    const char *target;
    int minor;
    int status;
    uint64_t bytes;
    uint64_t took_ns;
    const char *want; /* the line after the date */
} line_case_t;

static const line_case_t LINE_CASES[] = {
    {"a plain GET", "127.0.0.1", "GET", "/", 1, 200, 5, 153000,
     "\"GET / HTTP/1.1\" 200 5 0.000153\n"},
    {"a query and HTTP/1.0", "::1", "HEAD", "/a?b=c&d", 0, 404, 0, 2500000000ull,
     "\"HEAD /a?b=c&d HTTP/1.0\" 404 0 2.500000\n"},
    {"a quote and a backslash escaped", "10.0.0.1", "GET", "/\"x\\", 1, 400, 11, 0,
     "\"GET /\\x22x\\x5c HTTP/1.1\" 400 11 0.000000\n"},
    {"control and non-ASCII bytes escaped", "10.0.0.1", "GET", "/\x01\x7f\xff", 1, 200, 1, 999,
     "\"GET /\\x01\\x7f\\xff HTTP/1.1\" 200 1 0.000000\n"},
    {"large figures in full", "10.0.0.2", "GET", "/big", 1, 101, 12345678901234ull,
     86400123456789ull, "\"GET /big HTTP/1.1\" 101 12345678901234 86400.123456\n"},
    {"no address is a dash", "", "POST", "/p", 1, 500, 21, 1000,
     "\"POST /p HTTP/1.1\" 500 21 0.000001\n"},
};

static char tmpdir[64];

static char *slurp(const char *path)
{
    static char buf[4 * UP_ACCESS_LOG_BUFFER];
    FILE *f = fopen(path, "r");
    buf[0] = '\0';
    if (f == NULL)
        return buf;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* A line for a request with these parts through log; target placed before an unmapped page. */
static void log_request(up_access_log_t *log, const char *addr, const char *method,
                        const char *target, size_t target_len, int minor, int status,
                        uint64_t bytes, uint64_t took_ns)
{
    static up_conn_t conn;
    static up_request_t req;
    static up_response_state_t res;
    static up_exchange_t ex;
    char *guarded = guarded_copy(target, target_len);
    memset(&conn, 0, sizeof(conn));
    memset(&req, 0, sizeof(req));
    memset(&res, 0, sizeof(res));
    snprintf(conn.remote_addr, sizeof(conn.remote_addr), "%s", addr);
    req.head.method = (up_slice_t){method, strlen(method)};
    req.head.target = (up_slice_t){guarded, target_len};
    req.head.minor_version = minor;
    res.status = status;
    res.body_bytes = bytes;
    ex = (up_exchange_t){.conn = &conn, .req = &req, .res = &res};
    up_access_log_request(log, &ex, took_ns);
    guarded_free(guarded, target_len);
}

static void test_each_line_in_the_common_log_format(void)
{
    for (size_t i = 0; i < sizeof(LINE_CASES) / sizeof(LINE_CASES[0]); i++) {
        const line_case_t *c = &LINE_CASES[i];
        char path[128];
        snprintf(path, sizeof(path), "%s/line%zu.log", tmpdir, i);
        up_access_log_t *log = calloc(1, sizeof(*log));
        up_access_log_init(log);
        CHECK(up_access_log_open(log, path) == 0, "%s: open: %s", c->name, strerror(errno));
        log_request(log, c->addr, c->method, c->target, strlen(c->target), c->minor, c->status,
                    c->bytes, c->took_ns);
        up_access_log_destroy(log);
        free(log);
        const char *got = slurp(path);
        char prefix[128];
        snprintf(prefix, sizeof(prefix), "%s - - [", c->addr[0] ? c->addr : "-");
        CHECK(strncmp(got, prefix, strlen(prefix)) == 0, "%s: starts %s, got %s", c->name,
              prefix, got);
        const char *date_end = strstr(got, " +0000] ");
        CHECK(date_end != NULL && date_end - got == (long)strlen(prefix) + 20,
              "%s: a [dd/Mon/yyyy:hh:mm:ss +0000] date: %s", c->name, got);
        if (date_end != NULL)
            CHECK(strcmp(date_end + 8, c->want) == 0, "%s: got %s want %s", c->name,
                  date_end + 8, c->want);
    }
}

static void test_an_overlong_target_is_cut(void)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/long.log", tmpdir);
    size_t len = 5000;
    char *target = malloc(len);
    memset(target, 'a', len);
    target[0] = '/';
    up_access_log_t *log = calloc(1, sizeof(*log));
    up_access_log_init(log);
    up_access_log_open(log, path);
    log_request(log, "1.2.3.4", "GET", target, len, 1, 200, 0, 0);
    up_access_log_close(log);
    const char *got = slurp(path);
    const char *start = strstr(got, "\"GET /");
    const char *cut = strstr(got, "... HTTP/1.1\"");
    CHECK(start != NULL && cut != NULL && cut - (start + 5) == 2048,
          "2048 bytes of the target, then ...: %zu bytes", cut && start ? (size_t)(cut - start - 5) : 0);
    up_access_log_destroy(log);
    free(log);
    free(target);
}

static void test_lines_wait_for_a_flush_half_a_buffer_or_the_close(void)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/batch.log", tmpdir);
    up_access_log_t *log = calloc(1, sizeof(*log));
    up_access_log_init(log);
    up_access_log_open(log, path);
    log_request(log, "1.2.3.4", "GET", "/one", 4, 1, 200, 1, 0);
    CHECK(strlen(slurp(path)) == 0, "a line is buffered, not written at once");
    up_access_log_flush(log, 1);
    CHECK(strstr(slurp(path), "/one") != NULL, "a forced flush writes it");
    int lines = 0;
    while (strlen(slurp(path)) < 100 && lines < 10000) {
        log_request(log, "1.2.3.4", "GET", "/fill", 5, 1, 200, 1, 0);
        lines++;
    }
    size_t written = strlen(slurp(path));
    CHECK(lines > 100 && written > UP_ACCESS_LOG_BUFFER / 2 && written < UP_ACCESS_LOG_BUFFER,
          "written once half the buffer is full: after %d lines, %zu bytes", lines, written);
    log_request(log, "1.2.3.4", "GET", "/last", 5, 1, 200, 1, 0);
    up_access_log_close(log);
    CHECK(strstr(slurp(path), "/last") != NULL, "the close writes what is left");
    up_access_log_close(log); /* again: nothing */
    up_access_log_destroy(log);
    free(log);
}

static void test_a_reopen_after_a_rename_goes_on_in_a_new_file(void)
{
    char path[128], rotated[140];
    snprintf(path, sizeof(path), "%s/rotate.log", tmpdir);
    snprintf(rotated, sizeof(rotated), "%s.1", path);
    up_access_log_t *log = calloc(1, sizeof(*log));
    up_access_log_init(log);
    up_access_log_open(log, path);
    log_request(log, "1.2.3.4", "GET", "/before", 7, 1, 200, 1, 0);
    CHECK(rename(path, rotated) == 0, "rename: %s", strerror(errno));
    CHECK(up_access_log_reopen(log) == 0, "reopen: %s", strerror(errno));
    log_request(log, "1.2.3.4", "GET", "/after", 6, 1, 200, 1, 0);
    up_access_log_destroy(log);
    free(log);
    CHECK(strstr(slurp(rotated), "/before") != NULL && strstr(slurp(rotated), "/after") == NULL,
          "the old file has the lines from before: %s", slurp(rotated));
    CHECK(strstr(slurp(path), "/after") != NULL && strstr(slurp(path), "/before") == NULL,
          "the new file the lines from after: %s", slurp(path));
}

static void test_a_file_that_cannot_be_opened_is_refused(void)
{
    up_access_log_t *log = calloc(1, sizeof(*log));
    up_access_log_init(log);
    errno = 0;
    CHECK(up_access_log_open(log, "/nonexistent/dir/access.log") == -1 && errno == ENOENT,
          "-1 and ENOENT: errno %d", errno);
    CHECK(log->fd == -1, "still closed");
    log_request(log, "1.2.3.4", "GET", "/", 1, 1, 200, 1, 0); /* no file: nowhere, no crash */
    up_access_log_flush(log, 1);
    CHECK(up_access_log_reopen(log) == 0, "reopening no log does nothing");
    up_access_log_destroy(log);
    free(log);
}

int main(void)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/up-access-log-XXXXXX");
    if (mkdtemp(tmpdir) == NULL) {
        perror("mkdtemp");
        return 2;
    }
    test_each_line_in_the_common_log_format();
    test_an_overlong_target_is_cut();
    test_lines_wait_for_a_flush_half_a_buffer_or_the_close();
    test_a_reopen_after_a_rename_goes_on_in_a_new_file();
    test_a_file_that_cannot_be_opened_is_refused();
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return test_report("access_log_test");
}
