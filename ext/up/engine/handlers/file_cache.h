#ifndef UP_FILE_CACHE_H
#define UP_FILE_CACHE_H

/* The open-file cache of the static file handler: for a path under one of its root
 * directories, an open descriptor (or, for a small file, its bytes in memory), its metadata
 * and its validators, made by one open and one fstat per file, not per request. The variants a
 * file has beside it (name.br, name.zst, name.gz) are found and kept with it.
 *
 * Confinement. A path is opened beneath its root by the kernel (openat2 with RESOLVE_BENEATH):
 * ".." and symlinks that would leave the root fail, while symlinks inside it work. Where
 * openat2 is missing (Linux before 5.6, some sandboxes) the cache walks the path one component
 * at a time with O_NOFOLLOW, and then follows no symlink at all. Only regular files and
 * directories are entries; a FIFO or a device is never opened for reading (O_NONBLOCK, then
 * fstat decides).
 *
 * Change detection: an entry is trusted for valid_ms (1 s by default), then the first request
 * for it stats the path again (and its variants' paths) and compares device, inode, size,
 * mtime and ctime; a file changed in place, replaced (a new inode: what deploys and editors
 * do), deleted, or given a new variant is seen then, and opened afresh. So a change shows
 * within valid_ms of the next request, at the cost of at most one stat per file and variant
 * per valid_ms, whatever the request rate. inotify would see changes at once with no stat at
 * all, but not on network or FUSE file systems nor through most container volume mounts, and
 * its watches are a per-user limit shared with every other program; the stat works everywhere.
 *
 * Bounds: at most max_entries entries, max_fds descriptors held open and inline_total bytes
 * held in memory; past any of them the least recently used entries go. A miss (no such file)
 * is not remembered, so requests for paths that do not exist cannot push real files out; it
 * costs one failed open. An entry that goes while its bytes are still being sent lives on in
 * the output queues that hold a reference to it (each up_file_rep_t is reference counted).
 *
 * Threads: the cache belongs to the loop (the up_file_cache_loop_* calls); the
 * representations it hands out may be released from any thread. */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include "base/date.h"
#include "core/outq.h"
#include "handlers/content_coding.h"

/* A strong entity tag: mtime seconds, nanoseconds and size in hex, quoted, and the variant's
 * coding: "\"6650c3a1.1dcd6500-400\"", "\"6650c3a1.1dcd6500-180-br\"". */
#define UP_FILE_ETAG_MAX 56

#define UP_FILE_CACHE_DEFAULT_ENTRIES 4096
#define UP_FILE_CACHE_DEFAULT_FDS 1024
#define UP_FILE_CACHE_DEFAULT_INLINE_MAX (16 * 1024)
#define UP_FILE_CACHE_DEFAULT_INLINE_TOTAL (32 * 1024 * 1024)
#define UP_FILE_CACHE_DEFAULT_VALID_MS 1000
/* Root directories one cache serves from (--public and every --static directory). */
#define UP_FILE_CACHE_MAX_ROOTS 64

/* One representation on disk: the file, or one of its precompressed variants. Immutable once
 * made; shared by the cache and the output queues sending it. */
typedef struct up_file_rep_t {
    /* First. base and len: the whole file when it is held in memory, else NULL and 0. The
     * last release closes fd and frees the rep. */
    up_shared_t shared;
    int fd; /* -1 when the bytes are in memory */
    uint64_t size;
    time_t mtime; /* seconds: Last-Modified and the date conditions */
    char etag[UP_FILE_ETAG_MAX];
    size_t etag_len;
    char last_modified[UP_DATE_LEN + 1];
    /* What the next check compares. */
    dev_t _dev;
    ino_t _ino;
    struct timespec _mtim, _ctim;
} up_file_rep_t;

/* A rep for the regular file at path, outside any cache and any root: the file an app named
 * (file_response.h), opened and fstat-ed once, its validators made as the cache makes them, its
 * fd held (never read into memory) until the last reference is released. Returns NULL with
 * errno set: open's and fstat's, EISDIR for a directory, EINVAL for another kind of file. Any
 * thread. */
up_file_rep_t *up_file_rep_open(const char *path);

typedef enum up_file_kind_t { UP_FILE_REGULAR, UP_FILE_DIRECTORY } up_file_kind_t;

typedef struct up_file_entry_t up_file_entry_t;
struct up_file_entry_t {
    up_file_kind_t kind;
    /* [UP_CODING_IDENTITY] is the file; the others are its variants, NULL where there is none
     * (and all NULL for a directory). */
    up_file_rep_t *reps[UP_CODING__COUNT];
    unsigned available; /* UP_CODING_BIT of each variant there is */

    uint64_t _hash;
    uint64_t _checked_ms; /* when the disk was last asked */
    up_file_entry_t *_chain;       /* the hash bucket's list */
    up_file_entry_t *_newer, *_older; /* recency */
    int _root;
    size_t _path_len;
    char _path[]; /* NUL-terminated */
};

typedef struct up_file_cache_options_t {
    size_t max_entries;
    size_t max_fds;
    size_t inline_max;   /* files up to this size are kept in memory, holding no descriptor */
    size_t inline_total; /* bytes kept in memory in all */
    unsigned valid_ms;   /* how long an entry is trusted without asking the disk */
    int follow_symlinks; /* 0: no symlink is followed, even inside the root */
    int precompressed;   /* look for the .br, .zst and .gz variants of each file */
} up_file_cache_options_t;

typedef struct up_file_cache_t up_file_cache_t;

void up_file_cache_options_defaults(up_file_cache_options_t *o);
up_file_cache_t *up_file_cache_new(const up_file_cache_options_t *o);
/* Lets go of every entry (representations still being sent live on) and closes the roots. */
void up_file_cache_free(up_file_cache_t *c);
/* Opens dir as a root. Returns its number (0, 1, ...), or -1 with errno set (ENOTDIR, ENOENT,
 * E2BIG past UP_FILE_CACHE_MAX_ROOTS...). Before the cache is used. */
int up_file_cache_add_root(up_file_cache_t *c, const char *dir);

/* The entry for path[0..len) (a relative path with no "." or ".." segment, as static_path.h
 * makes; "" is the root itself, NUL-terminated at path[len]) under root, checked against the
 * disk when older than valid_ms at now_ms. NULL when there is no regular file or directory
 * there that may be served (absent, unreadable, another kind of file, out of the root). The
 * entry stays valid until the next call on this cache; take a reference to a representation
 * (or queue it) to keep it longer. Loop thread. */
const up_file_entry_t *up_file_cache_loop_get(up_file_cache_t *c, int root, const char *path,
                                              size_t len, uint64_t now_ms);

/* Opens the directory at path under root for reading (a listing), confined as files are.
 * Returns an fd, or -1. Loop thread. */
int up_file_cache_loop_open_dir(up_file_cache_t *c, int root, const char *path);

/* Counters for tests and stats. Loop thread. */
typedef struct up_file_cache_stats_t {
    size_t entries, fds, inline_bytes;
    uint64_t opens;  /* files opened (and fstat-ed) */
    uint64_t checks; /* revalidations (stat of the path) */
} up_file_cache_stats_t;
void up_file_cache_loop_stats(const up_file_cache_t *c, up_file_cache_stats_t *s);

#endif
