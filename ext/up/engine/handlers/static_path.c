/* The static file path decoder; see static_path.h for the contract. */

#include <string.h>
#include "base/utf8.h"
#include "handlers/static_path.h"

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The first segment that is public though it starts with a dot: RFC 8615's well-known URIs
 * (ACME's HTTP-01 answers among them, RFC 8555 §8.3). */
static const char well_known[] = ".well-known";

/* Checks the segment out[start..end) once it is complete. */
static up_static_path_result_t check_segment(const char *out, size_t start, size_t end,
                                             unsigned flags)
{
    size_t n = end - start;
    if (n == 0)
        return UP_STATIC_PATH_E_EMPTY_SEGMENT;
    if (out[start] != '.')
        return UP_STATIC_PATH_OK;
    if (n == 1 || (n == 2 && out[start + 1] == '.'))
        return UP_STATIC_PATH_E_DOT_SEGMENT;
    if (start == 0 && n == sizeof(well_known) - 1 && memcmp(out, well_known, n) == 0)
        return UP_STATIC_PATH_OK;
    return (flags & UP_STATIC_PATH_DOTFILES) ? UP_STATIC_PATH_OK : UP_STATIC_PATH_E_DOTFILE;
}

up_static_path_result_t up_static_path_decode(const char *path, size_t len, unsigned flags,
                                              char *out, size_t *out_len, int *dir)
{
    if (len == 0 || path[0] != '/')
        return UP_STATIC_PATH_E_NOT_ABSOLUTE;
    size_t n = 0, seg = 0;
    *dir = 0;
    for (size_t i = 1; i < len; i++) {
        unsigned char c = (unsigned char)path[i];
        if (c == '/') {
            if (i + 1 == len) {
                /* A trailing '/': the segment before it must be whole (not "a//" or "//"),
                 * and the path names a directory. */
                up_static_path_result_t r = check_segment(out, seg, n, flags);
                if (r != UP_STATIC_PATH_OK)
                    return r;
                *dir = 1;
                break;
            }
            up_static_path_result_t r = check_segment(out, seg, n, flags);
            if (r != UP_STATIC_PATH_OK)
                return r;
            if (n == UP_STATIC_MAX_PATH)
                return UP_STATIC_PATH_E_TOO_LONG;
            out[n++] = '/';
            seg = n;
            continue;
        }
        if (c == '%') {
            int hi = i + 2 < len ? hex_value(path[i + 1]) : -1;
            int lo = hi >= 0 ? hex_value(path[i + 2]) : -1;
            if (lo < 0)
                return UP_STATIC_PATH_E_BAD_ESCAPE;
            c = (unsigned char)(hi * 16 + lo);
            i += 2;
            if (c == '/')
                return UP_STATIC_PATH_E_ENCODED_SLASH;
        }
        if (c < 0x20 || c == 0x7f)
            return UP_STATIC_PATH_E_CONTROL;
        if (c == '\\')
            return UP_STATIC_PATH_E_BACKSLASH;
        if (n == UP_STATIC_MAX_PATH)
            return UP_STATIC_PATH_E_TOO_LONG;
        out[n++] = (char)c;
    }
    if (len == 1) {
        *dir = 1; /* "/": the root */
    } else if (!*dir) {
        up_static_path_result_t r = check_segment(out, seg, n, flags);
        if (r != UP_STATIC_PATH_OK)
            return r;
    }
    if (!up_utf8_valid(out, n))
        return UP_STATIC_PATH_E_BAD_UTF8;
    out[n] = '\0';
    *out_len = n;
    return UP_STATIC_PATH_OK;
}

const char *up_static_path_result_name(up_static_path_result_t r)
{
    switch (r) {
    case UP_STATIC_PATH_OK: return "ok";
    case UP_STATIC_PATH_E_NOT_ABSOLUTE: return "not absolute";
    case UP_STATIC_PATH_E_BAD_ESCAPE: return "bad escape";
    case UP_STATIC_PATH_E_ENCODED_SLASH: return "encoded slash";
    case UP_STATIC_PATH_E_CONTROL: return "control byte";
    case UP_STATIC_PATH_E_BACKSLASH: return "backslash";
    case UP_STATIC_PATH_E_DOT_SEGMENT: return "dot segment";
    case UP_STATIC_PATH_E_EMPTY_SEGMENT: return "empty segment";
    case UP_STATIC_PATH_E_DOTFILE: return "dotfile";
    case UP_STATIC_PATH_E_BAD_UTF8: return "bad utf-8";
    case UP_STATIC_PATH_E_TOO_LONG: return "too long";
    }
    return "?";
}
