/* The epoll backend (loop_epoll.c) when the kernel says no: a watcher's events always say what
 * is really watched, and a wait on a loop that can no longer wait reports it instead of
 * passing for "no events" (which made its caller spin). */

#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include "../../ext/up/engine/loop_epoll.h"
#include "test.h"

static int fired;

static void count_event(up_watcher_t *w, unsigned revents)
{
    (void)w;
    (void)revents;
    fired++;
}

static void test_watching_a_closed_fd_fails_and_changes_nothing(void)
{
    up_loop_t *loop = up_loop_new();
    int fds[2];
    CHECK(pipe2(fds, O_CLOEXEC) == 0, "pipe");
    close(fds[0]);
    close(fds[1]);
    up_watcher_t w = {.fd = fds[0], .cb = count_event};
    errno = 0;
    CHECK(up_loop_watch(loop, &w, UP_EV_READ) == -1 && errno == EBADF, "watch a closed fd: errno %d",
          errno);
    CHECK(w.events == 0, "events %u after a failed watch", w.events);
    up_loop_free(loop);
}

/* An exclusive watch is a DEL then an ADD; when the ADD fails (EPOLLEXCLUSIVE on an epoll
 * descriptor is EINVAL) the fd is watched no more, and the watcher must say so, or the next
 * watch with the old events would be taken as already done. */
static void test_failed_exclusive_rewatch_leaves_the_watcher_unwatched(void)
{
    up_loop_t *loop = up_loop_new();
    int inner = epoll_create1(EPOLL_CLOEXEC);
    int efd = eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC); /* readable: makes inner readable */
    struct epoll_event ev = {.events = EPOLLIN};
    CHECK(epoll_ctl(inner, EPOLL_CTL_ADD, efd, &ev) == 0, "inner epoll");
    up_watcher_t w = {.fd = inner, .cb = count_event};
    CHECK(up_loop_watch(loop, &w, UP_EV_READ) == 0, "plain watch");
    CHECK(up_loop_watch(loop, &w, UP_EV_READ | UP_EV_EXCLUSIVE) == -1, "exclusive on an epoll fd");
    CHECK(w.events == 0, "events %u, but the fd is not watched at all", w.events);
    CHECK(up_loop_watch(loop, &w, UP_EV_READ) == 0, "watched again");
    fired = 0;
    CHECK(up_loop_wait(loop, 1000) >= 1, "an event");
    up_loop_dispatch(loop);
    CHECK(fired == 1, "the callback ran %d times", fired);
    up_loop_watch(loop, &w, 0);
    close(efd);
    close(inner);
    up_loop_free(loop);
}

/* The eventpoll descriptors open now, as a bit set of fd numbers below 1024. */
static void eventpoll_fds(unsigned char set[128])
{
    memset(set, 0, 128);
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        char path[300], link[64];
        int fd = atoi(e->d_name);
        snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(path, link, sizeof(link) - 1);
        if (n > 0 && fd < 1024) {
            link[n] = '\0';
            if (strcmp(link, "anon_inode:[eventpoll]") == 0)
                set[fd / 8] |= (unsigned char)(1u << (fd % 8));
        }
    }
    if (d != NULL)
        closedir(d);
}

static void test_wait_on_a_broken_loop_is_an_error(void)
{
    unsigned char before[128], after[128];
    eventpoll_fds(before);
    up_loop_t *loop = up_loop_new();
    eventpoll_fds(after);
    int epfd = -1;
    for (int fd = 0; fd < 1024; fd++) {
        if ((after[fd / 8] & ~before[fd / 8]) & (1u << (fd % 8)))
            epfd = fd;
    }
    CHECK(epfd >= 0, "the loop's epoll descriptor");
    if (epfd < 0)
        return;
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    dup2(null, epfd); /* no longer an epoll instance: epoll_wait says EINVAL */
    close(null);
    errno = 0;
    int n = up_loop_wait(loop, 0);
    CHECK(n == -1 && errno == EINVAL, "wait returned %d, errno %d", n, errno);
    up_loop_dispatch(loop);
    up_loop_free(loop); /* closes the /dev/null duplicate */
}

int main(void)
{
    test_watching_a_closed_fd_fails_and_changes_nothing();
    test_failed_exclusive_rewatch_leaves_the_watcher_unwatched();
    test_wait_on_a_broken_loop_is_an_error();
    return test_report("loop");
}
