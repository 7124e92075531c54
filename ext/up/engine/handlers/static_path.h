#ifndef UP_STATIC_PATH_H
#define UP_STATIC_PATH_H

/* The request path of a static file, decoded and checked: the one place where what a client
 * sends becomes a name to open under a root directory. A pure function: bytes in, a relative
 * path out (no leading '/', NUL-terminated, for openat), no allocation, no I/O.
 *
 * Percent-escapes are decoded once (RFC 3986 §2.1), never twice, and what the decoding yields is
 * then checked whole, so an escape cannot smuggle what a plain byte could not: a path is refused
 * when it holds, decoded, a "." or ".." segment (RFC 3986 §5.2.4: they would climb out of the
 * root, or name a file two ways), an empty segment ("//"), a backslash, a NUL or another control
 * byte, an escaped '/' ("%2F": one segment or two?), bytes that are not UTF-8 (an overlong "%C0%AE"
 * is not a '.', and no file is named by it either), a segment starting with '.' (a dotfile)
 * unless allowed, or more than UP_STATIC_MAX_PATH bytes. A refused path is not a file: the
 * request goes to the app (or gets a 404), never to the disk. */

#include <stddef.h>

/* Longest decoded path, in bytes, without its NUL. */
#define UP_STATIC_MAX_PATH 2048

typedef enum up_static_path_result_t {
    UP_STATIC_PATH_OK = 0,
    UP_STATIC_PATH_E_NOT_ABSOLUTE, /* does not start with '/' */
    UP_STATIC_PATH_E_BAD_ESCAPE,   /* '%' without two hex digits after it */
    UP_STATIC_PATH_E_ENCODED_SLASH,
    UP_STATIC_PATH_E_CONTROL,      /* NUL, another C0 control byte or DEL, decoded or not */
    UP_STATIC_PATH_E_BACKSLASH,
    UP_STATIC_PATH_E_DOT_SEGMENT,  /* "." or ".." */
    UP_STATIC_PATH_E_EMPTY_SEGMENT,
    UP_STATIC_PATH_E_DOTFILE,
    UP_STATIC_PATH_E_BAD_UTF8,
    UP_STATIC_PATH_E_TOO_LONG
} up_static_path_result_t;

#define UP_STATIC_PATH_DOTFILES 1u /* allow segments that start with '.' (never "." or "..") */

/* Decodes path[0..len) (the request's path, up to its '?') into out, which has room for
 * UP_STATIC_MAX_PATH + 1 bytes: the path without its leading '/', NUL-terminated, "" for "/".
 * *out_len gets its length and *dir whether the path ended with '/' (it names a directory).
 * A trailing '/' is not kept in out. Returns UP_STATIC_PATH_OK or why the path is refused
 * (out is then unspecified). Any thread. */
up_static_path_result_t up_static_path_decode(const char *path, size_t len, unsigned flags,
                                              char *out, size_t *out_len, int *dir);

/* A short description of a result, for tests and logs. */
const char *up_static_path_result_name(up_static_path_result_t r);

#endif
