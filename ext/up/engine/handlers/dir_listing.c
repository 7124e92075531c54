/* The HTML index of a directory; see dir_listing.h. */

#define _GNU_SOURCE
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "base/memory.h"
#include "base/utf8.h"
#include "handlers/dir_listing.h"

typedef struct text_t {
    char *p;
    size_t len, cap;
} text_t;

static void text_add(text_t *t, const char *s, size_t n)
{
    if (t->len + n > t->cap) {
        while (t->len + n > t->cap)
            t->cap = t->cap ? t->cap * 2 : 4096;
        t->p = up_realloc(t->p, t->cap);
    }
    memcpy(t->p + t->len, s, n);
    t->len += n;
}

#define TEXT_LIT(t, s) text_add((t), (s), sizeof(s) - 1)

static void text_html(text_t *t, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (s[i]) {
        case '&': TEXT_LIT(t, "&amp;"); break;
        case '<': TEXT_LIT(t, "&lt;"); break;
        case '>': TEXT_LIT(t, "&gt;"); break;
        case '"': TEXT_LIT(t, "&quot;"); break;
        case '\'': TEXT_LIT(t, "&#39;"); break;
        default: text_add(t, s + i, 1);
        }
    }
}

/* A name as a path segment of an href: everything but unreserved bytes percent-encoded, which
 * also leaves nothing for HTML to read in it. */
static void text_href(text_t *t, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~') {
            text_add(t, s + i, 1);
        } else {
            char esc[3] = {'%', "0123456789ABCDEF"[c >> 4], "0123456789ABCDEF"[c & 15]};
            text_add(t, esc, 3);
        }
    }
}

typedef struct listed_t {
    char *name;
    int is_dir;
} listed_t;

static int compare_listed(const void *a, const void *b)
{
    return strcmp(((const listed_t *)a)->name, ((const listed_t *)b)->name);
}

/* A name a request could name: valid UTF-8, no control byte, no backslash (static_path.h). */
static int listable(const char *name, int dotfiles)
{
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || (name[0] == '.' && !dotfiles))
        return 0;
    for (const char *p = name; *p != '\0'; p++) {
        unsigned char c = (unsigned char)*p;
        if (c < 0x20 || c == 0x7f || c == '\\')
            return 0;
    }
    return up_utf8_valid(name, strlen(name));
}

int up_dir_listing_html(int fd, const char *url, size_t url_len, int dotfiles, int max,
                        char **html, size_t *len)
{
    DIR *d = fdopendir(fd);
    if (d == NULL) {
        close(fd);
        return -1;
    }
    listed_t *items = up_malloc((size_t)max * sizeof(*items));
    int count = 0, truncated = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!listable(de->d_name, dotfiles))
            continue;
        if (count == max) {
            truncated = 1;
            break;
        }
        int is_dir = de->d_type == DT_DIR;
        if (de->d_type == DT_UNKNOWN || de->d_type == DT_LNK) {
            struct stat st;
            is_dir = fstatat(dirfd(d), de->d_name, &st, 0) == 0 && S_ISDIR(st.st_mode);
        }
        size_t n = strlen(de->d_name);
        items[count].name = up_malloc(n + 1);
        memcpy(items[count].name, de->d_name, n + 1);
        items[count].is_dir = is_dir;
        count++;
    }
    closedir(d);
    qsort(items, (size_t)count, sizeof(*items), compare_listed);

    text_t t = {0};
    TEXT_LIT(&t, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Index of ");
    text_html(&t, url, url_len);
    TEXT_LIT(&t, "</title></head>\n<body><h1>Index of ");
    text_html(&t, url, url_len);
    TEXT_LIT(&t, "</h1>\n<ul>\n");
    if (url_len > 1)
        TEXT_LIT(&t, "<li><a href=\"../\">../</a></li>\n");
    for (int i = 0; i < count; i++) {
        size_t n = strlen(items[i].name);
        TEXT_LIT(&t, "<li><a href=\"");
        text_href(&t, items[i].name, n);
        if (items[i].is_dir)
            TEXT_LIT(&t, "/");
        TEXT_LIT(&t, "\">");
        text_html(&t, items[i].name, n);
        if (items[i].is_dir)
            TEXT_LIT(&t, "/");
        TEXT_LIT(&t, "</a></li>\n");
        free(items[i].name);
    }
    free(items);
    TEXT_LIT(&t, "</ul>\n");
    if (truncated)
        TEXT_LIT(&t, "<p>More names are not shown.</p>\n");
    TEXT_LIT(&t, "</body></html>\n");
    *html = t.p;
    *len = t.len;
    return 0;
}
