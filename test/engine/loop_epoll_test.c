/* The epoll backend (loop_epoll.c).
 *
 * Its cross-thread parts: which thread runs the loop, asked from any thread while the loop
 * passes from one thread to another, as the MRI binding passes it under its loop lock; and a
 * wake-up from another thread running the wake callback on the loop thread.
 *
 * And when the kernel says no: a watcher's events always say what is really watched, and a
 * wait on a loop that can no longer wait reports it instead of passing for "no events" (which
 * made its caller spin). */

#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include "loop/loop_epoll.h"
#include "test.h"

#define HANDOVERS 10000

typedef struct owners_t {
    up_loop_t *loop;
    pthread_mutex_t lock; /* whoever holds it runs the loop */
    atomic_int done;
    atomic_long not_owner_when_owning, owner_when_not; /* wrong answers */
    atomic_long asked;
} owners_t;

/* Takes the loop over for a turn, again and again, as an app thread of the binding does. */
static void *owner_run(void *arg)
{
    owners_t *o = arg;
    for (int i = 0; i < HANDOVERS; i++) {
        pthread_mutex_lock(&o->lock);
        up_loop_set_owner(o->loop, 1);
        if (!up_loop_is_loop_thread(o->loop))
            atomic_fetch_add(&o->not_owner_when_owning, 1);
        up_loop_wait(o->loop, 0);
        up_loop_dispatch(o->loop);
        up_loop_set_owner(o->loop, 0);
        if (up_loop_is_loop_thread(o->loop))
            atomic_fetch_add(&o->owner_when_not, 1);
        pthread_mutex_unlock(&o->lock);
    }
    return NULL;
}

/* Never runs the loop, and asks all along (as up_conn_lent_send does from an app thread). */
static void *asker_run(void *arg)
{
    owners_t *o = arg;
    while (!atomic_load(&o->done)) {
        if (up_loop_is_loop_thread(o->loop))
            atomic_fetch_add(&o->owner_when_not, 1);
        atomic_fetch_add(&o->asked, 1);
    }
    return NULL;
}

static void test_loop_thread_known_while_the_loop_changes_hands(void)
{
    owners_t o = {.loop = up_loop_new()};
    pthread_mutex_init(&o.lock, NULL);
    CHECK(!up_loop_is_loop_thread(o.loop), "a new loop has no owner");
    pthread_t owners[2], asker;
    pthread_create(&asker, NULL, asker_run, &o);
    for (int i = 0; i < 2; i++)
        pthread_create(&owners[i], NULL, owner_run, &o);
    for (int i = 0; i < 2; i++)
        pthread_join(owners[i], NULL);
    atomic_store(&o.done, 1);
    pthread_join(asker, NULL);
    CHECK(atomic_load(&o.not_owner_when_owning) == 0 && atomic_load(&o.owner_when_not) == 0,
          "%ld times an owner was told no, %ld times another thread was told yes (%ld asked)",
          atomic_load(&o.not_owner_when_owning), atomic_load(&o.owner_when_not),
          atomic_load(&o.asked));
    up_loop_set_owner(o.loop, 1);
    CHECK(up_loop_is_loop_thread(o.loop), "the test thread owns it once it says so");
    pthread_mutex_destroy(&o.lock);
    up_loop_free(o.loop);
}

#define WAKES 1000

typedef struct waker_t {
    up_loop_t *loop;
    atomic_int posted; /* what the other thread has handed over before each wake */
    int seen;          /* the last value the wake callback saw; loop thread only */
    int calls;
} waker_t;

static void waker_on_wake(void *data)
{
    waker_t *w = data;
    w->seen = atomic_load(&w->posted);
    w->calls++;
}

static void *waker_run(void *arg)
{
    waker_t *w = arg;
    for (int i = 1; i <= WAKES; i++) {
        atomic_store(&w->posted, i);
        up_loop_wake(w->loop);
    }
    return NULL;
}

static void test_wake_from_another_thread_runs_the_callback(void)
{
    waker_t w = {.loop = up_loop_new()};
    up_loop_set_owner(w.loop, 1);
    up_loop_set_wake(w.loop, waker_on_wake, &w);
    pthread_t t;
    pthread_create(&t, NULL, waker_run, &w);
    uint64_t deadline = up_loop_now(w.loop) + 5000;
    while (w.seen < WAKES && up_loop_now(w.loop) < deadline) {
        up_loop_wait(w.loop, 100);
        up_loop_dispatch(w.loop);
    }
    pthread_join(t, NULL);
    CHECK(w.seen == WAKES && w.calls >= 1 && w.calls <= WAKES,
          "the callback saw the last wake's post: %d of %d, in %d calls", w.seen, WAKES, w.calls);
    up_loop_free(w.loop);
}

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
    test_loop_thread_known_while_the_loop_changes_hands();
    test_wake_from_another_thread_runs_the_callback();
    test_watching_a_closed_fd_fails_and_changes_nothing();
    test_failed_exclusive_rewatch_leaves_the_watcher_unwatched();
    test_wait_on_a_broken_loop_is_an_error();
    return test_report("loop_epoll");
}
