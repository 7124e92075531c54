/* Table tests for the static file path decoder (static_path.c). Every case is decoded whole,
 * and then every prefix of it is decoded too (the decoder is not resumable, so "a byte at a
 * time" means each length from 0 up), each placed right before an unmapped page so that a read
 * past the end faults. Half the cases are refusals: the traversal corpus (encoded,
 * double-encoded, backslash, NUL, overlong UTF-8, dot segments) must never yield a path. */

#include "handlers/static_path.h"
#include "test.h"

typedef struct path_case_t {
    const char *name;
    const char *input;
    unsigned flags;
    up_static_path_result_t result;
    const char *out; /* when OK */
    int dir;
} path_case_t;

#define D UP_STATIC_PATH_DOTFILES
#define OK UP_STATIC_PATH_OK

static const path_case_t cases[] = {
    /* Accepted. */
    {"root", "/", 0, OK, "", 1},
    {"a file", "/app.css", 0, OK, "app.css", 0},
    {"nested file", "/assets/app-1a2b3c4d.js", 0, OK, "assets/app-1a2b3c4d.js", 0},
    {"a directory", "/docs/", 0, OK, "docs", 1},
    {"nested directory", "/a/b/", 0, OK, "a/b", 1},
    {"escaped space", "/a%20b.txt", 0, OK, "a b.txt", 0},
    {"escaped percent stays once-decoded", "/100%25.txt", 0, OK, "100%.txt", 0},
    {"double-encoded dots are a name, not dots", "/%252e%252e/x", 0, OK, "%2e%2e/x", 0},
    {"lower-case hex", "/%c3%a9t%c3%a9.html", 0, OK, "\xc3\xa9t\xc3\xa9.html", 0},
    {"raw UTF-8", "/\xc3\xa9t\xc3\xa9", 0, OK, "\xc3\xa9t\xc3\xa9", 0},
    {"plus is a plus", "/a+b", 0, OK, "a+b", 0},
    {"dots inside a name", "/a..b/c.d.e", 0, OK, "a..b/c.d.e", 0},
    {"three dots is a name", "/.../x", D, OK, ".../x", 0},
    {"dotfile allowed", "/.well-known/x", D, OK, ".well-known/x", 0},
    {"trailing dot in a name", "/a./b", 0, OK, "a./b", 0},
    {"escaped letters", "/%41%42", 0, OK, "AB", 0},
    {"colon and semicolon", "/a:b;c", 0, OK, "a:b;c", 0},
    {"4-byte UTF-8", "/%F0%9F%98%80", 0, OK, "\xf0\x9f\x98\x80", 0},

    /* Refused. */
    {"empty", "", 0, UP_STATIC_PATH_E_NOT_ABSOLUTE, NULL, 0},
    {"relative", "app.css", 0, UP_STATIC_PATH_E_NOT_ABSOLUTE, NULL, 0},
    {"dot dot", "/../etc/passwd", 0, UP_STATIC_PATH_E_DOT_SEGMENT, NULL, 0},
    {"dot dot in the middle", "/a/../../etc/passwd", 0, UP_STATIC_PATH_E_DOT_SEGMENT, NULL, 0},
    {"dot dot at the end", "/a/..", 0, UP_STATIC_PATH_E_DOT_SEGMENT, NULL, 0},
    {"dot dot slash at the end", "/a/../", 0, UP_STATIC_PATH_E_DOT_SEGMENT, NULL, 0},
    {"dot dot even with dotfiles", "/..", D, UP_STATIC_PATH_E_DOT_SEGMENT, NULL, 0},
    {"single dot", "/./a", 0, UP_STATIC_PATH_E_DOT_SEGMENT, NULL, 0},
    {"single dot at the end", "/a/.", D, UP_STATIC_PATH_E_DOT_SEGMENT, NULL, 0},
    {"encoded dot dot", "/%2e%2e/etc/passwd", 0, UP_STATIC_PATH_E_DOT_SEGMENT, NULL, 0},
    {"encoded dot dot, upper case", "/%2E%2E/etc/passwd", 0, UP_STATIC_PATH_E_DOT_SEGMENT, NULL, 0},
    {"half-encoded dot dot", "/.%2e/x", 0, UP_STATIC_PATH_E_DOT_SEGMENT, NULL, 0},
    {"encoded slash", "/..%2fetc", D, UP_STATIC_PATH_E_ENCODED_SLASH, NULL, 0},
    {"encoded slash, upper case", "/a%2Fb", 0, UP_STATIC_PATH_E_ENCODED_SLASH, NULL, 0},
    {"backslash", "/..\\..\\etc\\passwd", D, UP_STATIC_PATH_E_BACKSLASH, NULL, 0},
    {"encoded backslash", "/..%5c..%5cetc", D, UP_STATIC_PATH_E_BACKSLASH, NULL, 0},
    {"NUL", "/a%00.html", 0, UP_STATIC_PATH_E_CONTROL, NULL, 0},
    {"control byte", "/a%0d%0aSet-Cookie:x", 0, UP_STATIC_PATH_E_CONTROL, NULL, 0},
    {"DEL", "/a%7f", 0, UP_STATIC_PATH_E_CONTROL, NULL, 0},
    {"raw tab", "/a\tb", 0, UP_STATIC_PATH_E_CONTROL, NULL, 0},
    {"overlong dot dot", "/%c0%ae%c0%ae/etc/passwd", 0, UP_STATIC_PATH_E_BAD_UTF8, NULL, 0},
    {"overlong slash", "/..%c0%afetc", D, UP_STATIC_PATH_E_BAD_UTF8, NULL, 0},
    {"3-byte overlong dot", "/%e0%80%ae%e0%80%ae/x", 0, UP_STATIC_PATH_E_BAD_UTF8, NULL, 0},
    {"lone continuation byte", "/a%80", 0, UP_STATIC_PATH_E_BAD_UTF8, NULL, 0},
    {"truncated sequence", "/a%c3", 0, UP_STATIC_PATH_E_BAD_UTF8, NULL, 0},
    {"surrogate", "/%ed%a0%80", 0, UP_STATIC_PATH_E_BAD_UTF8, NULL, 0},
    {"empty segment", "//etc/passwd", 0, UP_STATIC_PATH_E_EMPTY_SEGMENT, NULL, 0},
    {"double slash alone", "//", 0, UP_STATIC_PATH_E_EMPTY_SEGMENT, NULL, 0},
    {"empty segment inside", "/a//b", 0, UP_STATIC_PATH_E_EMPTY_SEGMENT, NULL, 0},
    {"empty segment at the end", "/a//", 0, UP_STATIC_PATH_E_EMPTY_SEGMENT, NULL, 0},
    {"dotfile", "/.env", 0, UP_STATIC_PATH_E_DOTFILE, NULL, 0},
    {"dot directory", "/.git/config", 0, UP_STATIC_PATH_E_DOTFILE, NULL, 0},
    {"encoded dotfile", "/%2eenv", 0, UP_STATIC_PATH_E_DOTFILE, NULL, 0},
    {"nested dotfile", "/a/.htpasswd", 0, UP_STATIC_PATH_E_DOTFILE, NULL, 0},
    {"well-known is public (RFC 8615)", "/.well-known/acme-challenge/t", 0, OK, ".well-known/acme-challenge/t", 0},
    {"well-known only as the first segment", "/a/.well-known/x", 0, UP_STATIC_PATH_E_DOTFILE, NULL, 0},
    {"a dotfile under well-known", "/.well-known/.env", 0, UP_STATIC_PATH_E_DOTFILE, NULL, 0},
    {"not quite well-known", "/.well-knownx/y", 0, UP_STATIC_PATH_E_DOTFILE, NULL, 0},
    {"percent at the end", "/a%", 0, UP_STATIC_PATH_E_BAD_ESCAPE, NULL, 0},
    {"one hex digit", "/a%4", 0, UP_STATIC_PATH_E_BAD_ESCAPE, NULL, 0},
    {"not hex", "/a%zz", 0, UP_STATIC_PATH_E_BAD_ESCAPE, NULL, 0},
    {"percent before slash", "/a%/b", 0, UP_STATIC_PATH_E_BAD_ESCAPE, NULL, 0},
};

static void check_whole(const path_case_t *c)
{
    size_t len = strlen(c->input);
    char *in = guarded_copy(c->input, len);
    char out[UP_STATIC_MAX_PATH + 1];
    size_t out_len = 0;
    int dir = -1;
    up_static_path_result_t r = up_static_path_decode(in, len, c->flags, out, &out_len, &dir);
    CHECK(r == c->result, "%s: %s, want %s", c->name, up_static_path_result_name(r),
          up_static_path_result_name(c->result));
    if (r == OK && c->result == OK) {
        CHECK(out_len == strlen(c->out) && memcmp(out, c->out, out_len) == 0 && out[out_len] == 0,
              "%s: \"%s\", want \"%s\"", c->name, out, c->out);
        CHECK(dir == c->dir, "%s: dir %d, want %d", c->name, dir, c->dir);
    }
    guarded_free(in, len);
}

/* A path no segment of which is empty, "." or "..": it stays beneath whatever it is opened
 * under. */
static int safe_path(const char *p)
{
    if (*p == '\0')
        return 1;
    for (;;) {
        const char *end = strchr(p, '/');
        size_t n = end != NULL ? (size_t)(end - p) : strlen(p);
        if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return 0;
        if (end == NULL)
            return 1;
        p = end + 1;
    }
}

/* Every prefix, guarded: no overread, and whatever it yields is a safe path. */
static void check_prefixes(const path_case_t *c)
{
    size_t len = strlen(c->input);
    for (size_t n = 0; n <= len; n++) {
        char *in = guarded_copy(c->input, n);
        char out[UP_STATIC_MAX_PATH + 1];
        size_t out_len = 0;
        int dir = 0;
        if (up_static_path_decode(in, n, c->flags, out, &out_len, &dir) == OK) {
            CHECK(safe_path(out), "%s[0..%zu): \"%s\"", c->name, n, out);
        }
        guarded_free(in, n);
    }
}

static void test_too_long(void)
{
    char in[UP_STATIC_MAX_PATH + 8];
    char out[UP_STATIC_MAX_PATH + 1];
    size_t out_len;
    int dir;
    in[0] = '/';
    memset(in + 1, 'a', UP_STATIC_MAX_PATH);
    CHECK(up_static_path_decode(in, UP_STATIC_MAX_PATH + 1, 0, out, &out_len, &dir) == OK &&
              out_len == UP_STATIC_MAX_PATH,
          "exactly the limit is accepted");
    in[UP_STATIC_MAX_PATH + 1] = 'a';
    CHECK(up_static_path_decode(in, UP_STATIC_MAX_PATH + 2, 0, out, &out_len, &dir) ==
              UP_STATIC_PATH_E_TOO_LONG,
          "one byte over the limit is refused");
    memcpy(in + UP_STATIC_MAX_PATH, "/b", 2);
    CHECK(up_static_path_decode(in, UP_STATIC_MAX_PATH + 2, 0, out, &out_len, &dir) ==
              UP_STATIC_PATH_E_TOO_LONG,
          "a slash past the limit is refused");
}

int main(void)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        check_whole(&cases[i]);
        check_prefixes(&cases[i]);
    }
    test_too_long();
    return test_report("static_path");
}
