/* Large body Strings go to the output queue by reference instead of by copy: a shared slice
 * (engine outq.h) over the String's bytes, which keeps a frozen twin of the String alive and
 * unmoved until the loop has written it. A 50 MB body to a slow client then costs no copy and
 * no second 50 MB.
 *
 * The loop thread releases a slice without the GVL, so it must not touch Ruby: the twin is
 * kept in a list the server marks (under a mutex), and releasing only unlinks it; the GC
 * collects the String on its own time. */

#include <stdlib.h>
#include "binding.h"

typedef struct pin_t {
    up_shared_t shared; /* first: the engine hands it back to pin_dispose */
    VALUE str;
    up_rb_server_t *srv;
    struct pin_t *prev, *next;
} pin_t;

static void pin_dispose(up_shared_t *shared)
{
    pin_t *pin = (pin_t *)shared;
    up_rb_server_t *srv = pin->srv;
    pthread_mutex_lock(&srv->pin_lock);
    if (pin->prev != NULL)
        pin->prev->next = pin->next;
    else
        srv->pins = pin->next;
    if (pin->next != NULL)
        pin->next->prev = pin->prev;
    pthread_mutex_unlock(&srv->pin_lock);
    free(pin);
}

up_shared_t *up_rb_shared_string(up_rb_server_t *srv, VALUE str)
{
    pin_t *pin = malloc(sizeof(*pin));
    if (pin == NULL)
        rb_memerror();
    /* A frozen String sharing the bytes: if the app changes its own String later, Ruby copies
     * it first, so the bytes queued stay as they were. */
    pin->str = rb_str_new_frozen(str);
    pin->srv = srv;
    up_shared_init(&pin->shared, RSTRING_PTR(pin->str), (size_t)RSTRING_LEN(pin->str),
                   pin_dispose);
    pthread_mutex_lock(&srv->pin_lock);
    pin->prev = NULL;
    pin->next = srv->pins;
    if (srv->pins != NULL)
        srv->pins->prev = pin;
    srv->pins = pin;
    pthread_mutex_unlock(&srv->pin_lock);
    return &pin->shared;
}

void up_rb_mark_shared_strings(up_rb_server_t *srv)
{
    pthread_mutex_lock(&srv->pin_lock);
    /* rb_gc_mark, not the movable kind: the loop reads the bytes without the GVL, so neither
     * the String nor (for a short, embedded one) its bytes may move under it. */
    for (pin_t *pin = srv->pins; pin != NULL; pin = pin->next)
        rb_gc_mark(pin->str);
    pthread_mutex_unlock(&srv->pin_lock);
}
