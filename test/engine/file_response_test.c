/* An app's file response (file_response.c) through real connections (socketpairs, http1.c's
 * dispatch): a table of requests and what the app said, each with the status, body and fields
 * the client must get (RFC 9110 §13 conditional requests, §14 ranges, §15.4.5 304, §15.5.17
 * 416), the app's fields kept or dropped as the contract says; then a missing file, a
 * directory and a FIFO refused at open (the FIFO without blocking), and a file that shrinks
 * while it is sent, which closes the connection instead of hanging it. */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "engine_harness.h"
#include "handlers/file_response.h"
#include "test.h"

#define MTIME ((time_t)1700000000)
#define MTIME_TEXT "Tue, 14 Nov 2023 22:13:20 GMT"
#define ETAG "\"6553f100.0-c\""

static char dir[64], path[128];

typedef struct file_case_t {
    const char *name;
    const char *request;
    int app_status;
    const char *app_fields; /* "name: value\n" lines the app gives besides the file */
    int status;
    const char *body;
    const char *has;     /* "\r\n"-joined lines the head must contain */
    const char *has_not; /* field names (with ": ") it must not contain */
} file_case_t;

#define GET(p, extra) "GET " p " HTTP/1.1\r\nHost: t\r\n" extra "\r\n"
#define APP "content-type: text/x-up\ncontent-length: 0\nx-sendfile: /secret/path\n"

static const file_case_t cases[] = {
    {"whole file, the app's type, the engine's validators", GET("/", ""), 200, APP, 200,
     "hello world\n",
     "content-type: text/x-up\r\netag: " ETAG "\r\nlast-modified: " MTIME_TEXT
     "\r\naccept-ranges: bytes\r\ncontent-length: 12\r\n",
     "x-sendfile: "},
    {"one range", GET("/", "Range: bytes=6-10\r\n"), 200, APP, 206, "world",
     "content-range: bytes 6-10/12\r\ncontent-length: 5\r\n", "x-sendfile: "},
    {"a suffix range", GET("/", "Range: bytes=-3\r\n"), 200, APP, 206, "ld\n",
     "content-range: bytes 9-11/12\r\n", ""},
    {"an open range", GET("/", "Range: bytes=10-\r\n"), 200, APP, 206, "d\n",
     "content-range: bytes 10-11/12\r\n", ""},
    {"unsatisfiable: 416 with the size", GET("/", "Range: bytes=12-\r\n"), 200, APP, 416, "",
     "content-range: bytes */12\r\n", "content-type: "},
    {"a range the app's 404 does not honour", GET("/", "Range: bytes=0-1\r\n"), 404, APP, 404,
     "hello world\n", "content-type: text/x-up\r\n", "accept-ranges: \ncontent-range: \netag: "},
    {"a bad range is ignored", GET("/", "Range: bytes=x-y\r\n"), 200, APP, 200, "hello world\n",
     "", "content-range: "},
    {"two Range lines are no range", GET("/", "Range: bytes=0-1\r\nRange: bytes=2-3\r\n"), 200,
     APP, 200, "hello world\n", "", ""},
    {"If-None-Match with our tag: 304", GET("/", "If-None-Match: " ETAG "\r\n"), 200, APP, 304,
     "", "etag: " ETAG "\r\n", "content-type: \naccept-ranges: "},
    {"If-Modified-Since the mtime: 304", GET("/", "If-Modified-Since: " MTIME_TEXT "\r\n"), 200,
     APP, 304, "", "", ""},
    {"If-Modified-Since before: 200", GET("/", "If-Modified-Since: Tue, 14 Nov 2023 22:13:19 GMT\r\n"),
     200, APP, 200, "hello world\n", "", ""},
    {"If-Match another tag: 412 that says why, in its own type",
     GET("/", "If-Match: \"x\"\r\n"), 200, APP, 412, "Precondition Failed\n",
     "content-type: text/plain; charset=utf-8\r\ncontent-length: 20\r\n",
     "etag: \ncontent-type: text/x-up\naccept-ranges: "},
    {"If-Unmodified-Since before the mtime: 412",
     GET("/", "If-Unmodified-Since: Tue, 14 Nov 2023 22:13:19 GMT\r\n"), 200, APP, 412,
     "Precondition Failed\n", "content-length: 20\r\n", "last-modified: "},
    {"HEAD with a failed If-Match: 412 without its body",
     "HEAD / HTTP/1.1\r\nHost: t\r\nIf-Match: \"x\"\r\n\r\n", 200, APP, 412, "",
     "content-length: 20\r\n", "content-type: text/x-up"},
    {"If-Range with our tag: the range", GET("/", "Range: bytes=0-4\r\nIf-Range: " ETAG "\r\n"),
     200, APP, 206, "hello", "", ""},
    {"If-Range with another tag: all", GET("/", "Range: bytes=0-4\r\nIf-Range: \"x\"\r\n"), 200,
     APP, 200, "hello world\n", "", ""},
    {"If-Range by the date: the range", GET("/", "Range: bytes=0-4\r\nIf-Range: " MTIME_TEXT "\r\n"),
     200, APP, 206, "hello", "", ""},
    {"the app's etag is the validator", GET("/", "If-None-Match: \"app\"\r\n"), 200,
     APP "etag: \"app\"\n", 304, "", "etag: \"app\"\r\n", ""},
    {"our etag no longer matches once the app gives one", GET("/", "If-None-Match: " ETAG "\r\n"),
     200, APP "etag: \"app\"\n", 200, "hello world\n", "", ""},
    {"the app's last-modified is the validator",
     GET("/", "If-Modified-Since: Mon, 01 Jan 2024 00:00:00 GMT\r\n"), 200,
     APP "last-modified: Mon, 01 Jan 2024 00:00:00 GMT\n", 304, "", "", ""},
    {"the app's accept-ranges and transfer-encoding are the engine's", GET("/", ""), 200,
     APP "accept-ranges: none\ntransfer-encoding: chunked\n", 200, "hello world\n",
     "accept-ranges: bytes\r\n", "accept-ranges: none\ntransfer-encoding: "},
    {"HEAD: the length, no body", "HEAD / HTTP/1.1\r\nHost: t\r\n\r\n", 200, APP, 200, "",
     "content-length: 12\r\n", ""},
    {"HEAD with a range: no range", "HEAD / HTTP/1.1\r\nHost: t\r\nRange: bytes=0-1\r\n\r\n", 200,
     APP, 200, "", "content-length: 12\r\n", "content-range: "},
    {"two ranges: multipart, the app's type in each part", GET("/", "Range: bytes=0-1,-2\r\n"),
     200, APP, 206, NULL,
     "content-type: multipart/byteranges; boundary=up-",
     "x-sendfile: "},
    {"two ranges of a coded body: all of it", GET("/", "Range: bytes=0-1,-2\r\n"), 200,
     APP "content-encoding: gzip\n", 200, "hello world\n", "content-encoding: gzip\r\n", ""},
};

static const file_case_t *current;

/* The app: the file, and what current says it said. */
static up_request_result_t on_request(up_exchange_t *ex, void *user)
{
    (void)user;
    up_file_response_t f;
    CHECK(up_file_response_open(&f, path) == 0, "%s: open", current->name);
    char fields[512];
    snprintf(fields, sizeof(fields), "%s", current->app_fields);
    up_file_app_t app = {current->app_status, {NULL, 0}, {NULL, 0}, {NULL, 0}, {NULL, 0}};
    struct {
        const char *name;
        up_slice_t *slot;
    } known[] = {{"content-type", &app.content_type},
                 {"etag", &app.etag},
                 {"last-modified", &app.last_modified},
                 {"content-encoding", &app.content_encoding}};
    /* Split the lines once, keeping slices for the plan and the head. */
    up_slice_t names[16], values[16];
    int n = 0;
    for (char *line = fields; *line != '\0' && n < 16;) {
        char *nl = strchr(line, '\n'), *colon = strchr(line, ':');
        names[n] = (up_slice_t){line, (size_t)(colon - line)};
        values[n] = (up_slice_t){colon + 2, (size_t)(nl - colon - 2)};
        for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++) {
            if (up_slice_eq(names[n], known[k].name, strlen(known[k].name)))
                *known[k].slot = values[n];
        }
        n++;
        line = nl + 1;
    }
    up_file_response_plan(&f, &ex->req->head, &app, MTIME + 3600);
    up_response_start(ex, f.status);
    for (int i = 0; i < n; i++) {
        if (up_file_response_keeps(&f, names[i].base, names[i].len))
            up_response_add_header(ex, names[i].base, names[i].len, values[i].base, values[i].len);
    }
    up_file_response_send(&f, ex);
    return UP_REQUEST_DONE;
}

static void check_multipart(const file_case_t *fc, const response_t *res)
{
    const char *b = strstr(res->raw, "boundary=");
    CHECK(b != NULL, "%s: a boundary", fc->name);
    if (b == NULL)
        return;
    char boundary[UP_FILE_BOUNDARY_LEN + 1];
    memcpy(boundary, b + 9, UP_FILE_BOUNDARY_LEN);
    boundary[UP_FILE_BOUNDARY_LEN] = '\0';
    char want[512];
    snprintf(want, sizeof(want),
             "\r\n--%s\r\ncontent-type: text/x-up\r\ncontent-range: bytes 0-1/12\r\n\r\nhe"
             "\r\n--%s\r\ncontent-type: text/x-up\r\ncontent-range: bytes 10-11/12\r\n\r\nd\n"
             "\r\n--%s--\r\n",
             boundary, boundary, boundary);
    CHECK(strcmp(res->body, want) == 0, "%s: body\n%s", fc->name, res->body);
}

static void run_case(const file_case_t *fc)
{
    harness_t h;
    up_server_handler_t handler = {.on_request = on_request};
    current = fc;
    harness_start(&h, NULL, &handler);
    client_t c;
    client_open(&h, &c, fc->request, 0);
    response_t res;
    int head_only = strncmp(fc->request, "HEAD", 4) == 0;
    int got = client_read_response(&h, &c, &res, head_only, HARNESS_TIMEOUT_MS);
    CHECK(got, "%s: a response", fc->name);
    if (got) {
        CHECK(res.status == fc->status, "%s: status %d, expected %d", fc->name, res.status,
              fc->status);
        if (fc->body != NULL)
            CHECK(strcmp(res.body, fc->body) == 0, "%s: body \"%s\"", fc->name, res.body);
        else
            check_multipart(fc, &res);
        if (fc->body != NULL && !head_only && fc->status != 304)
            CHECK(res.content_length == (int64_t)strlen(fc->body), "%s: content-length", fc->name);
        char *head_end = strstr(res.raw, "\r\n\r\n");
        if (head_end != NULL)
            head_end[2] = '\0';
        CHECK(strstr(res.raw, fc->has) != NULL, "%s: head\n%s\nlacks\n%s", fc->name, res.raw,
              fc->has);
        char names[256];
        snprintf(names, sizeof(names), "%s", fc->has_not);
        for (char *save, *name = strtok_r(names, "\n", &save); name != NULL;
             name = strtok_r(NULL, "\n", &save))
            CHECK(strstr(res.raw, name) == NULL, "%s: head\n%s\nhas %s", fc->name, res.raw, name);
        response_free(&res);
    }
    harness_stop(&h);
    client_close(&c);
}

/* ---------------------------------------------------------------- opening */

static void test_open_refusals(void)
{
    up_file_response_t f;
    char p[160];
    snprintf(p, sizeof(p), "%s/none", dir);
    CHECK(up_file_response_open(&f, p) == -1 && errno == ENOENT, "a missing file: ENOENT");
    CHECK(up_file_response_open(&f, dir) == -1 && errno == EISDIR, "a directory: EISDIR");
    snprintf(p, sizeof(p), "%s/fifo", dir);
    CHECK(mkfifo(p, 0600) == 0, "mkfifo");
    /* No writer: a blocking open would never return (the watchdog would fire). */
    CHECK(up_file_response_open(&f, p) == -1 && errno == EINVAL, "a FIFO: EINVAL, at once");
    unlink(p);
}

/* ---------------------------------------------------------------- a file that shrinks */

#define SHRINK_SIZE (4 * 1024 * 1024)
static char shrink_path[160];

static up_request_result_t on_request_shrink(up_exchange_t *ex, void *user)
{
    (void)user;
    up_file_response_t f;
    CHECK(up_file_response_open(&f, shrink_path) == 0, "shrink: open");
    up_file_app_t app = {200, {NULL, 0}, {NULL, 0}, {NULL, 0}, {NULL, 0}};
    up_file_response_plan(&f, &ex->req->head, &app, MTIME);
    up_response_start(ex, f.status);
    up_file_response_send(&f, ex);
    CHECK(truncate(shrink_path, 1000) == 0, "shrink: truncate");
    return UP_REQUEST_DONE;
}

static void test_a_shrinking_file_closes_the_connection(void)
{
    snprintf(shrink_path, sizeof(shrink_path), "%s/shrinks", dir);
    char *data = calloc(1, SHRINK_SIZE);
    int fd = open(shrink_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0 && write(fd, data, SHRINK_SIZE) == SHRINK_SIZE, "shrink: write");
    close(fd);
    free(data);
    harness_t h;
    up_server_handler_t handler = {.on_request = on_request_shrink};
    harness_start(&h, NULL, &handler);
    client_t c;
    client_open(&h, &c, GET("/", ""), 64 * 1024);
    CHECK(client_wait_eof(&h, &c, HARNESS_TIMEOUT_MS), "shrink: the connection closed");
    CHECK(c.len < SHRINK_SIZE, "shrink: %zu bytes, fewer than promised", c.len);
    harness_stop(&h);
    client_close(&c);
    unlink(shrink_path);
}

int main(void)
{
    harness_watchdog(60);
    snprintf(dir, sizeof(dir), "/tmp/up-file-response-XXXXXX");
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 2;
    }
    snprintf(path, sizeof(path), "%s/hello.txt", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, "hello world\n", 12) != 12) {
        perror(path);
        return 2;
    }
    close(fd);
    struct timespec times[2] = {{MTIME, 0}, {MTIME, 0}};
    utimensat(AT_FDCWD, path, times, 0);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        run_case(&cases[i]);
    test_open_refusals();
    test_a_shrinking_file_closes_the_connection();
    unlink(path);
    rmdir(dir);
    return test_report("file_response");
}
