#ifndef UP_TIMER_H
#define UP_TIMER_H

/* Timeouts as lists, one list per kind of timeout (keep-alive idle, request head, body, write).
 * Every entry of a list has the same duration, so appending at the tail keeps a list sorted by
 * deadline: arming, disarming and finding what expired are all O(1), and the loop only looks
 * at list heads on each tick. */

#include <stddef.h>
#include <stdint.h>

typedef struct up_timer_t {
    struct up_timer_t *prev, *next; /* both NULL while not in a list */
    uint64_t deadline;
} up_timer_t;

typedef struct up_timer_list_t {
    up_timer_t head; /* sentinel of a circular list */
    uint64_t duration_ms;
} up_timer_list_t;

static inline void up_timer_list_init(up_timer_list_t *list, uint64_t duration_ms)
{
    list->head.prev = list->head.next = &list->head;
    list->duration_ms = duration_ms;
}

static inline int up_timer_is_armed(const up_timer_t *t)
{
    return t->next != NULL;
}

static inline void up_timer_disarm(up_timer_t *t)
{
    if (t->next == NULL)
        return;
    t->prev->next = t->next;
    t->next->prev = t->prev;
    t->prev = t->next = NULL;
}

/* (Re)arms t to fire list->duration_ms after now. */
static inline void up_timer_arm(up_timer_list_t *list, up_timer_t *t, uint64_t now)
{
    up_timer_disarm(t);
    t->deadline = now + list->duration_ms;
    t->prev = list->head.prev;
    t->next = &list->head;
    list->head.prev->next = t;
    list->head.prev = t;
}

/* The earliest entry whose deadline has passed, or NULL. The caller disarms it (or re-arms it)
 * before asking again. */
static inline up_timer_t *up_timer_list_expired(up_timer_list_t *list, uint64_t now)
{
    up_timer_t *first = list->head.next;
    if (first == &list->head || first->deadline > now)
        return NULL;
    return first;
}

#endif
