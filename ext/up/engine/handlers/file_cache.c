/* The open-file cache; see file_cache.h for the contract and the policy. */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "base/memory.h"
#include "handlers/file_cache.h"
#include "handlers/static_path.h"

/* Room for a path and its longest variant suffix (".zst"), and the NUL. */
#define PATH_ROOM (UP_STATIC_MAX_PATH + 8)

struct up_file_cache_t {
    up_file_cache_options_t opts;
    int roots[UP_FILE_CACHE_MAX_ROOTS];
    int num_roots;
    int no_openat2; /* the kernel said ENOSYS once: walk paths instead */
    up_file_entry_t **buckets;
    size_t num_buckets; /* a power of two */
    up_file_entry_t *newest, *oldest;
    size_t entries, fds, inline_bytes;
    uint64_t opens, checks;
};

void up_file_cache_options_defaults(up_file_cache_options_t *o)
{
    o->max_entries = UP_FILE_CACHE_DEFAULT_ENTRIES;
    o->max_fds = UP_FILE_CACHE_DEFAULT_FDS;
    o->inline_max = UP_FILE_CACHE_DEFAULT_INLINE_MAX;
    o->inline_total = UP_FILE_CACHE_DEFAULT_INLINE_TOTAL;
    o->valid_ms = UP_FILE_CACHE_DEFAULT_VALID_MS;
    o->follow_symlinks = 1;
    o->precompressed = 1;
}

up_file_cache_t *up_file_cache_new(const up_file_cache_options_t *o)
{
    up_file_cache_t *c = up_calloc(1, sizeof(*c));
    c->opts = *o;
    if (c->opts.max_entries == 0)
        c->opts.max_entries = 1;
    c->num_buckets = 16;
    while (c->num_buckets < c->opts.max_entries)
        c->num_buckets *= 2;
    c->buckets = up_calloc(c->num_buckets, sizeof(*c->buckets));
    return c;
}

int up_file_cache_add_root(up_file_cache_t *c, const char *dir)
{
    if (c->num_roots == UP_FILE_CACHE_MAX_ROOTS) {
        errno = E2BIG;
        return -1;
    }
    int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    c->roots[c->num_roots] = fd;
    return c->num_roots++;
}

/* ---------------------------------------------------------------- representations */

/* The last reference went (any thread): only the rep itself is touched. */
static void rep_dispose(up_shared_t *shared)
{
    up_file_rep_t *rep = (up_file_rep_t *)shared;
    if (rep->fd >= 0)
        close(rep->fd);
    free(rep);
}

static char *hex(char *p, uint64_t v)
{
    char buf[16];
    int n = 0;
    do {
        buf[n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v != 0);
    while (n > 0)
        *p++ = buf[--n];
    return p;
}

static void make_validators(up_file_rep_t *rep, up_coding_t coding)
{
    char *p = rep->etag;
    *p++ = '"';
    p = hex(p, (uint64_t)rep->_mtim.tv_sec);
    *p++ = '.';
    p = hex(p, (uint64_t)rep->_mtim.tv_nsec);
    *p++ = '-';
    p = hex(p, rep->size);
    if (coding != UP_CODING_IDENTITY) {
        const char *name = up_coding_name(coding);
        *p++ = '-';
        memcpy(p, name, strlen(name));
        p += strlen(name);
    }
    *p++ = '"';
    rep->etag_len = (size_t)(p - rep->etag);
    up_date_format(rep->mtime, rep->last_modified);
}

static void fill_rep(up_file_rep_t *rep, int fd, const struct stat *st, up_coding_t coding)
{
    rep->fd = fd;
    rep->size = (uint64_t)st->st_size;
    rep->mtime = st->st_mtim.tv_sec;
    rep->_dev = st->st_dev;
    rep->_ino = st->st_ino;
    rep->_mtim = st->st_mtim;
    rep->_ctim = st->st_ctim;
    make_validators(rep, coding);
}

/* Reads all of a small file; 0, or -1 when it could not (then it is sent from its fd). */
static int read_all(int fd, char *dst, size_t size)
{
    size_t done = 0;
    while (done < size) {
        ssize_t n = pread(fd, dst + done, size - done, (off_t)done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        done += (size_t)n;
    }
    return 0;
}

/* A rep for the open regular file fd (taken over), held in memory when small enough. */
static up_file_rep_t *new_rep(up_file_cache_t *c, int fd, const struct stat *st,
                              up_coding_t coding)
{
    uint64_t size = (uint64_t)st->st_size;
    int in_memory = size <= c->opts.inline_max &&
                    c->inline_bytes + size <= c->opts.inline_total;
    up_file_rep_t *rep = up_malloc(sizeof(*rep) + (in_memory ? size : 0));
    memset(rep, 0, sizeof(*rep));
    char *bytes = (char *)(rep + 1);
    if (in_memory && read_all(fd, bytes, size) != 0)
        in_memory = 0;
    if (in_memory) {
        close(fd);
        fd = -1;
        c->inline_bytes += size;
    } else {
        c->fds++;
    }
    up_shared_init(&rep->shared, in_memory ? bytes : NULL, in_memory ? size : 0, rep_dispose);
    fill_rep(rep, fd, st, coding);
    return rep;
}

up_file_rep_t *up_file_rep_open(const char *path)
{
    /* O_NONBLOCK: a FIFO named here must not block the open; on a regular file it changes
     * nothing. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return NULL;
    struct stat st;
    int err = 0;
    if (fstat(fd, &st) != 0)
        err = errno;
    else if (!S_ISREG(st.st_mode))
        err = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
    if (err != 0) {
        close(fd);
        errno = err;
        return NULL;
    }
    up_file_rep_t *rep = up_malloc(sizeof(*rep));
    memset(rep, 0, sizeof(*rep));
    up_shared_init(&rep->shared, NULL, 0, rep_dispose);
    fill_rep(rep, fd, &st, UP_CODING_IDENTITY);
    return rep;
}

static void drop_rep(up_file_cache_t *c, up_file_rep_t *rep)
{
    if (rep->fd >= 0)
        c->fds--;
    else
        c->inline_bytes -= rep->size;
    up_shared_release(&rep->shared);
}

static int same_file(const up_file_rep_t *rep, const struct stat *st)
{
    return rep->_dev == st->st_dev && rep->_ino == st->st_ino &&
           rep->size == (uint64_t)st->st_size && rep->_mtim.tv_sec == st->st_mtim.tv_sec &&
           rep->_mtim.tv_nsec == st->st_mtim.tv_nsec && rep->_ctim.tv_sec == st->st_ctim.tv_sec &&
           rep->_ctim.tv_nsec == st->st_ctim.tv_nsec;
}

/* ---------------------------------------------------------------- opening beneath a root */

/* flags for every file open: never a controlling terminal, never block on a FIFO. */
#define OPEN_FLAGS (O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)

/* Walks path one component at a time, following no symlink. */
static int open_walk(int root_fd, const char *path)
{
    int dir = root_fd;
    const char *p = path;
    for (;;) {
        const char *slash = strchr(p, '/');
        if (slash == NULL) {
            int fd = openat(dir, p, OPEN_FLAGS | O_NOFOLLOW);
            int saved = errno;
            if (dir != root_fd)
                close(dir);
            errno = saved;
            return fd;
        }
        char name[256];
        size_t n = (size_t)(slash - p);
        if (n >= sizeof(name)) {
            if (dir != root_fd)
                close(dir);
            errno = ENAMETOOLONG;
            return -1;
        }
        memcpy(name, p, n);
        name[n] = '\0';
        int next = openat(dir, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir != root_fd)
            close(dir);
        if (next < 0)
            return -1;
        dir = next;
        p = slash + 1;
    }
}

static int open_beneath(up_file_cache_t *c, int root_fd, const char *path, int extra_flags)
{
    if (path[0] == '\0')
        return openat(root_fd, ".", OPEN_FLAGS | extra_flags);
    if (c->opts.follow_symlinks && !c->no_openat2) {
        struct open_how how = {
            .flags = (uint64_t)(OPEN_FLAGS | extra_flags),
            .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
        };
        long fd = syscall(SYS_openat2, root_fd, path, &how, sizeof(how));
        if (fd >= 0 || errno != ENOSYS)
            return (int)fd;
        c->no_openat2 = 1;
    }
    int fd = open_walk(root_fd, path);
    if (fd >= 0 && extra_flags != 0) {
        /* The walk opened whatever was there; O_DIRECTORY is checked here instead. */
        struct stat st;
        if (fstat(fd, &st) != 0 || ((extra_flags & O_DIRECTORY) && !S_ISDIR(st.st_mode))) {
            close(fd);
            errno = ENOTDIR;
            return -1;
        }
    }
    return fd;
}

/* The stat a check compares with: of what the path names now. */
static int stat_path(up_file_cache_t *c, int root_fd, const char *path, struct stat *st)
{
    c->checks++;
    if (path[0] == '\0')
        return fstatat(root_fd, "", st, AT_EMPTY_PATH);
    int flags = c->opts.follow_symlinks && !c->no_openat2 ? 0 : AT_SYMLINK_NOFOLLOW;
    return fstatat(root_fd, path, st, flags);
}

/* ---------------------------------------------------------------- entries */

static uint64_t hash_key(int root, const char *path, size_t len)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)root;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)path[i]) * 1099511628211ull;
    return h;
}

static up_file_entry_t **bucket_of(up_file_cache_t *c, uint64_t hash)
{
    return &c->buckets[hash & (c->num_buckets - 1)];
}

static void unlink_recency(up_file_cache_t *c, up_file_entry_t *e)
{
    if (e->_newer != NULL)
        e->_newer->_older = e->_older;
    else
        c->newest = e->_older;
    if (e->_older != NULL)
        e->_older->_newer = e->_newer;
    else
        c->oldest = e->_newer;
    e->_newer = e->_older = NULL;
}

static void link_newest(up_file_cache_t *c, up_file_entry_t *e)
{
    e->_older = c->newest;
    e->_newer = NULL;
    if (c->newest != NULL)
        c->newest->_newer = e;
    else
        c->oldest = e;
    c->newest = e;
}

static void remove_entry(up_file_cache_t *c, up_file_entry_t *e)
{
    up_file_entry_t **p = bucket_of(c, e->_hash);
    while (*p != e)
        p = &(*p)->_chain;
    *p = e->_chain;
    unlink_recency(c, e);
    for (int k = 0; k < UP_CODING__COUNT; k++) {
        if (e->reps[k] != NULL)
            drop_rep(c, e->reps[k]);
    }
    c->entries--;
    free(e);
}

/* Lets the oldest entries go until the cache is within its bounds again; keep is spared. */
static void trim(up_file_cache_t *c, up_file_entry_t *keep)
{
    while (c->entries > c->opts.max_entries || c->fds > c->opts.max_fds ||
           c->inline_bytes > c->opts.inline_total) {
        up_file_entry_t *victim = c->oldest;
        if (victim == keep)
            victim = victim->_newer;
        if (victim == NULL)
            return;
        remove_entry(c, victim);
    }
}

/* Writes path + suffix into buf (PATH_ROOM bytes). */
static void with_suffix(char *buf, const char *path, size_t len, const char *suffix)
{
    memcpy(buf, path, len);
    strcpy(buf + len, suffix);
}

/* Opens the variants of the file e names that are no older than it. */
static void open_variants(up_file_cache_t *c, up_file_entry_t *e)
{
    int root_fd = c->roots[e->_root];
    char name[PATH_ROOM];
    for (int k = UP_CODING_BR; k < UP_CODING__COUNT; k++) {
        with_suffix(name, e->_path, e->_path_len, up_coding_suffix((up_coding_t)k));
        int fd = open_beneath(c, root_fd, name, 0);
        if (fd < 0)
            continue;
        c->opens++;
        struct stat st;
        /* A variant older than its file was made from an older version of it. */
        if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
            st.st_mtim.tv_sec < e->reps[UP_CODING_IDENTITY]->mtime) {
            close(fd);
            continue;
        }
        e->reps[k] = new_rep(c, fd, &st, (up_coding_t)k);
        e->available |= UP_CODING_BIT(k);
    }
}

/* A new entry for what path names now, or NULL. */
static up_file_entry_t *open_entry(up_file_cache_t *c, int root, const char *path, size_t len,
                                   uint64_t hash, uint64_t now_ms)
{
    int fd = open_beneath(c, c->roots[root], path, 0);
    if (fd < 0)
        return NULL;
    c->opens++;
    struct stat st;
    if (fstat(fd, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))) {
        close(fd);
        return NULL;
    }
    up_file_entry_t *e = up_calloc(1, sizeof(*e) + len + 1);
    e->_hash = hash;
    e->_root = root;
    e->_checked_ms = now_ms;
    e->_path_len = len;
    memcpy(e->_path, path, len);
    e->_path[len] = '\0';
    if (S_ISDIR(st.st_mode)) {
        e->kind = UP_FILE_DIRECTORY;
        close(fd);
    } else {
        e->kind = UP_FILE_REGULAR;
        e->reps[UP_CODING_IDENTITY] = new_rep(c, fd, &st, UP_CODING_IDENTITY);
        if (c->opts.precompressed && len + 4 < PATH_ROOM)
            open_variants(c, e);
    }
    up_file_entry_t **b = bucket_of(c, hash);
    e->_chain = *b;
    *b = e;
    link_newest(c, e);
    c->entries++;
    trim(c, e);
    return e;
}

/* Whether what the disk shows for e's path (and its variants' paths) is what e holds. */
static int still_valid(up_file_cache_t *c, const up_file_entry_t *e)
{
    int root_fd = c->roots[e->_root];
    struct stat st;
    if (stat_path(c, root_fd, e->_path, &st) != 0)
        return 0;
    if (e->kind == UP_FILE_DIRECTORY)
        return S_ISDIR(st.st_mode);
    if (!S_ISREG(st.st_mode) || !same_file(e->reps[UP_CODING_IDENTITY], &st))
        return 0;
    if (!c->opts.precompressed)
        return 1;
    char name[PATH_ROOM];
    for (int k = UP_CODING_BR; k < UP_CODING__COUNT; k++) {
        with_suffix(name, e->_path, e->_path_len, up_coding_suffix((up_coding_t)k));
        int there = stat_path(c, root_fd, name, &st) == 0 && S_ISREG(st.st_mode);
        const up_file_rep_t *rep = e->reps[k];
        /* A variant that was too old to use and still is, counts as unchanged. */
        if (rep == NULL ? there && st.st_mtim.tv_sec >= e->reps[UP_CODING_IDENTITY]->mtime
                        : !there || !same_file(rep, &st))
            return 0;
    }
    return 1;
}

const up_file_entry_t *up_file_cache_loop_get(up_file_cache_t *c, int root, const char *path,
                                              size_t len, uint64_t now_ms)
{
    if (root < 0 || root >= c->num_roots || len > UP_STATIC_MAX_PATH)
        return NULL;
    uint64_t hash = hash_key(root, path, len);
    for (up_file_entry_t *e = *bucket_of(c, hash); e != NULL; e = e->_chain) {
        if (e->_hash != hash || e->_root != root || e->_path_len != len ||
            memcmp(e->_path, path, len) != 0)
            continue;
        if (now_ms >= e->_checked_ms + c->opts.valid_ms) {
            if (!still_valid(c, e)) {
                remove_entry(c, e);
                break;
            }
            e->_checked_ms = now_ms;
        }
        unlink_recency(c, e);
        link_newest(c, e);
        return e;
    }
    return open_entry(c, root, path, len, hash, now_ms);
}

int up_file_cache_loop_open_dir(up_file_cache_t *c, int root, const char *path)
{
    if (root < 0 || root >= c->num_roots)
        return -1;
    return open_beneath(c, c->roots[root], path, O_DIRECTORY);
}

void up_file_cache_loop_stats(const up_file_cache_t *c, up_file_cache_stats_t *s)
{
    s->entries = c->entries;
    s->fds = c->fds;
    s->inline_bytes = c->inline_bytes;
    s->opens = c->opens;
    s->checks = c->checks;
}

void up_file_cache_free(up_file_cache_t *c)
{
    if (c == NULL)
        return;
    while (c->oldest != NULL)
        remove_entry(c, c->oldest);
    for (int i = 0; i < c->num_roots; i++)
        close(c->roots[i]);
    free(c->buckets);
    free(c);
}
