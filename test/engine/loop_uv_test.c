/* The libuv backend (ext/up/node/loop_uv.c), on a uv loop of its own.
 *
 * What loop.h promises, held on libuv: readiness is level-triggered (a partial read is
 * reported again), a watcher's events say what is watched, a closed watcher's on_closed runs
 * later and never from inside the close (with or without a uv handle behind it), the tick
 * runs, a wake-up from another thread runs the wake callback on the loop thread, and only the
 * thread that made the loop is its loop thread. The engine's own tests run on this backend
 * too (LOOP=uv in the Makefile). */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>
#include "loop_uv.h"
#include "test.h"

#define DEADLINE_MS 5000

static int fired;
static unsigned last_revents;

static void count_event(up_watcher_t *w, unsigned revents)
{
    (void)w;
    fired++;
    last_revents = revents;
}

/* Runs turns until *counter reaches want or the deadline passes; returns whether it did. */
static int turn_until(up_loop_t *loop, const int *counter, int want)
{
    uint64_t deadline = up_loop_now(loop) + DEADLINE_MS;
    while (*counter < want && up_loop_now(loop) < deadline)
        up_loop_uv_run_once(loop, 10);
    return *counter >= want;
}

static void test_readiness_is_level_triggered(void)
{
    up_loop_t *loop = up_loop_new();
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
    up_watcher_t w = {.fd = sv[0], .cb = count_event};
    CHECK(up_loop_watch(loop, &w, UP_EV_READ) == 0 && w.events == UP_EV_READ, "watch for reads");
    CHECK(write(sv[1], "abcd", 4) == 4, "client writes");
    fired = 0;
    CHECK(turn_until(loop, &fired, 1) && (last_revents & UP_EV_READ), "readable: %u", last_revents);
    char c;
    CHECK(read(sv[0], &c, 1) == 1, "read one byte of four");
    int before = fired;
    CHECK(turn_until(loop, &fired, before + 1), "still readable after a partial read");
    CHECK(up_loop_watch(loop, &w, 0) == 0 && w.events == 0, "paused");
    before = fired;
    up_loop_uv_run_once(loop, 20);
    CHECK(fired == before, "no event while paused (%d)", fired - before);
    CHECK(up_loop_watch(loop, &w, UP_EV_WRITE) == 0 && w.events == UP_EV_WRITE, "watch for writes");
    CHECK(turn_until(loop, &fired, before + 1) && last_revents == UP_EV_WRITE, "writable: %u",
          last_revents);
    up_loop_close_watcher(loop, &w, count_event);
    close(sv[0]);
    close(sv[1]);
    up_loop_free(loop);
}

static void test_hang_up_reads(void)
{
    up_loop_t *loop = up_loop_new();
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
    up_watcher_t w = {.fd = sv[0], .cb = count_event};
    CHECK(up_loop_watch(loop, &w, UP_EV_READ) == 0, "watch");
    close(sv[1]);
    fired = 0;
    CHECK(turn_until(loop, &fired, 1) && (last_revents & UP_EV_READ), "a hang-up is a read: %u",
          last_revents);
    up_loop_close_watcher(loop, &w, count_event);
    close(sv[0]);
    up_loop_free(loop);
}

static int closed;

static void on_closed(up_watcher_t *w, unsigned revents)
{
    (void)w;
    (void)revents;
    closed++;
}

static void test_on_closed_runs_later_with_or_without_a_handle(void)
{
    up_loop_t *loop = up_loop_new();
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
    up_watcher_t watched = {.fd = sv[0], .cb = count_event};
    up_watcher_t never = {.fd = sv[1], .cb = count_event};
    CHECK(up_loop_watch(loop, &watched, UP_EV_READ) == 0, "watch");
    CHECK(write(sv[1], "x", 1) == 1, "an event pending for the closed watcher");
    closed = 0;
    fired = 0;
    up_loop_close_watcher(loop, &watched, on_closed);
    up_loop_close_watcher(loop, &never, on_closed);
    CHECK(closed == 0, "on_closed ran inside the close");
    close(sv[0]); /* the owner may close the fd at once */
    CHECK(turn_until(loop, &closed, 2), "both on_closed ran: %d", closed);
    CHECK(fired == 0, "the closed watcher's callback ran %d times", fired);
    close(sv[1]);
    /* One closed and never run: up_loop_free runs it. */
    up_watcher_t last = {.fd = -1, .cb = count_event};
    up_loop_close_watcher(loop, &last, on_closed);
    up_loop_free(loop);
    CHECK(closed == 3, "up_loop_free ran the last on_closed: %d", closed);
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
    CHECK(w.events == 0 && w._backend == NULL, "events %u after a failed watch", w.events);
    up_loop_free(loop);
}

static int ticks;

static void on_tick(void *data)
{
    (void)data;
    ticks++;
}

static void test_tick_runs_and_stops(void)
{
    up_loop_t *loop = up_loop_new();
    uint64_t start = up_loop_now(loop);
    ticks = 0;
    up_loop_set_tick(loop, 20, on_tick, NULL);
    CHECK(turn_until(loop, &ticks, 3), "three ticks: %d", ticks);
    CHECK(up_loop_now(loop) - start >= 40, "ticks are spaced: %d ms for 3",
          (int)(up_loop_now(loop) - start));
    up_loop_set_tick(loop, 20, NULL, NULL);
    int before = ticks;
    up_loop_uv_run_once(loop, 60);
    CHECK(ticks == before, "no tick once stopped");
    up_loop_free(loop);
}

#define WAKES 1000

typedef struct waker_t {
    up_loop_t *loop;
    atomic_int posted;
    int seen; /* the last value the wake callback saw; loop thread only */
    int calls;
    atomic_long loop_thread_elsewhere; /* up_loop_is_loop_thread said yes on the waker */
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
        if (up_loop_is_loop_thread(w->loop))
            atomic_fetch_add(&w->loop_thread_elsewhere, 1);
        up_loop_wake(w->loop);
    }
    return NULL;
}

static void test_wake_from_another_thread_runs_the_callback(void)
{
    waker_t w = {.loop = up_loop_new()};
    CHECK(up_loop_is_loop_thread(w.loop), "the thread that made the loop runs it");
    up_loop_set_wake(w.loop, waker_on_wake, &w);
    pthread_t t;
    pthread_create(&t, NULL, waker_run, &w);
    turn_until(w.loop, &w.seen, WAKES);
    pthread_join(t, NULL);
    CHECK(w.seen == WAKES && w.calls >= 1 && w.calls <= WAKES,
          "the callback saw the last wake's post: %d of %d, in %d calls", w.seen, WAKES, w.calls);
    CHECK(atomic_load(&w.loop_thread_elsewhere) == 0, "another thread was taken for the loop's");
    up_loop_free(w.loop);
}

static void test_a_loop_on_a_foreign_uv_loop(void)
{
    uv_loop_t uv;
    CHECK(uv_loop_init(&uv) == 0, "uv loop");
    up_loop_t *loop = up_loop_uv_new(&uv);
    CHECK(loop != NULL, "made");
    CHECK(up_loop_uv_run_once(loop, 0) == -1, "not ours to run");
    ticks = 0;
    up_loop_set_tick(loop, 5, on_tick, NULL);
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
    up_watcher_t w = {.fd = sv[0], .cb = count_event};
    CHECK(up_loop_watch(loop, &w, UP_EV_READ) == 0, "watch");
    /* Only the socket keeps uv alive: the tick is unreferenced, so it runs while the socket is
     * watched, and uv_run returns once it is closed. */
    CHECK(write(sv[1], "x", 1) == 1, "write");
    fired = 0;
    while (fired == 0 && ticks < 2)
        uv_run(&uv, UV_RUN_ONCE);
    CHECK(fired == 1, "the event came through Node-style uv_run");
    closed = 0;
    up_loop_close_watcher(loop, &w, on_closed);
    close(sv[0]);
    close(sv[1]);
    up_loop_free(loop);
    CHECK(uv_run(&uv, UV_RUN_DEFAULT) == 0, "uv returns: nothing of ours keeps it alive");
    CHECK(closed == 1, "on_closed ran");
    CHECK(uv_loop_close(&uv) == 0, "every handle of ours is closed");
}

int main(void)
{
    test_readiness_is_level_triggered();
    test_hang_up_reads();
    test_on_closed_runs_later_with_or_without_a_handle();
    test_watching_a_closed_fd_fails_and_changes_nothing();
    test_tick_runs_and_stops();
    test_wake_from_another_thread_runs_the_callback();
    test_a_loop_on_a_foreign_uv_loop();
    return test_report("loop_uv");
}
