/* The epoll backend's cross-thread parts (loop_epoll.c): which thread runs the loop, asked from
 * any thread while the loop passes from one thread to another, as the MRI binding passes it
 * under its loop lock; and a wake-up from another thread running the wake callback on the loop
 * thread. */

#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include "loop_epoll.h"
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

/* Never runs the loop, and asks all along (as up_conn_send does from an app thread). */
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

int main(void)
{
    test_loop_thread_known_while_the_loop_changes_hands();
    test_wake_from_another_thread_runs_the_callback();
    return test_report("loop_epoll");
}
