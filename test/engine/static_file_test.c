/* The static file handler (static_file.c) through real connections (socketpairs, http1.c's
 * dispatch): a table of requests, each sent whole and then byte by byte, with the status, the
 * body and the fields each must get (RFC 9110: §8.8 validators, §13 conditional requests, §14
 * ranges, §12.5.3 content codings, §15.4.2 the 301 to a directory); what goes to the app instead
 * (misses, other methods, refused paths); a traversal corpus against a secret planted beside the
 * root, of which no response may carry a byte; pipelined files; the static-only mode (404 page,
 * 405); directory listings with hostile names; the site config (clean URLs, header rules,
 * redirects, https_only and trusted proxies); a file changed on disk served new; and a file
 * deleted while it is being sent. */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include "engine_harness.h"
#include "handlers/static_file.h"
#include "test.h"

#define SECRET "SECRET-0f8e2"
#define MTIME ((time_t)1700000000)
#define MTIME_TEXT "Tue, 14 Nov 2023 22:13:20 GMT"
#define BIG_SIZE (300 * 1024)

static char base[256], root[300];

/* ---------------------------------------------------------------- the tree */

static void put(const char *rel, const char *data, size_t len)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/%s", base, rel);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, data, len) != (ssize_t)len) {
        perror(path);
        exit(2);
    }
    close(fd);
}

static void put_str(const char *rel, const char *data)
{
    put(rel, data, strlen(data));
}

static void set_mtime(const char *rel, time_t t)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/%s", base, rel);
    struct timespec times[2] = {{t, 0}, {t, 0}};
    utimensat(AT_FDCWD, path, times, 0);
}

static void make_dir(const char *rel)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/%s", base, rel);
    mkdir(path, 0755);
}

static void make_link(const char *target, const char *rel)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/%s", base, rel);
    if (symlink(target, path) != 0)
        perror(path);
}

static void make_tree(void)
{
    snprintf(base, sizeof(base), "/tmp/up-static-XXXXXX");
    if (mkdtemp(base) == NULL) {
        perror("mkdtemp");
        exit(2);
    }
    snprintf(root, sizeof(root), "%s/root", base);
    put_str("secret.txt", SECRET "\n");
    put_str(".htpasswd", SECRET "\n");
    make_dir("root");
    put_str("root/index.html", "<h1>home</h1>\n");
    put_str("root/hello.txt", "hello world\n");
    put_str("root/digits.txt", "0123456789");
    set_mtime("root/digits.txt", MTIME);
    put_str("root/app.css", "body { color: red }\n");
    put_str("root/app.css.gz", "GZ-OF-APP-CSS");
    put_str("root/app.css.br", "BR-OF-APP-CSS");
    put_str("root/about.html", "<p>about</p>\n");
    put_str("root/404.html", "<p>no such page</p>\n");
    put_str("root/.env", "DOTENV\n");
    make_dir("root/assets");
    put_str("root/assets/app-0123abcd.js", "console.log(1)\n");
    put_str("root/assets/jquery-3.js", "jq\n");
    put_str("root/assets/app.digested.js", "dg\n");
    make_dir("root/docs");
    put_str("root/docs/index.html", "<h1>docs</h1>\n");
    make_dir("root/empty");
    make_dir("root/list");
    put_str("root/list/a<b>&\"c'.txt", "x");
    put_str("root/list/plain.txt", "x");
    put_str("root/list/.hidden", "x");
    make_dir("root/list/sub dir");
    make_link("../secret.txt", "root/link_out");
    make_link("hello.txt", "root/link_in");
    make_link("..", "root/up");
    char target[512];
    snprintf(target, sizeof(target), "%s/secret.txt", base);
    make_link(target, "root/link_abs");
    static char big[BIG_SIZE];
    harness_pattern(big, sizeof(big), 0);
    put("root/big.bin", big, sizeof(big));
    make_dir("s1");
    make_dir("s2");
    put_str("s1/one.txt", "one from s1\n");
    put_str("s1/both.txt", "both from s1\n");
    put_str("s2/two.txt", "two from s2\n");
    put_str("s2/both.txt", "both from s2\n");
}

/* ---------------------------------------------------------------- the server */

static int app_calls;

/* The app behind the files: "app: TARGET" for whatever the handler passes on. */
static up_request_result_t app_on_request(up_exchange_t *ex, void *user)
{
    (void)user;
    app_calls++;
    char body[256];
    const up_http1_request_t *head = &ex->req->head;
    int n = snprintf(body, sizeof(body), "app: %.*s", (int)head->target.len, head->target.base);
    if (n >= (int)sizeof(body))
        n = (int)sizeof(body) - 1;
    up_response_start(ex, 200);
    up_response_add_header(ex, "content-type", 12, "text/plain", 10);
    up_response_end_head(ex, n);
    up_response_write(ex, body, (size_t)n);
    up_response_finish(ex);
    return UP_REQUEST_DONE;
}

static up_static_t *new_static(unsigned flags, unsigned valid_ms)
{
    up_file_cache_options_t o;
    up_file_cache_options_defaults(&o);
    o.valid_ms = valid_ms;
    up_static_t *st = up_static_new(flags, &o);
    const char *err = NULL;
    char dir[600];
    CHECK(up_static_add_dir(st, "/", root, &err) == 0, "mount /: %s", err);
    snprintf(dir, sizeof(dir), "%s/s1", base);
    CHECK(up_static_add_dir(st, "/static", dir, &err) == 0, "mount /static: %s", err);
    snprintf(dir, sizeof(dir), "%s/s2", base);
    CHECK(up_static_add_dir(st, "/static", dir, &err) == 0, "mount /static again: %s", err);
    static const char *const types[][2] = {
        {".txt", "text/plain"}, {".html", "text/html"}, {".css", "text/css"},
        {".js", "text/javascript"}, {".bin", "application/octet-stream"}};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        up_static_add_mime(st, types[i][0], types[i][1], &err);
    return st;
}

static void start(harness_t *h, up_static_t *st)
{
    app_calls = 0;
    up_server_handler_t handler = {.on_request = app_on_request};
    harness_start(h, NULL, &handler);
    CHECK(up_static_install(st, h->server) == 0, "the handler chain takes the static files");
}

/* The value of the response's field name (lower case, as the engine writes them), or NULL. */
static const char *field(const response_t *res, const char *name, char *buf, size_t cap)
{
    char pat[64];
    snprintf(pat, sizeof(pat), "\r\n%s: ", name);
    const char *p = strstr(res->raw, pat);
    const char *head_end = strstr(res->raw, "\r\n\r\n");
    if (p == NULL || (head_end != NULL && p > head_end))
        return NULL;
    p += strlen(pat);
    const char *end = strstr(p, "\r\n");
    size_t n = (size_t)(end - p);
    if (n >= cap)
        n = cap - 1;
    memcpy(buf, p, n);
    buf[n] = '\0';
    return buf;
}

/* Sends request (whole, or a byte a turn) on a new client and reads one response. */
static int exchange(harness_t *h, client_t *c, const char *request, int byte_by_byte,
                    int head_only, response_t *res)
{
    size_t len = strlen(request);
    if (byte_by_byte) {
        client_open(h, c, NULL, 0);
        for (size_t i = 0; i < len; i++) {
            client_send(h, c, request + i, 1);
            harness_turn(h, 0);
        }
    } else {
        client_open(h, c, request, 0);
    }
    return client_read_response(h, c, res, head_only, HARNESS_TIMEOUT_MS);
}

/* ---------------------------------------------------------------- the table */

#define H "Host: t\r\n"
#define GET(path) "GET " path " HTTP/1.1\r\n" H
#define END "\r\n"

typedef struct static_case_t {
    const char *name;
    const char *request;
    int status;
    const char *body;      /* NULL: not checked */
    const char *fields[5]; /* "name: value" each must have, "!name" each must not */
    int app;               /* the app answers it */
} static_case_t;

static const static_case_t cases[] = {
    {"a text file", GET("/hello.txt") END, 200, "hello world\n",
     {"content-type: text/plain; charset=utf-8", "content-length: 12", "accept-ranges: bytes",
      "!vary", "!cache-control"}, 0},
    {"HEAD has the length and no body", "HEAD /hello.txt HTTP/1.1\r\n" H END, 200, "",
     {"content-length: 12", "content-type: text/plain; charset=utf-8"}, 0},
    {"the query is not part of the name", GET("/hello.txt?v=3") END, 200, "hello world\n", {NULL}, 0},
    {"last-modified", GET("/digits.txt") END, 200, "0123456789", {"last-modified: " MTIME_TEXT}, 0},
    {"the root's index.html", GET("/") END, 200, "<h1>home</h1>\n",
     {"content-type: text/html; charset=utf-8"}, 0},
    {"a directory without its slash: 301", GET("/docs") END, 301, NULL, {"location: /docs/"}, 0},
    {"the 301 keeps the query", GET("/docs?x=1") END, 301, NULL, {"location: /docs/?x=1"}, 0},
    {"a directory's index.html", GET("/docs/") END, 200, "<h1>docs</h1>\n", {NULL}, 0},
    {"an encoded name", GET("/hell%6F.txt") END, 200, "hello world\n", {NULL}, 0},
    {"an absolute-form target", "GET http://t/hello.txt HTTP/1.1\r\n" H END, 200, "hello world\n",
     {NULL}, 0},
    {"a symlink inside the root", GET("/link_in") END, 200, "hello world\n", {NULL}, 0},
    {"first directory of a mount wins", GET("/static/both.txt") END, 200, "both from s1\n", {NULL}, 0},
    {"second directory of a mount", GET("/static/two.txt") END, 200, "two from s2\n", {NULL}, 0},
    {"a mount's own prefix", GET("/static/one.txt") END, 200, "one from s1\n", {NULL}, 0},

    {"range: first bytes", GET("/digits.txt") "Range: bytes=0-4\r\n" END, 206, "01234",
     {"content-range: bytes 0-4/10", "content-length: 5"}, 0},
    {"range: suffix", GET("/digits.txt") "Range: bytes=-3\r\n" END, 206, "789",
     {"content-range: bytes 7-9/10"}, 0},
    {"range: open end", GET("/digits.txt") "Range: bytes=8-\r\n" END, 206, "89",
     {"content-range: bytes 8-9/10"}, 0},
    {"range: last past the end", GET("/digits.txt") "Range: bytes=5-100\r\n" END, 206, "56789",
     {"content-range: bytes 5-9/10"}, 0},
    {"range: unsatisfiable", GET("/digits.txt") "Range: bytes=10-\r\n" END, 416, "",
     {"content-range: bytes */10", "content-length: 0"}, 0},
    {"range: invalid is ignored", GET("/digits.txt") "Range: bytes=5-1\r\n" END, 200, "0123456789",
     {"!content-range"}, 0},
    {"range: other unit ignored", GET("/digits.txt") "Range: lines=1-2\r\n" END, 200, "0123456789",
     {NULL}, 0},
    {"range: twice is ignored", GET("/digits.txt") "Range: bytes=0-1\r\nRange: bytes=2-3\r\n" END,
     200, "0123456789", {NULL}, 0},
    {"range on HEAD is ignored", "HEAD /digits.txt HTTP/1.1\r\n" H "Range: bytes=0-1\r\n" END, 200,
     "", {"content-length: 10"}, 0},
    {"range: several, multipart", GET("/digits.txt") "Range: bytes=0-1,-2\r\n" END, 206, NULL,
     {"content-type: multipart/byteranges; boundary=up-"}, 0},
    {"If-Range with the current date: the range", GET("/digits.txt") "Range: bytes=0-1\r\n"
     "If-Range: " MTIME_TEXT "\r\n" END, 206, "01", {NULL}, 0},
    {"If-Range with another date: the whole file", GET("/digits.txt") "Range: bytes=0-1\r\n"
     "If-Range: Tue, 14 Nov 2023 22:13:19 GMT\r\n" END, 200, "0123456789", {NULL}, 0},
    {"If-Range with an old etag: the whole file", GET("/digits.txt") "Range: bytes=0-1\r\n"
     "If-Range: \"not-it\"\r\n" END, 200, "0123456789", {NULL}, 0},

    {"If-Modified-Since the mtime: 304", GET("/digits.txt") "If-Modified-Since: " MTIME_TEXT "\r\n"
     END, 304, "", {"last-modified: " MTIME_TEXT, "!content-length"}, 0},
    {"If-Modified-Since earlier: 200", GET("/digits.txt")
     "If-Modified-Since: Tue, 14 Nov 2023 22:13:19 GMT\r\n" END, 200, "0123456789", {NULL}, 0},
    {"If-None-Match star: 304", GET("/digits.txt") "If-None-Match: *\r\n" END, 304, "", {NULL}, 0},
    {"If-None-Match another: 200", GET("/digits.txt") "If-None-Match: \"x\"\r\n" END, 200,
     "0123456789", {NULL}, 0},
    {"If-Match another: 412", GET("/digits.txt") "If-Match: \"x\"\r\n" END, 412, NULL, {NULL}, 0},
    {"If-Unmodified-Since earlier: 412", GET("/digits.txt")
     "If-Unmodified-Since: Tue, 14 Nov 2023 22:13:19 GMT\r\n" END, 412, NULL, {NULL}, 0},

    {"br chosen", GET("/app.css") "Accept-Encoding: gzip, deflate, br\r\n" END, 200, "BR-OF-APP-CSS",
     {"content-encoding: br", "vary: accept-encoding", "content-type: text/css; charset=utf-8"}, 0},
    {"gzip chosen", GET("/app.css") "Accept-Encoding: gzip\r\n" END, 200, "GZ-OF-APP-CSS",
     {"content-encoding: gzip", "vary: accept-encoding"}, 0},
    {"br refused by q=0", GET("/app.css") "Accept-Encoding: br;q=0, gzip;q=0.5\r\n" END, 200,
     "GZ-OF-APP-CSS", {"content-encoding: gzip"}, 0},
    {"identity still says vary (nginx's gzip_static does not)", GET("/app.css") END, 200,
     "body { color: red }\n", {"vary: accept-encoding", "!content-encoding"}, 0},
    {"range of the br variant", GET("/app.css") "Accept-Encoding: br\r\nRange: bytes=0-1\r\n" END,
     206, "BR", {"content-encoding: br", "content-range: bytes 0-1/13"}, 0},
    {"a variant is never asked for by name", GET("/app.css.gz") END, 200, "GZ-OF-APP-CSS",
     {"!content-encoding"}, 0},

    {"fingerprinted asset: immutable", GET("/assets/app-0123abcd.js") END, 200, NULL,
     {"cache-control: public, max-age=31536000, immutable"}, 0},
    {"digested asset: immutable", GET("/assets/app.digested.js") END, 200, NULL,
     {"cache-control: public, max-age=31536000, immutable"}, 0},
    {"not a fingerprint", GET("/assets/jquery-3.js") END, 200, NULL, {"!cache-control"}, 0},

    {"a miss goes to the app", GET("/posts/1") END, 200, "app: /posts/1", {NULL}, 1},
    {"POST goes to the app", "POST /hello.txt HTTP/1.1\r\n" H "Content-Length: 0\r\n" END, 200,
     "app: /hello.txt", {NULL}, 1},
    {"a directory without index goes to the app", GET("/empty/") END, 200, "app: /empty/", {NULL}, 1},
    {"a file asked as a directory", GET("/hello.txt/") END, 200, "app: /hello.txt/", {NULL}, 1},
    {"a WebSocket handshake goes to the app", GET("/hello.txt") "Connection: upgrade\r\n"
     "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
     END, 200, "app: /hello.txt", {NULL}, 1},
    {"an event-stream request goes to the app", GET("/hello.txt") "Accept: text/event-stream\r\n"
     END, 200, "app: /hello.txt", {NULL}, 1},
    {"a dotfile goes to the app", GET("/.env") END, 200, "app: /.env", {NULL}, 1},
    {"clean URLs are off by default", GET("/about") END, 200, "app: /about", {NULL}, 1},
    {"no listing by default", GET("/list/") END, 200, "app: /list/", {NULL}, 1},
};

static void run_case(const static_case_t *sc, int byte_by_byte)
{
    const char *how = byte_by_byte ? "byte by byte" : "whole";
    harness_t h;
    up_static_t *st = new_static(0, 1000);
    start(&h, st);
    client_t c;
    response_t res;
    int head_only = strncmp(sc->request, "HEAD", 4) == 0;
    int got = exchange(&h, &c, sc->request, byte_by_byte, head_only, &res);
    CHECK(got && res.status == sc->status, "%s (%s): status %d, want %d", sc->name, how,
          got ? res.status : 0, sc->status);
    if (got && sc->body != NULL)
        CHECK(res.body_len == strlen(sc->body) && memcmp(res.body, sc->body, res.body_len) == 0,
              "%s (%s): body \"%.60s\", want \"%s\"", sc->name, how, res.body, sc->body);
    for (int i = 0; got && i < 5 && sc->fields[i] != NULL; i++) {
        const char *f = sc->fields[i];
        char buf[256];
        if (f[0] == '!') {
            CHECK(field(&res, f + 1, buf, sizeof(buf)) == NULL, "%s (%s): has %s: %s", sc->name,
                  how, f + 1, buf);
            continue;
        }
        char name[64];
        const char *colon = strchr(f, ':');
        snprintf(name, sizeof(name), "%.*s", (int)(colon - f), f);
        const char *v = field(&res, name, buf, sizeof(buf));
        CHECK(v != NULL && strncmp(v, colon + 2, strlen(colon + 2)) == 0,
              "%s (%s): %s is \"%s\", want \"%s\"", sc->name, how, name, v ? v : "(none)", colon + 2);
    }
    CHECK(got && res.has_date, "%s (%s): a date", sc->name, how);
    CHECK(app_calls == sc->app, "%s (%s): the app was called %d times", sc->name, how, app_calls);
    CHECK(got && !res.close, "%s (%s): kept alive", sc->name, how);
    if (got)
        response_free(&res);
    client_close(&c);
    harness_stop(&h);
    up_static_free(st);
}

/* ---------------------------------------------------------------- the rest */

/* One request on a running server, its response. */
static int ask(harness_t *h, const char *request, response_t *res)
{
    client_t c;
    int got = exchange(h, &c, request, 0, strncmp(request, "HEAD", 4) == 0, res);
    client_close(&c);
    return got;
}

static void test_multipart_body(void)
{
    harness_t h;
    up_static_t *st = new_static(0, 1000);
    start(&h, st);
    response_t res;
    CHECK(ask(&h, GET("/digits.txt") "Range: bytes=0-1,-2\r\n" END, &res), "multipart response");
    char ct[128], boundary[64];
    field(&res, "content-type", ct, sizeof(ct));
    snprintf(boundary, sizeof(boundary), "%s", strstr(ct, "boundary=") + 9);
    char want[512];
    snprintf(want, sizeof(want),
             "\r\n--%s\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-range: bytes 0-1/10"
             "\r\n\r\n01\r\n--%s\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-range: "
             "bytes 8-9/10\r\n\r\n89\r\n--%s--\r\n",
             boundary, boundary, boundary);
    CHECK(strcmp(res.body, want) == 0, "the parts: \"%s\"", res.body);
    CHECK(res.content_length == (int64_t)strlen(want), "content-length %lld is the body's",
          (long long)res.content_length);
    response_free(&res);
    CHECK(ask(&h, GET("/app.css") "Accept-Encoding: br\r\nRange: bytes=0-1,3-4\r\n" END, &res) &&
              res.status == 200 && strcmp(res.body, "BR-OF-APP-CSS") == 0,
          "several ranges of a variant: the whole variant");
    response_free(&res);
    harness_stop(&h);
    up_static_free(st);
}

static void test_etag_round_trip(void)
{
    harness_t h;
    up_static_t *st = new_static(0, 1000);
    start(&h, st);
    response_t res;
    char etag[128], req[512];
    ask(&h, GET("/digits.txt") END, &res);
    CHECK(field(&res, "etag", etag, sizeof(etag)) != NULL && etag[0] == '"', "an etag: %s", etag);
    response_free(&res);
    snprintf(req, sizeof(req), GET("/digits.txt") "If-None-Match: %s\r\n" END, etag);
    CHECK(ask(&h, req, &res) && res.status == 304, "If-None-Match with it: 304");
    char again[128];
    CHECK(field(&res, "etag", again, sizeof(again)) && strcmp(again, etag) == 0,
          "the 304 carries the etag");
    response_free(&res);
    snprintf(req, sizeof(req), GET("/digits.txt") "If-None-Match: W/%s\r\n" END, etag);
    CHECK(ask(&h, req, &res) && res.status == 304, "its weak form too (weak comparison)");
    response_free(&res);
    snprintf(req, sizeof(req), GET("/digits.txt") "If-Range: %s\r\nRange: bytes=2-3\r\n" END, etag);
    CHECK(ask(&h, req, &res) && res.status == 206 && strcmp(res.body, "23") == 0,
          "If-Range with the current etag: the range (Iodine inverts this)");
    response_free(&res);
    snprintf(req, sizeof(req), GET("/digits.txt") "If-Range: W/%s\r\nRange: bytes=2-3\r\n" END, etag);
    CHECK(ask(&h, req, &res) && res.status == 200, "If-Range with a weak etag: the whole file");
    response_free(&res);
    snprintf(req, sizeof(req), GET("/digits.txt") "If-Match: %s\r\n" END, etag);
    CHECK(ask(&h, req, &res) && res.status == 200, "If-Match with it: 200");
    response_free(&res);
    ask(&h, GET("/app.css") "Accept-Encoding: br\r\n" END, &res);
    char br_etag[128];
    field(&res, "etag", br_etag, sizeof(br_etag));
    CHECK(strcmp(br_etag, etag) != 0 && strstr(br_etag, "-br\"") != NULL,
          "a variant has an etag of its own: %s", br_etag);
    response_free(&res);
    snprintf(req, sizeof(req), GET("/app.css") "If-None-Match: %s\r\n" END, br_etag);
    CHECK(ask(&h, req, &res) && res.status == 200 && strcmp(res.body, "body { color: red }\n") == 0,
          "the br etag does not validate the identity response");
    response_free(&res);
    harness_stop(&h);
    up_static_free(st);
}

/* Paths that try to leave the root: the secret beside it must never show. */
static const char *const traversals[] = {
    "/../secret.txt", "/..%2fsecret.txt", "/%2e%2e/secret.txt", "/%2E%2E%2Fsecret.txt",
    "/%252e%252e/secret.txt", "/..%5csecret.txt", "/..\\secret.txt", "/%c0%ae%c0%ae/secret.txt",
    "/%c0%ae%c0%ae%c0%afsecret.txt", "/%e0%80%ae%e0%80%ae/secret.txt", "/link_out", "/link_abs",
    "/up/secret.txt", "/up/.htpasswd", "//secret.txt", "/docs/../../secret.txt",
    "/docs/%2e%2e/%2e%2e/secret.txt", "/secret.txt%00.html",
    "/static/../secret.txt", "/static/%2e%2e/%2e%2e/secret.txt", "/./secret.txt",
    "/%2fsecret.txt", "/%5c..%5csecret.txt", "/..%00/secret.txt", "/..;/secret.txt",
    "/docs/.%2e/.%2e/secret.txt",
};

static void test_traversal_never_reads_outside(unsigned flags)
{
    harness_t h;
    up_static_t *st = new_static(flags, 1000);
    start(&h, st);
    for (size_t i = 0; i < sizeof(traversals) / sizeof(traversals[0]); i++) {
        char req[512];
        snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\n" H END, traversals[i]);
        response_t res;
        client_t c;
        int got = exchange(&h, &c, req, 0, 0, &res);
        int refused = got ? res.status == 404 || res.status == 400 ||
                                (res.status == 200 && strncmp(res.body, "app: ", 5) == 0)
                          : c.eof;
        CHECK(refused, "%s: status %d \"%.40s\"", traversals[i], got ? res.status : 0,
              got ? res.body : "");
        CHECK(!got || memmem(res.raw, res.raw_len, SECRET, strlen(SECRET)) == NULL,
              "%s: the secret was sent", traversals[i]);
        if (got)
            response_free(&res);
        client_close(&c);
    }
    harness_stop(&h);
    up_static_free(st);
}

static void test_pipelined_files_and_app(void)
{
    harness_t h;
    up_static_t *st = new_static(0, 1000);
    start(&h, st);
    client_t c;
    client_open(&h, &c, GET("/hello.txt") END GET("/app") END GET("/digits.txt") END
                        "HEAD /hello.txt HTTP/1.1\r\n" H END, 0);
    static const char *const bodies[] = {"hello world\n", "app: /app", "0123456789", ""};
    for (int i = 0; i < 4; i++) {
        response_t res;
        int got = client_read_response(&h, &c, &res, i == 3, HARNESS_TIMEOUT_MS);
        CHECK(got && strcmp(res.body, bodies[i]) == 0, "pipelined %d: \"%s\"", i,
              got ? res.body : "");
        if (got)
            response_free(&res);
    }
    CHECK(app_calls == 1, "the app saw only its request");
    client_close(&c);
    harness_stop(&h);
    up_static_free(st);
}

static void test_big_file_is_sent_whole(void)
{
    harness_t h;
    up_static_t *st = new_static(0, 1000);
    start(&h, st);
    client_t c;
    /* A small send buffer: the file goes out over many writable events. */
    client_open(&h, &c, GET("/big.bin") END, 4096);
    response_t res;
    int got = client_read_response(&h, &c, &res, 0, HARNESS_TIMEOUT_MS);
    static char want[BIG_SIZE];
    harness_pattern(want, sizeof(want), 0);
    CHECK(got && res.body_len == BIG_SIZE && memcmp(res.body, want, BIG_SIZE) == 0,
          "300 KB by sendfile, intact");
    if (got)
        response_free(&res);
    /* Deleted while a second response is under way: its descriptor keeps it whole. */
    client_send_str(&h, &c, GET("/big.bin") "Range: bytes=1000-\r\n" END);
    for (int i = 0; i < 3; i++)
        harness_turn(&h, 1);
    char path[600];
    snprintf(path, sizeof(path), "%s/big.bin", root);
    unlink(path);
    got = client_read_response(&h, &c, &res, 0, HARNESS_TIMEOUT_MS);
    CHECK(got && res.status == 206 && res.body_len == BIG_SIZE - 1000 &&
              memcmp(res.body, want + 1000, BIG_SIZE - 1000) == 0,
          "a file deleted mid-way is still sent whole");
    if (got)
        response_free(&res);
    put("root/big.bin", want, sizeof(want));
    client_close(&c);
    harness_stop(&h);
    up_static_free(st);
}

static void test_change_on_disk_is_served_new(void)
{
    harness_t h;
    up_static_t *st = new_static(0, 0); /* valid_ms 0: the disk is asked on every request */
    start(&h, st);
    response_t res;
    put_str("root/changing.txt", "first\n");
    CHECK(ask(&h, GET("/changing.txt") END, &res) && strcmp(res.body, "first\n") == 0, "first");
    response_free(&res);
    put_str("root/changing.txt", "second, longer\n");
    CHECK(ask(&h, GET("/changing.txt") END, &res) && strcmp(res.body, "second, longer\n") == 0,
          "changed in place: served new");
    response_free(&res);
    put_str("root/changing.txt.tmp", "third\n");
    char from[600], to[600];
    snprintf(from, sizeof(from), "%s/changing.txt.tmp", root);
    snprintf(to, sizeof(to), "%s/changing.txt", root);
    rename(from, to);
    CHECK(ask(&h, GET("/changing.txt") END, &res) && strcmp(res.body, "third\n") == 0,
          "replaced: served new");
    response_free(&res);
    unlink(to);
    CHECK(ask(&h, GET("/changing.txt") END, &res) && strcmp(res.body, "app: /changing.txt") == 0,
          "deleted: the app's");
    response_free(&res);
    harness_stop(&h);
    up_static_free(st);
}

static void test_static_only(void)
{
    harness_t h;
    up_static_t *st = new_static(UP_STATIC_ONLY, 1000);
    const char *err = NULL;
    CHECK(up_static_set_error_page(st, "/404.html", &err) == 0, "error page: %s", err);
    start(&h, st);
    response_t res;
    CHECK(ask(&h, GET("/nothing-here") END, &res) && res.status == 404 &&
              strcmp(res.body, "<p>no such page</p>\n") == 0,
          "a miss: 404 with the error page");
    char v[128];
    CHECK(field(&res, "content-type", v, sizeof(v)) && strcmp(v, "text/html; charset=utf-8") == 0,
          "as HTML");
    response_free(&res);
    CHECK(ask(&h, "HEAD /nothing-here HTTP/1.1\r\n" H END, &res) && res.status == 404 &&
              res.body_len == 0,
          "HEAD of a miss: 404, no body");
    response_free(&res);
    CHECK(ask(&h, "POST /hello.txt HTTP/1.1\r\n" H "Content-Length: 2\r\n\r\nab", &res) &&
              res.status == 405 && field(&res, "allow", v, sizeof(v)) && strcmp(v, "GET, HEAD") == 0,
          "POST: 405 with allow");
    response_free(&res);
    CHECK(ask(&h, "OPTIONS * HTTP/1.1\r\n" H END, &res) && res.status == 405, "OPTIONS *: 405");
    response_free(&res);
    CHECK(ask(&h, GET("/%2e%2e/secret.txt") END, &res) && res.status == 404, "traversal: 404");
    response_free(&res);
    CHECK(ask(&h, GET("/hello.txt") END, &res) && res.status == 200, "a file is still a file");
    response_free(&res);
    CHECK(app_calls == 0, "the app is never called");
    harness_stop(&h);
    up_static_free(st);
}

static void test_listing(void)
{
    harness_t h;
    up_static_t *st = new_static(UP_STATIC_DIR_LISTING, 1000);
    start(&h, st);
    response_t res;
    CHECK(ask(&h, GET("/list/") END, &res) && res.status == 200, "a listing");
    CHECK(strstr(res.body, "<a href=\"a%3Cb%3E%26%22c%27.txt\">a&lt;b&gt;&amp;&quot;c&#39;.txt</a>") != NULL,
          "a hostile name escaped in the href and the text:\n%s", res.body);
    CHECK(strstr(res.body, "<a href=\"sub%20dir/\">sub dir/</a>") != NULL, "directories end in /");
    CHECK(strstr(res.body, ".hidden") == NULL, "no dotfiles");
    CHECK(strstr(res.body, "plain.txt") > strstr(res.body, "a%3Cb"), "sorted");
    CHECK(strstr(res.body, "<a href=\"../\">") != NULL, "a link up");
    response_free(&res);
    CHECK(ask(&h, GET("/docs/") END, &res) && strcmp(res.body, "<h1>docs</h1>\n") == 0,
          "index.html still wins");
    response_free(&res);
    CHECK(ask(&h, GET("/up/") END, &res) && strstr(res.body, "secret.txt") == NULL,
          "no listing of a directory out of the root");
    response_free(&res);
    harness_stop(&h);
    up_static_free(st);
}

static void test_site_config(void)
{
    harness_t h;
    up_static_t *st = new_static(UP_STATIC_CLEAN_URLS | UP_STATIC_HTTPS_ONLY | UP_STATIC_DOTFILES, 1000);
    const char *err = NULL;
    CHECK(up_static_add_header(st, "/**.txt", "x-robots-tag", "noindex", &err) == 0, "rule");
    CHECK(up_static_add_header(st, "/assets/**", "cache-control", "no-store", &err) == 0, "rule 2");
    CHECK(up_static_add_redirect(st, "/old/*", "/about", 302, &err) == 0, "redirect");
    CHECK(up_static_add_trusted_proxy(st, "10.0.0.0/8", &err) == 0, "proxy");
    CHECK(up_static_add_redirect(st, "/x", "/y", 200, &err) == -1, "a 200 redirect is refused");
    CHECK(up_static_add_header(st, "/", "bad name", "v", &err) == -1, "a bad name is refused");
    CHECK(up_static_add_header(st, "/", "x", "a\r\nb", &err) == -1, "CR LF is refused");
    CHECK(up_static_add_trusted_proxy(st, "10.0.0.0/33", &err) == -1, "a bad prefix is refused");
    start(&h, st);
    response_t res;
    char v[256];
    CHECK(ask(&h, GET("/about?x=1") END, &res) && res.status == 301 &&
              field(&res, "location", v, sizeof(v)) && strcmp(v, "https://t/about?x=1") == 0,
          "plain HTTP: 301 to https, path and query kept");
    response_free(&res);

    /* The same through a trusted proxy that says https, and an untrusted one. */
    static const struct {
        const char *addr, *proto;
        int status;
    } via[] = {{"10.1.2.3", "https", 200}, {"10.1.2.3", "http", 301},
               {"192.168.0.1", "https", 301}, {"10.1.2.3", "https, http", 200}};
    for (size_t i = 0; i < sizeof(via) / sizeof(via[0]); i++) {
        client_t c;
        client_open(&h, &c, NULL, 0);
        snprintf(c.conn->remote_addr, sizeof(c.conn->remote_addr), "%s", via[i].addr);
        char req[256];
        snprintf(req, sizeof(req), GET("/about") "X-Forwarded-Proto: %s\r\n" END, via[i].proto);
        client_send_str(&h, &c, req);
        int got = client_read_response(&h, &c, &res, 0, HARNESS_TIMEOUT_MS);
        CHECK(got && res.status == via[i].status, "from %s saying %s: %d, want %d", via[i].addr,
              via[i].proto, got ? res.status : 0, via[i].status);
        if (got && i == 0)
            CHECK(strcmp(res.body, "<p>about</p>\n") == 0, "clean URL: /about is about.html");
        if (got)
            response_free(&res);
        client_close(&c);
    }
    /* The rest as if from the trusted proxy over https. */
    static const struct {
        const char *path;
        int status;
        const char *name, *value;
    } rest[] = {
        {"/hello.txt", 200, "x-robots-tag", "noindex"},
        {"/assets/app-0123abcd.js", 200, "cache-control", "no-store"},
        {"/old/page", 302, "location", "/about"},
        {"/.env", 200, "content-length", "7"},
    };
    for (size_t i = 0; i < sizeof(rest) / sizeof(rest[0]); i++) {
        client_t c;
        client_open(&h, &c, NULL, 0);
        snprintf(c.conn->remote_addr, sizeof(c.conn->remote_addr), "10.9.9.9");
        char req[256];
        snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\n" H "X-Forwarded-Proto: https\r\n" END,
                 rest[i].path);
        client_send_str(&h, &c, req);
        int got = client_read_response(&h, &c, &res, 0, HARNESS_TIMEOUT_MS);
        CHECK(got && res.status == rest[i].status && field(&res, rest[i].name, v, sizeof(v)) &&
                  strcmp(v, rest[i].value) == 0,
              "%s: %d, %s", rest[i].path, got ? res.status : 0, rest[i].name);
        if (got && i == 1)
            CHECK(strstr(res.raw, "immutable") == NULL, "a rule's cache-control replaces ours");
        if (got)
            response_free(&res);
        client_close(&c);
    }
    harness_stop(&h);
    up_static_free(st);
}

static void test_config_errors(void)
{
    up_static_t *st = up_static_new(0, NULL);
    const char *err = NULL;
    CHECK(up_static_add_dir(st, "/", "/nonexistent/dir", &err) == -1 && err != NULL,
          "a missing directory is refused");
    CHECK(up_static_add_dir(st, "assets", root, &err) == -1, "a relative prefix is refused");
    CHECK(up_static_add_dir(st, "/assets/", root, &err) == -1, "a trailing slash is refused");
    CHECK(up_static_add_dir(st, "/a/../b", root, &err) == -1, "dot segments are refused");
    CHECK(up_static_set_error_page(st, "404.html", &err) == -1, "a relative error page is refused");
    CHECK(up_static_add_mime(st, "", "text/plain", &err) == -1, "an empty extension is refused");
    up_static_free(st);
}

int main(void)
{
    harness_watchdog(120);
    make_tree();
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        run_case(&cases[i], 0);
        run_case(&cases[i], 1);
    }
    test_multipart_body();
    test_etag_round_trip();
    test_traversal_never_reads_outside(0);
    test_traversal_never_reads_outside(UP_STATIC_DOTFILES | UP_STATIC_DIR_LISTING);
    test_pipelined_files_and_app();
    test_big_file_is_sent_whole();
    test_change_on_disk_is_served_new();
    test_static_only();
    test_listing();
    test_site_config();
    test_config_errors();
    CHECK(harness_remove_tree(base) == 0, "the test's tree %s removed", base);
    return test_report("static_file");
}
