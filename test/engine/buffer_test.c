/* The buffer pool (buffer.c) shared by the loop thread and the threads that write responses:
 * chunks taken and given back from two threads at once are never handed out twice, and the
 * pool keeps no more than its bound. */

#define _GNU_SOURCE
#include <pthread.h>
#include "base/buffer.h"
#include "test.h"

#define ROUNDS 20000
#define HELD 8 /* chunks a thread holds at once */

typedef struct user_t {
    up_buffer_pool_t *pool;
    char mark;
    long clobbered; /* chunks another holder wrote into while this one held them */
} user_t;

/* Takes HELD chunks, marks every byte, gives them back, again and again: a chunk handed to both
 * threads at once shows as the other thread's mark. */
static void *user_run(void *arg)
{
    user_t *u = arg;
    char *held[HELD];
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < HELD; i++) {
            held[i] = up_buffer_pool_take(u->pool);
            memset(held[i], u->mark, UP_BUFFER_CHUNK);
        }
        for (int i = 0; i < HELD; i++) {
            if (held[i][0] != u->mark || held[i][UP_BUFFER_CHUNK - 1] != u->mark)
                u->clobbered++;
            up_buffer_pool_give(u->pool, held[i]);
        }
    }
    return NULL;
}

static void test_two_threads_take_and_give_chunks(void)
{
    up_buffer_pool_t pool;
    up_buffer_pool_init(&pool);
    user_t users[2] = {{&pool, 'a', 0}, {&pool, 'b', 0}};
    pthread_t threads[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&threads[i], NULL, user_run, &users[i]);
    for (int i = 0; i < 2; i++) {
        pthread_join(threads[i], NULL);
        CHECK(users[i].clobbered == 0, "thread %d: %ld chunks written by the other while held", i,
              users[i].clobbered);
    }
    CHECK(pool.count > 0 && pool.count <= 2 * HELD, "the pool keeps what was given back: %zu",
          pool.count);
    up_buffer_pool_dispose(&pool);
}

static void test_pool_frees_past_its_bound(void)
{
    enum { N = UP_BUFFER_POOL_MAX + 10 };
    up_buffer_pool_t pool;
    up_buffer_pool_init(&pool);
    static char *chunks[N];
    for (int i = 0; i < N; i++)
        chunks[i] = up_buffer_pool_take(&pool);
    for (int i = 0; i < N; i++)
        up_buffer_pool_give(&pool, chunks[i]);
    CHECK(pool.count == UP_BUFFER_POOL_MAX, "kept %zu of %d, bound %d", pool.count, N,
          UP_BUFFER_POOL_MAX);
    up_buffer_pool_dispose(&pool);
}

int main(void)
{
    test_two_threads_take_and_give_chunks();
    test_pool_frees_past_its_bound();
    return test_report("buffer");
}
