#ifndef UP_DIR_LISTING_H
#define UP_DIR_LISTING_H

/* The HTML index of a directory that the static handler answers with (UP_STATIC_DIR_LISTING):
 * its entries sorted by name, directories with a trailing '/', every name escaped for HTML and
 * percent-encoded in its href, and only names a request could name (valid UTF-8, no control
 * byte, no backslash; dotfiles only when asked). */

#include <stddef.h>

/* Reads the directory open at fd (taken: closed here) and makes its index as url (the decoded
 * path the client asked for) names it, listing at most max entries (a line says when there
 * were more). Returns 0 with the page in *html (malloc'd, the caller frees it) and its length in
 * *len, or -1 when the directory cannot be read. */
int up_dir_listing_html(int fd, const char *url, size_t url_len, int dotfiles, int max,
                        char **html, size_t *len);

#endif
