/* Table tests for the timer lists (timer.h). Each case is a script over timers a..e in lists
 * X (50 ms) and Y (200 ms), then the order each list must hold and the timers that must
 * expire, in order, when the expired heads are taken one by one at a given time (as the
 * server's tick does).
 *
 * Steps, space-separated:
 *   +aX@100  arm a in list X at now = 100     -a  disarm a
 *   ?X@160   list X must have no expired head at 160 (checked right there)
 * The lists only ever look at their heads: with one duration per list and a clock that never
 * goes back, the head is always the earliest deadline. */

#include <stdint.h>
#include "test.h"
#include "loop/timer.h"

#define NUM_TIMERS 5

typedef struct timer_case_t {
    const char *name;
    const char *script;
    const char *order_x, *order_y; /* timers in each list, head first */
    uint64_t now;                  /* then expire both lists at this time */
    const char *expired_x, *expired_y;
    const char *deadlines; /* "a=150 b=..." for armed timers, "" to skip */
} timer_case_t;

static const timer_case_t cases[] = {
    {"empty lists expire nothing", "", "", "", 1000000, "", "", ""},
    {"arming appends in order", "+aX@0 +bX@10 +cX@20", "abc", "", 0, "", "", "a=50 b=60 c=70"},
    {"a deadline is now plus the list's duration", "+aX@1000 +bY@1000", "a", "b", 0, "", "",
     "a=1050 b=1200"},
    {"nothing expires before its deadline", "+aX@0 +bX@10", "ab", "", 49, "", "", ""},
    {"expires exactly at its deadline", "+aX@0 +bX@10", "b", "", 50, "a", "", ""},
    {"every expired head in deadline order", "+aX@0 +bX@10 +cX@20 +dX@100", "d", "", 75, "abc", "",
     ""},
    {"lists expire independently", "+aX@0 +bY@0 +cX@100", "c", "b", 100, "a", "", ""},
    {"disarm the head", "+aX@0 +bX@10 -a", "", "", 100, "b", "", ""},
    {"disarm the middle", "+aX@0 +bX@10 +cX@20 -b", "", "", 100, "ac", "", ""},
    {"disarm the tail", "+aX@0 +bX@10 +cX@20 -c", "", "", 100, "ab", "", ""},
    {"disarm twice and an unarmed timer", "+aX@0 -a -a -b", "", "", 100, "", "", ""},
    {"re-arm moves to the tail with a new deadline", "+aX@0 +bX@10 +cX@20 +aX@30", "bca", "", 0, "",
     "", "a=80 b=60 c=70"},
    {"a re-armed head no longer expires first", "+aX@0 +bX@10 +aX@30", "a", "", 70, "b", "",
     "a=80"},
    {"re-arm in another list leaves the first", "+aX@0 +bX@0 +aY@0", "b", "a", 0, "", "",
     "a=200 b=50"},
    {"only the head is looked at", "+aX@100 +bX@0 ?X@60", "ab", "", 0, "", "", "a=150 b=50"},
    {"disarm then re-arm", "+aX@0 -a +aX@500", "a", "", 549, "", "", "a=550"},
    {"all five in both lists", "+aX@0 +bY@0 +cX@10 +dY@10 +eX@20 +aX@20", "", "", 250, "cea", "bd",
     ""},
};

typedef struct world_t {
    up_timer_list_t x, y;
    up_timer_t timers[NUM_TIMERS];
} world_t;

static up_timer_list_t *list_named(world_t *w, char name)
{
    return name == 'X' ? &w->x : &w->y;
}

static int index_of(const world_t *w, const up_timer_t *t)
{
    return (int)(t - w->timers);
}

/* The list's timers as letters, head first; also checks the back links. */
static void list_order(const up_timer_list_t *list, const world_t *w, char *out, int *broken)
{
    int n = 0;
    const up_timer_t *prev = &list->head;
    for (const up_timer_t *t = list->head.next; t != &list->head && n < NUM_TIMERS; t = t->next) {
        if (t->prev != prev)
            *broken = 1;
        out[n++] = (char)('a' + index_of(w, t));
        prev = t;
    }
    if (list->head.prev != prev)
        *broken = 1;
    out[n] = '\0';
}

static void expire_all(up_timer_list_t *list, world_t *w, uint64_t now, char *out)
{
    int n = 0;
    up_timer_t *t;
    while (n < NUM_TIMERS && (t = up_timer_list_expired(list, now)) != NULL) {
        out[n++] = (char)('a' + index_of(w, t));
        up_timer_disarm(t);
    }
    out[n] = '\0';
}

static void run_case(const timer_case_t *c)
{
    world_t w = {0};
    up_timer_list_init(&w.x, 50);
    up_timer_list_init(&w.y, 200);
    for (int i = 0; i < NUM_TIMERS; i++)
        CHECK(!up_timer_is_armed(&w.timers[i]), "%s: a zeroed timer is not armed", c->name);

    for (const char *p = c->script; *p != '\0';) {
        if (*p == ' ') {
            p++;
            continue;
        }
        if (p[0] == '+') {
            up_timer_t *t = &w.timers[p[1] - 'a'];
            up_timer_arm(list_named(&w, p[2]), t, strtoull(p + 4, NULL, 10));
            CHECK(up_timer_is_armed(t), "%s: %c armed", c->name, p[1]);
        } else if (p[0] == '-') {
            up_timer_t *t = &w.timers[p[1] - 'a'];
            up_timer_disarm(t);
            CHECK(!up_timer_is_armed(t) && t->prev == NULL, "%s: %c disarmed", c->name, p[1]);
        } else if (p[0] == '?') {
            up_timer_t *t = up_timer_list_expired(list_named(&w, p[1]), strtoull(p + 3, NULL, 10));
            CHECK(t == NULL, "%s: %.6s expired %c", c->name, p, t ? 'a' + index_of(&w, t) : '-');
        }
        p += strcspn(p, " ");
    }

    char got[NUM_TIMERS + 1];
    int broken = 0;
    if (c->now == 0) {
        list_order(&w.x, &w, got, &broken);
        CHECK(strcmp(got, c->order_x) == 0, "%s: X holds %s, expected %s", c->name, got,
              c->order_x);
        list_order(&w.y, &w, got, &broken);
        CHECK(strcmp(got, c->order_y) == 0, "%s: Y holds %s, expected %s", c->name, got,
              c->order_y);
    } else {
        expire_all(&w.x, &w, c->now, got);
        CHECK(strcmp(got, c->expired_x) == 0, "%s: X expired %s, expected %s", c->name, got,
              c->expired_x);
        expire_all(&w.y, &w, c->now, got);
        CHECK(strcmp(got, c->expired_y) == 0, "%s: Y expired %s, expected %s", c->name, got,
              c->expired_y);
        /* What did not expire is still there, in order. */
        list_order(&w.x, &w, got, &broken);
        CHECK(strcmp(got, c->order_x) == 0, "%s: X keeps %s, expected %s", c->name, got,
              c->order_x);
        list_order(&w.y, &w, got, &broken);
        CHECK(strcmp(got, c->order_y) == 0, "%s: Y keeps %s, expected %s", c->name, got,
              c->order_y);
    }
    CHECK(!broken, "%s: a prev link disagrees with the next links", c->name);

    for (const char *p = c->deadlines; *p != '\0';) {
        if (*p == ' ') {
            p++;
            continue;
        }
        const up_timer_t *t = &w.timers[p[0] - 'a'];
        uint64_t expect = strtoull(p + 2, NULL, 10);
        CHECK(t->deadline == expect, "%s: %c's deadline %llu, expected %llu", c->name, p[0],
              (unsigned long long)t->deadline, (unsigned long long)expect);
        p += strcspn(p, " ");
    }
}

/* The server's tick takes heads until none has expired; an entry re-armed by its callback goes
 * to the tail and must not be seen again in the same tick. */
static void test_rearm_while_expiring_does_not_loop(void)
{
    up_timer_list_t list;
    up_timer_t t[3] = {{0}};
    up_timer_list_init(&list, 50);
    for (int i = 0; i < 3; i++)
        up_timer_arm(&list, &t[i], (uint64_t)i);
    int seen = 0;
    up_timer_t *e;
    while ((e = up_timer_list_expired(&list, 100)) != NULL && seen < 10) {
        seen++;
        up_timer_arm(&list, e, 100);
    }
    CHECK(seen == 3, "each expired timer seen once: %d", seen);
    CHECK(up_timer_list_expired(&list, 149) == NULL && up_timer_list_expired(&list, 150) == &t[0],
          "re-armed ones expire at their new deadline, first re-armed first");
}

int main(void)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        run_case(&cases[i]);
    test_rearm_while_expiring_does_not_loop();
    return test_report("timer");
}
