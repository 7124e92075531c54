/* The static file handler; see static_file.h for the contract. */

#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base/cidr.h"
#include "base/memory.h"
#include "base/path_glob.h"
#include "base/token.h"
#include "handlers/content_coding.h"
#include "handlers/dir_listing.h"
#include "handlers/file_response.h"
#include "handlers/precondition.h"
#include "handlers/range.h"
#include "handlers/static_file.h"
#include "handlers/static_path.h"
#include "http1/request.h"
#include "http1/response.h"

/* Room after a decoded path for what lookups append: "/index.html", ".html", a NUL. */
#define PATH_EXTRA 16
/* One year, the longest max-age RFC 9111 §5.2.2.1 advises; "immutable" is RFC 8246. */
#define IMMUTABLE "public, max-age=31536000, immutable"
/* Fingerprints are hex digests (Sprockets: 64 digits, Propshaft: 8); fewer than this many
 * hex digits after the last '-' is a name, not a digest ("jquery-3.js"). */
#define MIN_DIGEST 7

typedef struct mount_t {
    char *prefix; /* relative: "" for "/", "assets" for "/assets" */
    size_t prefix_len;
    int roots[UP_STATIC_MAX_DIRS];
    int num_roots;
} mount_t;

typedef struct header_rule_t {
    up_path_glob_t glob;
    char *name, *value;
    size_t name_len, value_len;
    int cache_control; /* the rule sets cache-control: no default one then */
} header_rule_t;

typedef struct redirect_t {
    up_path_glob_t glob;
    char *location;
    size_t location_len;
    int status;
} redirect_t;

struct up_static_t {
    unsigned flags;
    up_file_cache_t *cache;
    up_mime_t *mime;
    mount_t mounts[UP_STATIC_MAX_MOUNTS]; /* longest prefix first */
    int num_mounts;
    header_rule_t rules[UP_STATIC_MAX_RULES];
    int num_rules;
    redirect_t redirects[UP_STATIC_MAX_RULES];
    int num_redirects;
    up_cidr_t proxies[UP_STATIC_MAX_PROXIES];
    int num_proxies;
    char *error_page; /* relative to the "/" mount, NULL for none */
    size_t error_page_len;
    uint64_t boundaries; /* multipart responses made: each gets its own boundary */
};

/* ---------------------------------------------------------------- configuration */

up_static_t *up_static_new(unsigned flags, const up_file_cache_options_t *cache)
{
    up_static_t *st = up_calloc(1, sizeof(*st));
    up_file_cache_options_t defaults;
    if (cache == NULL) {
        up_file_cache_options_defaults(&defaults);
        cache = &defaults;
    }
    st->flags = flags;
    st->cache = up_file_cache_new(cache);
    st->mime = up_mime_new();
    return st;
}

void up_static_free(up_static_t *st)
{
    if (st == NULL)
        return;
    up_file_cache_free(st->cache);
    up_mime_free(st->mime);
    for (int i = 0; i < st->num_mounts; i++)
        free(st->mounts[i].prefix);
    for (int i = 0; i < st->num_rules; i++) {
        free(st->rules[i].name);
        free(st->rules[i].value);
    }
    for (int i = 0; i < st->num_redirects; i++)
        free(st->redirects[i].location);
    free(st->error_page);
    free(st);
}

up_file_cache_t *up_static_cache(up_static_t *st)
{
    return st->cache;
}

static char *dup_bytes(const char *s, size_t len)
{
    char *p = up_malloc(len + 1);
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

static int fail(const char **err, const char *message)
{
    *err = message;
    return -1;
}

/* A URL prefix as a decoded relative path, checked as request paths are. */
static int relative_prefix(const char *url_prefix, char *out, size_t *len, const char **err)
{
    int dir;
    if (strcmp(url_prefix, "/") == 0) {
        out[0] = '\0';
        *len = 0;
        return 0;
    }
    if (up_static_path_decode(url_prefix, strlen(url_prefix), UP_STATIC_PATH_DOTFILES, out, len,
                              &dir) != UP_STATIC_PATH_OK ||
        dir)
        return fail(err, "a static URL prefix must be / or a path like /assets (no trailing /)");
    return 0;
}

int up_static_add_dir(up_static_t *st, const char *url_prefix, const char *dir, const char **err)
{
    char prefix[UP_STATIC_MAX_PATH + 1];
    size_t len;
    if (relative_prefix(url_prefix, prefix, &len, err) != 0)
        return -1;
    mount_t *m = NULL;
    for (int i = 0; i < st->num_mounts; i++) {
        if (st->mounts[i].prefix_len == len && memcmp(st->mounts[i].prefix, prefix, len) == 0)
            m = &st->mounts[i];
    }
    if (m == NULL) {
        if (st->num_mounts == UP_STATIC_MAX_MOUNTS)
            return fail(err, "too many static URL prefixes");
        /* Keep the longest prefix first: it is looked at first. */
        int at = 0;
        while (at < st->num_mounts && st->mounts[at].prefix_len >= len)
            at++;
        memmove(&st->mounts[at + 1], &st->mounts[at], (size_t)(st->num_mounts - at) * sizeof(mount_t));
        st->num_mounts++;
        m = &st->mounts[at];
        memset(m, 0, sizeof(*m));
        m->prefix = dup_bytes(prefix, len);
        m->prefix_len = len;
    }
    if (m->num_roots == UP_STATIC_MAX_DIRS)
        return fail(err, "too many directories for one static URL prefix");
    int root = up_file_cache_add_root(st->cache, dir);
    if (root < 0)
        return fail(err, "cannot open the static directory (is it a directory?)");
    m->roots[m->num_roots++] = root;
    return 0;
}

int up_static_add_mime(up_static_t *st, const char *ext, const char *type, const char **err)
{
    if (up_mime_add(st->mime, ext, type) != 0)
        return fail(err, "invalid media type or extension");
    return 0;
}

static int valid_field_value(const char *v)
{
    for (; *v != '\0'; v++) {
        if ((unsigned char)*v < 0x20 && *v != '\t')
            return 0;
        if (*v == 0x7f)
            return 0;
    }
    return 1;
}

int up_static_add_header(up_static_t *st, const char *glob, const char *name, const char *value,
                         const char **err)
{
    if (st->num_rules == UP_STATIC_MAX_RULES)
        return fail(err, "too many header rules");
    header_rule_t *r = &st->rules[st->num_rules];
    if (up_path_glob_compile(&r->glob, glob, strlen(glob)) != 0)
        return fail(err, "the path glob is too long");
    size_t name_len = strlen(name);
    for (size_t i = 0; i < name_len; i++) {
        if (!up_is_tchar((unsigned char)name[i]))
            return fail(err, "invalid header name");
    }
    if (name_len == 0 || !valid_field_value(value))
        return fail(err, "invalid header name or value");
    r->name = dup_bytes(name, name_len);
    r->name_len = name_len;
    r->value = dup_bytes(value, strlen(value));
    r->value_len = strlen(value);
    r->cache_control = UP_LOWER_EQ(name, name_len, "cache-control");
    st->num_rules++;
    return 0;
}

int up_static_add_redirect(up_static_t *st, const char *glob, const char *location, int status,
                           const char **err)
{
    if (st->num_redirects == UP_STATIC_MAX_RULES)
        return fail(err, "too many redirects");
    if (status != 301 && status != 302 && status != 303 && status != 307 && status != 308)
        return fail(err, "a redirect status must be 301, 302, 303, 307 or 308");
    if (location[0] == '\0' || !valid_field_value(location))
        return fail(err, "invalid redirect location");
    redirect_t *r = &st->redirects[st->num_redirects];
    if (up_path_glob_compile(&r->glob, glob, strlen(glob)) != 0)
        return fail(err, "the path glob is too long");
    r->location = dup_bytes(location, strlen(location));
    r->location_len = strlen(location);
    r->status = status;
    st->num_redirects++;
    return 0;
}

int up_static_add_trusted_proxy(up_static_t *st, const char *cidr, const char **err)
{
    if (st->num_proxies == UP_STATIC_MAX_PROXIES)
        return fail(err, "too many trusted proxies");
    switch (up_cidr_parse(cidr, &st->proxies[st->num_proxies])) {
    case UP_CIDR_BAD_ADDRESS:
        return fail(err, "invalid trusted proxy address");
    case UP_CIDR_BAD_PREFIX:
        return fail(err, "invalid trusted proxy prefix length");
    case UP_CIDR_OK:
        break;
    }
    st->num_proxies++;
    return 0;
}

int up_static_set_error_page(up_static_t *st, const char *path, const char **err)
{
    char rel[UP_STATIC_MAX_PATH + 1];
    size_t len;
    int dir;
    if (up_static_path_decode(path, strlen(path), UP_STATIC_PATH_DOTFILES, rel, &len, &dir) !=
            UP_STATIC_PATH_OK ||
        dir)
        return fail(err, "the error page must be a file path like /404.html");
    free(st->error_page);
    st->error_page = dup_bytes(rel, len);
    st->error_page_len = len;
    return 0;
}

/* ---------------------------------------------------------------- the request */

typedef struct request_t {
    up_static_t *st;
    up_exchange_t *ex;
    const up_http1_request_t *head;
    up_file_request_t file; /* what a file answer reads (file_response.h) */
    up_field_lines_t accept_encoding;
    up_slice_t forwarded_proto;
    int dir; /* the path ended with '/' */
    uint64_t now_ms;
    time_t now;
    /* The decoded path without its leading '/', and room for what lookups append. */
    char path[UP_STATIC_MAX_PATH + PATH_EXTRA];
    size_t path_len;
    /* The decoded path as the client named it ("/" + path, + "/" for a directory): what globs
     * match. */
    char url[UP_STATIC_MAX_PATH + 4];
    size_t url_len;
} request_t;

/* Collects the fields the handler reads, in one pass over the head. */
static void read_fields(request_t *r)
{
    const up_http1_request_t *head = r->head;
    for (size_t i = 0; i < head->num_headers; i++) {
        up_slice_t n = head->headers[i].name, v = head->headers[i].value;
        switch (n.len) {
        case 5:
            if (UP_LOWER_EQ(n.base, n.len, "range")) {
                r->file.range = v;
                r->file.range_lines++;
            }
            break;
        case 8:
            if (UP_LOWER_EQ(n.base, n.len, "if-match"))
                up_field_lines_add(&r->file.pre.if_match, v);
            else if (UP_LOWER_EQ(n.base, n.len, "if-range"))
                up_field_lines_add(&r->file.pre.if_range, v);
            break;
        case 13:
            if (UP_LOWER_EQ(n.base, n.len, "if-none-match"))
                up_field_lines_add(&r->file.pre.if_none_match, v);
            break;
        case 15:
            if (UP_LOWER_EQ(n.base, n.len, "accept-encoding"))
                up_field_lines_add(&r->accept_encoding, v);
            break;
        case 17:
            if (UP_LOWER_EQ(n.base, n.len, "if-modified-since"))
                up_field_lines_add(&r->file.pre.if_modified_since, v);
            else if (UP_LOWER_EQ(n.base, n.len, "x-forwarded-proto") && r->forwarded_proto.base == NULL)
                r->forwarded_proto = v;
            break;
        case 19:
            if (UP_LOWER_EQ(n.base, n.len, "if-unmodified-since"))
                up_field_lines_add(&r->file.pre.if_unmodified_since, v);
            break;
        }
    }
}

static void hdr(up_exchange_t *ex, const char *name, size_t name_len, const char *value,
                size_t value_len)
{
    up_response_add_header(ex, name, name_len, value, value_len);
}

#define HDR_LIT(ex, name, value) hdr((ex), name, sizeof(name) - 1, (value), sizeof(value) - 1)
#define HDR(ex, name, value, len) hdr((ex), name, sizeof(name) - 1, (value), (len))

/* A whole small response with a text/plain body (or none for HEAD). */
static void simple(request_t *r, int status, const char *body)
{
    up_response_send_simple(r->ex, status, body, 0);
}

static void redirect(request_t *r, int status, const char *location, size_t len,
                     const char *location2, size_t len2)
{
    up_exchange_t *ex = r->ex;
    char value[UP_STATIC_MAX_PATH * 3 + 512];
    if (len + len2 > sizeof(value)) {
        simple(r, 414, "URI Too Long"); /* a Location is never cut short */
        return;
    }
    up_response_start(ex, status);
    memcpy(value, location, len);
    memcpy(value + len, location2, len2);
    HDR(ex, "location", value, len + len2);
    HDR_LIT(ex, "content-type", "text/plain; charset=utf-8");
    static const char body[] = "Moved\n";
    up_response_end_head(ex, sizeof(body) - 1);
    up_response_write(ex, body, sizeof(body) - 1);
    up_response_finish(ex);
}

/* ---------------------------------------------------------------- https_only */

static int from_trusted_proxy(const up_static_t *st, const up_conn_t *conn)
{
    up_cidr_t client;
    if (up_cidr_parse(conn->remote_addr, &client) != UP_CIDR_OK)
        return 0;
    for (int i = 0; i < st->num_proxies; i++)
        if (up_cidr_contains(&st->proxies[i], &client))
            return 1;
    return 0;
}

/* Whether the client reached us over HTTPS: its own connection, or a trusted proxy's word
 * (the first value of X-Forwarded-Proto: the proto the client used at the first proxy). */
static int is_secure(request_t *r)
{
    if (r->ex->conn->transport->secure)
        return 1;
    up_slice_t v = r->forwarded_proto;
    if (v.base == NULL || !from_trusted_proxy(r->st, r->ex->conn))
        return 0;
    size_t n = 0;
    while (n < v.len && v.base[n] != ',' && v.base[n] != ' ' && v.base[n] != '\t')
        n++;
    return UP_LOWER_EQ(v.base, n, "https");
}

/* Sends a plain-HTTP request to https://. Returns 1 when it answered. */
static int https_only(request_t *r)
{
    if (!(r->st->flags & UP_STATIC_HTTPS_ONLY) || is_secure(r))
        return 0;
    const up_http1_request_t *head = r->head;
    if (head->host.len == 0) {
        simple(r, 403, "This site is served over HTTPS only");
        return 1;
    }
    char target[UP_STATIC_MAX_PATH * 3 + 256];
    size_t n = 8 + head->host.len + head->path.len + (head->query.len > 0 ? 1 + head->query.len : 0);
    if (n > sizeof(target)) {
        simple(r, 414, "URI Too Long");
        return 1;
    }
    /* https://HOST, then the path and query as sent (of an absolute-form target too). */
    char *p = target;
    memcpy(p, "https://", 8);
    memcpy(p + 8, head->host.base, head->host.len);
    p += 8 + head->host.len;
    memcpy(p, head->path.base, head->path.len);
    p += head->path.len;
    if (head->query.len > 0) {
        *p++ = '?';
        memcpy(p, head->query.base, head->query.len);
    }
    redirect(r, 301, target, n, "", 0);
    return 1;
}

/* ---------------------------------------------------------------- file responses */

/* Whether the URL names a fingerprinted asset: under /assets/, a last segment NAME-DIGEST.EXT
 * with a hex DIGEST (Sprockets, Propshaft), or a ".digested." name (Propshaft's mark for files
 * a bundler fingerprinted already). */
static int is_fingerprinted(const request_t *r)
{
    if (r->path_len < 7 || memcmp(r->path, "assets/", 7) != 0)
        return 0;
    const char *base = r->path + r->path_len;
    while (base > r->path && base[-1] != '/')
        base--;
    size_t len = (size_t)(r->path + r->path_len - base);
    if (memmem(base, len, ".digested.", 10) != NULL)
        return 1;
    const char *dot = memchr(base + 1, '.', len - 1);
    if (dot == NULL)
        return 0;
    const char *p = dot;
    size_t digits = 0;
    while (p > base && ((p[-1] >= '0' && p[-1] <= '9') || (p[-1] >= 'a' && p[-1] <= 'f'))) {
        p--;
        digits++;
    }
    return p > base && p[-1] == '-' && digits >= MIN_DIGEST;
}

/* The fields every response about the file has (200, 206, 304): validators, vary, caching
 * and the site's rules. */
static void validator_fields(request_t *r, const up_file_entry_t *e, const up_file_rep_t *rep)
{
    up_exchange_t *ex = r->ex;
    HDR(ex, "etag", rep->etag, rep->etag_len);
    HDR(ex, "last-modified", rep->last_modified, UP_DATE_LEN);
    /* On every response for a file with variants, whichever was chosen: a cache must know the
     * answer depends on Accept-Encoding even when it got the identity one (RFC 9110 §12.5.5). */
    if (e->available != 0)
        HDR_LIT(ex, "vary", "accept-encoding");
    int cache_control_set = 0;
    for (int i = 0; i < r->st->num_rules; i++) {
        const header_rule_t *rule = &r->st->rules[i];
        if (!up_path_glob_match(&rule->glob, r->url, r->url_len))
            continue;
        hdr(ex, rule->name, rule->name_len, rule->value, rule->value_len);
        cache_control_set |= rule->cache_control;
    }
    if (!cache_control_set && is_fingerprinted(r))
        HDR_LIT(ex, "cache-control", IMMUTABLE);
}

static void content_fields(request_t *r, up_slice_t type, up_coding_t coding)
{
    up_exchange_t *ex = r->ex;
    HDR(ex, "content-type", type.base, type.len);
    HDR_LIT(ex, "accept-ranges", "bytes");
    if (coding != UP_CODING_IDENTITY) {
        const char *name = up_coding_name(coding);
        HDR(ex, "content-encoding", name, strlen(name));
    }
}

static void send_multipart(request_t *r, const up_file_entry_t *e, up_file_rep_t *rep,
                           up_slice_t type, const up_range_set_t *set)
{
    up_exchange_t *ex = r->ex;
    char boundary[UP_FILE_BOUNDARY_LEN + 1];
    up_file_boundary(boundary, ++r->st->boundaries, rep->etag, rep->etag_len);
    up_response_start(ex, 206);
    char ct[96];
    int ct_len = snprintf(ct, sizeof(ct), "multipart/byteranges; boundary=%s", boundary);
    HDR(ex, "content-type", ct, (size_t)ct_len);
    HDR_LIT(ex, "accept-ranges", "bytes");
    validator_fields(r, e, rep);
    up_response_end_head(ex, (int64_t)up_file_multipart_length(boundary, type, set, rep->size));
    up_file_multipart_write(ex, rep, boundary, type, set);
    up_response_finish(ex);
}

/* Answers with the file e: status 200 (conditions and ranges apply), or 404 (an error page). */
static void send_entry(request_t *r, const up_file_entry_t *e, int status)
{
    up_exchange_t *ex = r->ex;
    up_coding_t coding = up_coding_choose(&r->accept_encoding, e->available);
    up_file_rep_t *rep = e->reps[coding];
    up_slice_t type = up_mime_lookup(r->st->mime, r->path, r->path_len);
    if (status == 200) {
        up_validators_t v = {rep->etag, rep->etag_len, rep->mtime, r->now};
        up_range_set_t set;
        switch (up_file_decide(&r->file, &v, rep->size, coding == UP_CODING_IDENTITY, &set)) {
        case 412:
            simple(r, 412, "Precondition Failed");
            return;
        case 304:
            up_response_start(ex, 304);
            validator_fields(r, e, rep);
            up_response_end_head(ex, -1);
            up_response_finish(ex);
            return;
        case 416: {
            char value[48];
            int n = snprintf(value, sizeof(value), "bytes */%llu", (unsigned long long)rep->size);
            up_response_start(ex, 416);
            HDR(ex, "content-range", value, (size_t)n);
            HDR_LIT(ex, "accept-ranges", "bytes");
            validator_fields(r, e, rep);
            up_response_end_head(ex, 0);
            up_response_finish(ex);
            return;
        }
        case 206:
            if (set.count > 1) {
                send_multipart(r, e, rep, type, &set);
                return;
            }
            const up_range_t *range = &set.ranges[0];
            char value[80];
            size_t n = up_file_content_range(value, range, rep->size);
            up_response_start(ex, 206);
            content_fields(r, type, coding);
            HDR(ex, "content-range", value, n);
            validator_fields(r, e, rep);
            uint64_t len = range->last - range->first + 1;
            up_response_end_head(ex, (int64_t)len);
            up_file_write_part(ex, rep, range->first, len);
            up_response_finish(ex);
            return;
        }
    }
    up_response_start(ex, status);
    content_fields(r, type, coding);
    if (status == 200)
        validator_fields(r, e, rep);
    up_response_end_head(ex, (int64_t)rep->size);
    up_file_write_part(ex, rep, 0, rep->size);
    up_response_finish(ex);
}

/* ---------------------------------------------------------------- directory listings */

/* Answers with an HTML index of the directory at path under root. Returns 0 when it could not
 * be opened (then the request is a miss). */
static int send_listing(request_t *r, int root, const char *path)
{
    int fd = up_file_cache_loop_open_dir(r->st->cache, root, path);
    if (fd < 0)
        return 0;
    char *html;
    size_t len;
    if (up_dir_listing_html(fd, r->url, r->url_len, r->st->flags & UP_STATIC_DOTFILES,
                            UP_STATIC_MAX_LISTING, &html, &len) != 0)
        return 0;
    up_exchange_t *ex = r->ex;
    up_response_start(ex, 200);
    HDR_LIT(ex, "content-type", "text/html; charset=utf-8");
    HDR_LIT(ex, "cache-control", "no-cache");
    up_response_end_head(ex, (int64_t)len);
    up_response_write(ex, html, len);
    up_response_finish(ex);
    free(html);
    return 1;
}

/* ---------------------------------------------------------------- lookup */

/* Looks for path[0..len) (NUL-terminated by the caller's buffer room) as a regular file under
 * root. */
static const up_file_entry_t *regular_file(request_t *r, int root, char *path, size_t len)
{
    const up_file_entry_t *e = up_file_cache_loop_get(r->st->cache, root, path, len, r->now_ms);
    return e != NULL && e->kind == UP_FILE_REGULAR ? e : NULL;
}

/* Appends s to r->path at the mount-relative position sub..sub_len, and looks it up as a
 * file; r->path is restored to end at the same place when it is not one. */
static const up_file_entry_t *with_appended(request_t *r, int root, size_t sub, size_t sub_len,
                                            const char *s)
{
    size_t n = strlen(s);
    char *p = r->path + sub;
    memcpy(p + sub_len, s, n + 1);
    const up_file_entry_t *e = regular_file(r, root, p, sub_len + n);
    if (e != NULL)
        r->path_len = sub + sub_len + n; /* the file's name: for its content-type */
    else
        p[sub_len] = '\0';
    return e;
}

/* What a lookup found. */
typedef enum found_t { FOUND_NOTHING, FOUND_FILE, FOUND_ANSWERED } found_t;

static int mount_holds(const mount_t *m, const char *path, size_t len)
{
    if (m->prefix_len == 0)
        return 1;
    return len >= m->prefix_len && memcmp(path, m->prefix, m->prefix_len) == 0 &&
           (len == m->prefix_len || path[m->prefix_len] == '/');
}

/* Finds what r->path names in the mounts: a file (*entry), or an answer already staged (a
 * redirect to the slash form, a listing). */
static found_t find(request_t *r, const up_file_entry_t **entry)
{
    up_static_t *st = r->st;
    size_t path_len = r->path_len;
    for (int i = 0; i < st->num_mounts; i++) {
        const mount_t *m = &st->mounts[i];
        if (!mount_holds(m, r->path, path_len))
            continue;
        size_t sub = m->prefix_len == 0 ? 0 : m->prefix_len + (path_len > m->prefix_len);
        size_t sub_len = path_len - sub;
        char *p = r->path + sub;
        for (int k = 0; k < m->num_roots; k++) {
            int root = m->roots[k];
            const up_file_entry_t *e =
                up_file_cache_loop_get(st->cache, root, p, sub_len, r->now_ms);
            if (e != NULL && e->kind == UP_FILE_REGULAR) {
                if (r->dir)
                    continue; /* "/app.css/" names no file */
                *entry = e;
                return FOUND_FILE;
            }
            /* e is not looked at past the next lookup, which may let it go. */
            int is_dir = e != NULL;
            if (!r->dir && sub_len > 0 && (st->flags & UP_STATIC_CLEAN_URLS) &&
                (*entry = with_appended(r, root, sub, sub_len, ".html")) != NULL)
                return FOUND_FILE;
            if (!is_dir)
                continue;
            if (!r->dir) {
                const up_http1_request_t *head = r->head;
                char rest[8 + UP_STATIC_MAX_PATH];
                size_t n = 0;
                rest[n++] = '/';
                if (head->query.len > 0 && head->query.len < sizeof(rest) - 1) {
                    rest[n++] = '?';
                    memcpy(rest + n, head->query.base, head->query.len);
                    n += head->query.len;
                }
                /* The path as the client sent it (still encoded), which the parser has checked
                 * and the decoder has found free of "//": the Location cannot point to another
                 * host. */
                redirect(r, 301, head->path.base, head->path.len, rest, n);
                return FOUND_ANSWERED;
            }
            if ((*entry = with_appended(r, root, sub, sub_len,
                                        sub_len == 0 ? "index.html" : "/index.html")) != NULL)
                return FOUND_FILE;
            if ((st->flags & UP_STATIC_DIR_LISTING) && send_listing(r, root, p))
                return FOUND_ANSWERED;
        }
    }
    return FOUND_NOTHING;
}

/* A 404 answered here: the error page, or a line of text. */
static void not_found(request_t *r)
{
    up_static_t *st = r->st;
    if (st->error_page != NULL) {
        memcpy(r->path, st->error_page, st->error_page_len + 1);
        r->path_len = st->error_page_len;
        for (int i = 0; i < st->num_mounts; i++) {
            const mount_t *m = &st->mounts[i];
            if (m->prefix_len != 0)
                continue;
            for (int k = 0; k < m->num_roots; k++) {
                const up_file_entry_t *e = regular_file(r, m->roots[k], r->path, r->path_len);
                if (e != NULL) {
                    send_entry(r, e, 404);
                    return;
                }
            }
        }
    }
    simple(r, 404, "Not Found");
}

/* A request that is not a file's: the app's, or a 404 without one. */
static int miss(request_t *r)
{
    if (!(r->st->flags & UP_STATIC_ONLY))
        return 0;
    not_found(r);
    return 1;
}

/* The first redirect whose glob matches. Returns 1 when it answered. */
static int site_redirect(request_t *r)
{
    for (int i = 0; i < r->st->num_redirects; i++) {
        const redirect_t *rd = &r->st->redirects[i];
        if (up_path_glob_match(&rd->glob, r->url, r->url_len)) {
            redirect(r, rd->status, rd->location, rd->location_len, "", 0);
            return 1;
        }
    }
    return 0;
}

int up_static_loop_serve(up_static_t *st, up_exchange_t *ex)
{
    if (ex->req->upgrade != UP_UPGRADE_NONE)
        return 0; /* the app's to accept or refuse */
    const up_http1_request_t *head = &ex->req->head;
    int is_get = up_slice_eq(head->method, "GET", 3);
    if (!is_get && !up_slice_eq(head->method, "HEAD", 4)) {
        if (!(st->flags & UP_STATIC_ONLY))
            return 0;
        up_response_start(ex, 405);
        HDR_LIT(ex, "allow", "GET, HEAD");
        HDR_LIT(ex, "content-type", "text/plain; charset=utf-8");
        static const char body[] = "Method Not Allowed\n";
        up_response_end_head(ex, sizeof(body) - 1);
        up_response_write(ex, body, sizeof(body) - 1);
        up_response_finish(ex);
        return 1;
    }
    request_t r;
    r.st = st;
    r.ex = ex;
    r.head = head;
    memset(&r.file, 0, sizeof(r.file));
    r.file.is_get = is_get;
    memset(&r.accept_encoding, 0, sizeof(r.accept_encoding));
    r.forwarded_proto = (up_slice_t){NULL, 0};
    read_fields(&r);
    if (https_only(&r))
        return 1;
    if (head->target_form != UP_HTTP1_TARGET_ORIGIN && head->target_form != UP_HTTP1_TARGET_ABSOLUTE)
        return miss(&r);
    unsigned flags = (st->flags & UP_STATIC_DOTFILES) ? UP_STATIC_PATH_DOTFILES : 0;
    if (up_static_path_decode(head->path.base, head->path.len, flags, r.path, &r.path_len,
                              &r.dir) != UP_STATIC_PATH_OK)
        return miss(&r);
    r.url[0] = '/';
    memcpy(r.url + 1, r.path, r.path_len);
    r.url_len = 1 + r.path_len;
    if (r.dir && r.path_len > 0)
        r.url[r.url_len++] = '/';
    if (site_redirect(&r))
        return 1;
    r.now_ms = up_loop_now(ex->conn->server->loop);
    r.now = ex->conn->server->date.second;
    const up_file_entry_t *e = NULL;
    switch (find(&r, &e)) {
    case FOUND_FILE:
        send_entry(&r, e, 200);
        return 1;
    case FOUND_ANSWERED:
        return 1;
    case FOUND_NOTHING:
        break;
    }
    return miss(&r);
}

static int serve(void *st, up_exchange_t *ex)
{
    return up_static_loop_serve(st, ex);
}

int up_static_install(up_static_t *st, up_context_t *server)
{
    return up_server_add_handler(server, serve, st);
}
