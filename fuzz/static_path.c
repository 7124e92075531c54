/* libFuzzer target for the static file path decoder (ext/up/engine/handlers/static_path.c).
 *
 * The first byte chooses the flags (dotfiles allowed or not); the rest is a request path. Each
 * input is decoded whole and as every prefix of it (up to PREFIX_MAX bytes), each in its own
 * exactly-sized block. Whatever is accepted must be a path that stays beneath any directory it
 * is opened under: relative, no empty, "." or ".." segment, no NUL or other control byte, no
 * backslash, valid UTF-8, at most UP_STATIC_MAX_PATH bytes, NUL-terminated; no dotfile segment
 * unless allowed, but for a first segment ".well-known" (RFC 8615); and it must be what
 * decoding the percent-escapes of the input once gives. */

#include "fuzz.h"
#include "base/utf8.h"
#include "handlers/static_path.h"

#define PREFIX_MAX 512

static int hex(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* A second, plain decoding to compare with: every %XX once, nothing else. */
static size_t decode_once(const char *in, size_t len, char *out)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (in[i] == '%' && i + 2 < len && hex(in[i + 1]) >= 0 && hex(in[i + 2]) >= 0) {
            out[n++] = (char)(hex(in[i + 1]) * 16 + hex(in[i + 2]));
            i += 2;
        } else {
            out[n++] = in[i];
        }
    }
    return n;
}

static void check_safe(const char *out, size_t len, unsigned flags)
{
    FUZZ_CHECK(len <= UP_STATIC_MAX_PATH && out[len] == '\0');
    FUZZ_CHECK(up_utf8_valid(out, len));
    if (len == 0)
        return;
    FUZZ_CHECK(out[0] != '/');
    size_t seg = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len) {
            unsigned char c = (unsigned char)out[i];
            FUZZ_CHECK(c >= 0x20 && c != 0x7f && c != '\\');
            if (c != '/')
                continue;
        }
        size_t n = i - seg;
        FUZZ_CHECK(n > 0);
        FUZZ_CHECK(!(n == 1 && out[seg] == '.'));
        FUZZ_CHECK(!(n == 2 && out[seg] == '.' && out[seg + 1] == '.'));
        if (!(flags & UP_STATIC_PATH_DOTFILES))
            FUZZ_CHECK(out[seg] != '.' || (seg == 0 && n == 11 && memcmp(out, ".well-known", 11) == 0));
        seg = i + 1;
    }
}

static void run(const char *in, size_t len, unsigned flags, int compare)
{
    char out[UP_STATIC_MAX_PATH + 1];
    size_t out_len = 0;
    int dir = -1;
    up_static_path_result_t r = up_static_path_decode(in, len, flags, out, &out_len, &dir);
    if (r != UP_STATIC_PATH_OK) {
        FUZZ_CHECK(up_static_path_result_name(r)[0] != '?');
        return;
    }
    check_safe(out, out_len, flags);
    FUZZ_CHECK(dir == 0 || dir == 1);
    if (!compare)
        return;
    /* The input without its leading '/' (and a trailing one), decoded once, is the output. */
    char *plain = malloc(len + 1);
    FUZZ_CHECK(plain != NULL);
    size_t body = len - 1 - (dir && len > 1 ? 1 : 0);
    size_t n = decode_once(in + 1, body, plain);
    FUZZ_CHECK(n == out_len && memcmp(plain, out, n) == 0);
    free(plain);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    unsigned flags = (data[0] & 1) ? UP_STATIC_PATH_DOTFILES : 0;
    data++;
    size--;
    char *whole = fuzz_copy(data, size);
    run(whole, size, flags, 1);
    free(whole);
    for (size_t n = 0; n < size && n <= PREFIX_MAX; n++) {
        char *prefix = fuzz_copy(data, n);
        run(prefix, n, flags, 1);
        free(prefix);
    }
    return 0;
}
