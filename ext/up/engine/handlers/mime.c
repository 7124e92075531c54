/* The media type table; see mime.h for the contract. */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "base/memory.h"
#include "handlers/mime.h"

typedef struct mime_entry_t {
    char ext[UP_MIME_MAX_EXT]; /* lower case, not NUL-terminated */
    size_t ext_len;            /* 0: a free slot */
    char *type;
    size_t type_len;
} mime_entry_t;

/* Open addressing with linear probing, at most half full; Rack's table has about 640 types. */
struct up_mime_t {
    mime_entry_t *slots;
    size_t cap; /* a power of two */
    size_t count;
};

#define INITIAL_CAP 64

static char lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c + 32) : c;
}

static uint64_t hash_ext(const char *ext, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)lower(ext[i])) * 1099511628211ull;
    return h;
}

up_mime_t *up_mime_new(void)
{
    up_mime_t *m = up_calloc(1, sizeof(*m));
    m->cap = INITIAL_CAP;
    m->slots = up_calloc(m->cap, sizeof(mime_entry_t));
    return m;
}

void up_mime_free(up_mime_t *m)
{
    if (m == NULL)
        return;
    for (size_t i = 0; i < m->cap; i++)
        free(m->slots[i].type);
    free(m->slots);
    free(m);
}

/* The slot holding ext, or the free slot where it would go. */
static mime_entry_t *find(const up_mime_t *m, const char *ext, size_t len)
{
    size_t mask = m->cap - 1;
    for (size_t i = hash_ext(ext, len) & mask;; i = (i + 1) & mask) {
        mime_entry_t *e = &m->slots[i];
        if (e->ext_len == 0)
            return e;
        if (e->ext_len == len && up_lower_eq(ext, len, e->ext, e->ext_len))
            return e;
    }
}

static void grow(up_mime_t *m)
{
    mime_entry_t *old = m->slots;
    size_t old_cap = m->cap;
    m->cap *= 2;
    m->slots = up_calloc(m->cap, sizeof(mime_entry_t));
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i].ext_len > 0)
            *find(m, old[i].ext, old[i].ext_len) = old[i];
    }
    free(old);
}

/* Types whose files are text, sent with a charset: UTF-8 is what the web writes them in. */
static int is_text(const char *type)
{
    static const char *const textual[] = {"application/javascript", "application/json",
                                          "application/xml", "application/xhtml+xml",
                                          "application/manifest+json", "image/svg+xml", NULL};
    if (strncmp(type, "text/", 5) == 0)
        return 1;
    for (const char *const *t = textual; *t != NULL; t++) {
        if (strcmp(type, *t) == 0)
            return 1;
    }
    return 0;
}

int up_mime_add(up_mime_t *m, const char *ext, const char *type)
{
    static const char charset[] = "; charset=utf-8";
    if (ext[0] == '.')
        ext++;
    size_t ext_len = strlen(ext), type_len = strlen(type);
    if (ext_len == 0 || ext_len > UP_MIME_MAX_EXT || type_len == 0 || type_len > UP_MIME_MAX_TYPE)
        return -1;
    for (size_t i = 0; i < type_len; i++) {
        unsigned char c = (unsigned char)type[i];
        if (c < 0x20 || c == 0x7f)
            return -1;
    }
    int add_charset = is_text(type) && strchr(type, ';') == NULL;
    if (add_charset && type_len + sizeof(charset) - 1 > UP_MIME_MAX_TYPE)
        return -1;
    if ((m->count + 1) * 2 > m->cap)
        grow(m);
    mime_entry_t *e = find(m, ext, ext_len);
    if (e->ext_len == 0) {
        m->count++;
        e->ext_len = ext_len;
        for (size_t i = 0; i < ext_len; i++)
            e->ext[i] = lower(ext[i]);
    }
    free(e->type);
    e->type_len = type_len + (add_charset ? sizeof(charset) - 1 : 0);
    e->type = up_malloc(e->type_len + 1);
    memcpy(e->type, type, type_len);
    if (add_charset)
        memcpy(e->type + type_len, charset, sizeof(charset) - 1);
    e->type[e->type_len] = '\0';
    return 0;
}

up_slice_t up_mime_lookup(const up_mime_t *m, const char *name, size_t len)
{
    size_t dot = len;
    while (dot > 0 && name[dot - 1] != '.' && name[dot - 1] != '/')
        dot--;
    /* No dot in the last segment, or only a leading one (".htaccess" has no extension). */
    if (dot <= 1 || name[dot - 1] != '.' || name[dot - 2] == '/' || len - dot > UP_MIME_MAX_EXT ||
        len == dot)
        return UP_SLICE_LIT(UP_MIME_DEFAULT);
    const mime_entry_t *e = find(m, name + dot, len - dot);
    if (e->ext_len == 0)
        return UP_SLICE_LIT(UP_MIME_DEFAULT);
    return up_slice(e->type, e->type_len);
}
