/* The open-file cache (file_cache.c) on a real directory tree: what it opens and what it
 * refuses (symlinks out of the root, absolute symlinks, FIFOs, with and without openat2's
 * confinement), one open per file however often it is asked, its variants, the change
 * detection (in place, replaced, deleted, a variant added) within valid_ms, its bounds, and a
 * representation that outlives its entry while it is still being sent. */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include "handlers/file_cache.h"
#include "engine_harness.h"
#include "test.h"

static char base[256], root[300];

static void put(const char *rel, const char *data, size_t len)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", base, rel);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, data, len) != (ssize_t)len) {
        perror(path);
        exit(2);
    }
    close(fd);
}

static void put_str(const char *rel, const char *data)
{
    put(rel, data, strlen(data));
}

/* Sets a file's mtime to the given second (variants older or newer than their file). */
static void set_mtime(const char *rel, time_t t)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", base, rel);
    struct timespec times[2] = {{t, 0}, {t, 0}};
    utimensat(AT_FDCWD, path, times, 0);
}

static void make_tree(void)
{
    snprintf(base, sizeof(base), "/tmp/up-file-cache-XXXXXX");
    if (mkdtemp(base) == NULL) {
        perror("mkdtemp");
        exit(2);
    }
    snprintf(root, sizeof(root), "%s/root", base);
    mkdir(root, 0755);
    char path[512];
    put_str("secret.txt", "SECRET outside the root\n");
    put_str("root/a.txt", "hello, a\n");
    put_str("root/a.txt.gz", "gzipped a");
    put_str("root/a.txt.br", "br a");
    put_str("root/b.txt", "hello, b\n");
    put_str("root/b.txt.gz", "stale gz of b");
    set_mtime("root/b.txt", 1700000000);
    set_mtime("root/b.txt.gz", 1600000000);
    static char big[200 * 1024];
    memset(big, 'x', sizeof(big));
    put("root/big.bin", big, sizeof(big));
    put("root/big2.bin", big, sizeof(big));
    snprintf(path, sizeof(path), "%s/sub", root);
    mkdir(path, 0755);
    put_str("root/sub/index.html", "<p>index</p>\n");
    snprintf(path, sizeof(path), "%s/link_in", root);
    symlink("a.txt", path);
    snprintf(path, sizeof(path), "%s/link_out", root);
    symlink("../secret.txt", path);
    snprintf(path, sizeof(path), "%s/link_abs", root);
    char target[512];
    snprintf(target, sizeof(target), "%s/secret.txt", base);
    symlink(target, path);
    snprintf(path, sizeof(path), "%s/dir_out", root);
    symlink("..", path);
    snprintf(path, sizeof(path), "%s/fifo", root);
    mkfifo(path, 0644);
}

static up_file_cache_t *new_cache(int follow, size_t entries, size_t fds)
{
    up_file_cache_options_t o;
    up_file_cache_options_defaults(&o);
    o.follow_symlinks = follow;
    if (entries)
        o.max_entries = entries;
    if (fds)
        o.max_fds = fds;
    up_file_cache_t *c = up_file_cache_new(&o);
    CHECK(up_file_cache_add_root(c, root) == 0, "the root opens");
    return c;
}

static const up_file_entry_t *get(up_file_cache_t *c, const char *path, uint64_t now)
{
    return up_file_cache_loop_get(c, 0, path, strlen(path), now);
}

static void test_files_and_refusals(int follow)
{
    up_file_cache_t *c = new_cache(follow, 0, 0);
    const up_file_entry_t *e = get(c, "a.txt", 1000);
    CHECK(e != NULL && e->kind == UP_FILE_REGULAR, "a.txt is a file (follow %d)", follow);
    if (e != NULL) {
        const up_file_rep_t *rep = e->reps[UP_CODING_IDENTITY];
        CHECK(rep->size == 9 && rep->shared.base != NULL && memcmp(rep->shared.base, "hello, a\n", 9) == 0,
              "a small file is held in memory");
        CHECK(rep->fd == -1, "and holds no descriptor");
        CHECK(rep->etag_len > 2 && rep->etag[0] == '"' && rep->etag[rep->etag_len - 1] == '"',
              "a strong etag: %.*s", (int)rep->etag_len, rep->etag);
        CHECK(e->available == (UP_CODING_BIT(UP_CODING_BR) | UP_CODING_BIT(UP_CODING_GZIP)),
              "its .br and .gz are found: %u", e->available);
        CHECK(e->reps[UP_CODING_GZIP] != NULL && e->reps[UP_CODING_GZIP]->size == 9,
              "the .gz variant's size");
        CHECK(strstr(e->reps[UP_CODING_BR]->etag, "-br\"") != NULL, "a variant's etag names it");
    }
    up_file_cache_stats_t s;
    up_file_cache_loop_stats(c, &s);
    uint64_t opens = s.opens;
    for (int i = 0; i < 100; i++)
        get(c, "a.txt", 1000 + (uint64_t)i);
    up_file_cache_loop_stats(c, &s);
    CHECK(s.opens == opens && s.checks == 0, "100 more requests: no open, no stat (%llu, %llu)",
          (unsigned long long)(s.opens - opens), (unsigned long long)s.checks);

    e = get(c, "b.txt", 1000);
    CHECK(e != NULL && e->available == 0, "a variant older than its file is not used");
    e = get(c, "big.bin", 1000);
    CHECK(e != NULL && e->reps[0]->shared.base == NULL && e->reps[0]->fd >= 0,
          "a large file is sent from its descriptor");
    e = get(c, "sub", 1000);
    CHECK(e != NULL && e->kind == UP_FILE_DIRECTORY, "a directory");
    e = get(c, "", 1000);
    CHECK(e != NULL && e->kind == UP_FILE_DIRECTORY, "the root itself");
    e = get(c, "sub/index.html", 1000);
    CHECK(e != NULL && e->kind == UP_FILE_REGULAR, "a nested file");

    e = get(c, "link_in", 1000);
    CHECK((e != NULL) == follow, "a symlink inside the root: %s (follow %d)",
          e != NULL ? "served" : "refused", follow);
    CHECK(get(c, "link_out", 1000) == NULL, "a symlink out of the root is refused");
    CHECK(get(c, "link_abs", 1000) == NULL, "an absolute symlink is refused");
    CHECK(get(c, "dir_out/secret.txt", 1000) == NULL, "a directory symlink out of the root");
    CHECK(get(c, "dir_out", 1000) == NULL, "a symlink to the parent directory");
    CHECK(get(c, "fifo", 1000) == NULL, "a FIFO is not a file (and does not block)");
    CHECK(get(c, "missing.txt", 1000) == NULL, "a missing file");
    CHECK(get(c, "a.txt/x", 1000) == NULL, "a file used as a directory");
    up_file_cache_free(c);
}

static void test_change_detection(void)
{
    up_file_cache_t *c = new_cache(1, 0, 0);
    put_str("root/c.txt", "one\n");
    const up_file_entry_t *e = get(c, "c.txt", 5000);
    char etag[UP_FILE_ETAG_MAX];
    memcpy(etag, e->reps[0]->etag, e->reps[0]->etag_len);
    size_t etag_len = e->reps[0]->etag_len;

    /* Changed in place, with a new size and a new mtime. */
    put_str("root/c.txt", "two, longer\n");
    set_mtime("root/c.txt", 1800000000);
    e = get(c, "c.txt", 5999);
    CHECK(e != NULL && e->reps[0]->size == 4, "within valid_ms the old entry is trusted");
    e = get(c, "c.txt", 6000);
    CHECK(e != NULL && e->reps[0]->size == 12 &&
              memcmp(e->reps[0]->shared.base, "two, longer\n", 12) == 0,
          "after valid_ms a change in place is seen");
    CHECK(e->reps[0]->etag_len != etag_len || memcmp(e->reps[0]->etag, etag, etag_len) != 0,
          "with a new etag");

    /* Replaced by a rename (a new inode), same size. */
    put_str("root/c.txt.new", "TWO, LONGER\n");
    set_mtime("root/c.txt.new", 1800000000);
    char from[512], to[512];
    snprintf(from, sizeof(from), "%s/c.txt.new", root);
    snprintf(to, sizeof(to), "%s/c.txt", root);
    rename(from, to);
    e = get(c, "c.txt", 7000);
    CHECK(e != NULL && memcmp(e->reps[0]->shared.base, "TWO, LONGER\n", 12) == 0,
          "a replaced file is seen");

    /* A variant appears. */
    put_str("root/c.txt.zst", "zst");
    set_mtime("root/c.txt.zst", 1800000001);
    e = get(c, "c.txt", 7500);
    CHECK(e != NULL && e->available == 0, "a new variant waits for valid_ms");
    e = get(c, "c.txt", 8000);
    CHECK(e != NULL && e->available == UP_CODING_BIT(UP_CODING_ZSTD), "then it is used");

    /* Deleted. */
    unlink(to);
    CHECK(get(c, "c.txt", 8500) != NULL, "a deleted file is served for at most valid_ms");
    CHECK(get(c, "c.txt", 9000) == NULL, "then it is gone");
    up_file_cache_stats_t s;
    up_file_cache_loop_stats(c, &s);
    CHECK(s.entries == 0, "and so is its entry");
    up_file_cache_free(c);
}

static void test_bounds_and_lifetime(void)
{
    up_file_cache_t *c = new_cache(1, 2, 1);
    get(c, "a.txt", 1);
    get(c, "b.txt", 1);
    get(c, "sub", 1);
    up_file_cache_stats_t s;
    up_file_cache_loop_stats(c, &s);
    CHECK(s.entries == 2, "max_entries holds: %zu", s.entries);

    const up_file_entry_t *e = get(c, "big.bin", 1);
    up_file_rep_t *held = e->reps[0];
    up_shared_retain(&held->shared); /* as a queued segment does */
    int fd = held->fd;
    e = get(c, "big2.bin", 1);
    up_file_cache_loop_stats(c, &s);
    CHECK(s.fds == 1, "max_fds holds: %zu", s.fds);
    char byte = 0;
    CHECK(pread(fd, &byte, 1, 100) == 1 && byte == 'x', "an evicted file still being sent is open");
    up_shared_release(&held->shared);
    errno = 0;
    CHECK(fcntl(fd, F_GETFD) == -1 && errno == EBADF, "and closed at its last release");
    up_file_cache_free(c);

    up_file_cache_options_t o;
    up_file_cache_options_defaults(&o);
    o.inline_total = 12;
    c = up_file_cache_new(&o);
    up_file_cache_add_root(c, root);
    get(c, "a.txt", 1);
    e = get(c, "b.txt", 1);
    up_file_cache_loop_stats(c, &s);
    CHECK(s.inline_bytes <= 12, "inline_total holds: %zu", s.inline_bytes);
    CHECK(e != NULL && e->reps[0]->fd >= 0, "a small file past inline_total is sent from its fd");
    up_file_cache_free(c);
}

static void test_roots(void)
{
    up_file_cache_options_t o;
    up_file_cache_options_defaults(&o);
    up_file_cache_t *c = up_file_cache_new(&o);
    char path[512];
    snprintf(path, sizeof(path), "%s/a.txt", root);
    CHECK(up_file_cache_add_root(c, path) == -1 && errno == ENOTDIR, "a file is no root");
    CHECK(up_file_cache_add_root(c, "/nonexistent/dir") == -1, "a missing root");
    CHECK(up_file_cache_loop_get(c, 0, "a.txt", 5, 1) == NULL, "no root 0 yet");
    CHECK(up_file_cache_add_root(c, root) == 0, "root 0");
    CHECK(up_file_cache_loop_get(c, 1, "a.txt", 5, 1) == NULL, "no root 1");
    int fd = up_file_cache_loop_open_dir(c, 0, "sub");
    CHECK(fd >= 0, "a directory opens for a listing");
    if (fd >= 0)
        close(fd);
    CHECK(up_file_cache_loop_open_dir(c, 0, "a.txt") == -1, "a file does not");
    CHECK(up_file_cache_loop_open_dir(c, 0, "dir_out") == -1, "nor a directory out of the root");
    up_file_cache_free(c);
}

int main(void)
{
    make_tree();
    test_files_and_refusals(1);
    test_files_and_refusals(0);
    test_change_detection();
    test_bounds_and_lifetime();
    test_roots();
    CHECK(harness_remove_tree(base) == 0, "the test's tree %s removed", base);
    return test_report("file_cache");
}
