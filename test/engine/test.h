#ifndef UP_TEST_H
#define UP_TEST_H

/* A minimal harness for the engine's C unit tests: checks count, failures print where and what,
 * and main() prints "N passed, N failed" and exits non-zero on any failure. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int test_passed, test_failed;

#define CHECK(cond, ...)                                                                          \
    do {                                                                                          \
        if (cond) {                                                                               \
            test_passed++;                                                                        \
        } else {                                                                                  \
            test_failed++;                                                                        \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);              \
            fprintf(stderr, __VA_ARGS__);                                                         \
            fputc('\n', stderr);                                                                  \
        }                                                                                         \
    } while (0)

static inline int test_report(const char *name)
{
    printf("%s: %d passed, %d failed\n", name, test_passed, test_failed);
    return test_failed == 0 ? 0 : 1;
}

/* Copies len bytes so that they end right before an unmapped page: a parser that reads one byte
 * too far faults at once instead of reading garbage. Free with guarded_free. */
static inline char *guarded_copy(const char *src, size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t pages = (len + page - 1) / page + 1;
    char *map = mmap(NULL, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    if (mprotect(map + (pages - 1) * page, page, PROT_NONE) != 0) {
        perror("mprotect");
        exit(2);
    }
    char *at = map + (pages - 1) * page - len;
    memcpy(at, src, len);
    return at;
}

static inline void guarded_free(char *at, size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t pages = (len + page - 1) / page + 1;
    char *map = at + len - (pages - 1) * page;
    munmap(map, pages * page);
}

#endif
