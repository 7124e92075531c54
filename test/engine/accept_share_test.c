/* The workers' shared connection counts (core/accept_share.c): a worker yields to a sibling that
 * accepts, wrote its slot lately and holds much fewer, and to no one else; a count written in
 * a forked child is read in its parent, as workers forked by one master read each other's. */

#define _GNU_SOURCE
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "core/accept_share.h"
#include "test.h"

static void test_yields_only_to_a_live_accepting_sibling_with_fewer(void)
{
    up_accept_share_t *share = up_accept_share_new(3);
    CHECK(share != NULL, "mapped");
    /* No sibling has written its slot yet (booting): nobody to yield to. */
    CHECK(!up_accept_share_should_yield(share, 0, 100), "siblings not booted");
    up_accept_share_publish(share, 1, 10, 1);
    CHECK(up_accept_share_should_yield(share, 0, 100), "100 against 10");
    CHECK(!up_accept_share_should_yield(share, 0, 16), "16 against 10: within the ratio");
    CHECK(!up_accept_share_should_yield(share, 0, 4), "a few connections: never");
    /* A sibling that does not accept (busy, stopping) takes nothing. */
    up_accept_share_publish(share, 1, 10, 0);
    CHECK(!up_accept_share_should_yield(share, 0, 100), "sibling not accepting");
    /* Any one sibling with fewer is enough. */
    up_accept_share_publish(share, 2, 0, 1);
    CHECK(up_accept_share_should_yield(share, 0, 100), "the third worker holds none");
    /* A worker does not compare with its own slot, and one past the share with no one. */
    CHECK(!up_accept_share_should_yield(share, 2, 100), "slot 2: only its own slot holds fewer");
    CHECK(!up_accept_share_should_yield(share, 7, 100), "a slot past the share");
    up_accept_share_publish(share, 7, 1, 1); /* ignored, not written past the end */
    up_accept_share_set_open(share, 2, 90);
    CHECK(!up_accept_share_should_yield(share, 0, 100), "the third now holds 90");
    up_accept_share_free(share);
    CHECK(up_accept_share_new(0) == NULL, "no workers");
}

/* A slot left unwritten for three seconds is a worker gone or stuck. */
static void test_a_stale_slot_is_ignored(void)
{
    up_accept_share_t *share = up_accept_share_new(2);
    up_accept_share_publish(share, 1, 0, 1);
    CHECK(up_accept_share_should_yield(share, 0, 50), "fresh sibling");
    atomic_store(&share->slots[1].beat_ms, atomic_load(&share->slots[1].beat_ms) - 3500);
    CHECK(!up_accept_share_should_yield(share, 0, 50), "sibling silent for 3.5 s");
    up_accept_share_free(share);
}

static void test_children_share_the_counts(void)
{
    up_accept_share_t *share = up_accept_share_new(2);
    pid_t pid = fork();
    if (pid == 0) {
        up_accept_share_publish(share, 1, 3, 1);
        _exit(0);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status), "child ran");
    CHECK(atomic_load(&share->slots[1].open) == 3, "the child's count: %u",
          (unsigned)atomic_load(&share->slots[1].open));
    CHECK(up_accept_share_should_yield(share, 0, 40), "the parent yields to the child's slot");
    up_accept_share_free(share);
}

int main(void)
{
    test_yields_only_to_a_live_accepting_sibling_with_fewer();
    test_a_stale_slot_is_ignored();
    test_children_share_the_counts();
    return test_report("accept_share");
}
