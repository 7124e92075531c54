/* The per-loop context's own parts: limits' defaults, references, the idle timer lists, the
 * task list. */

#include <stdio.h>
#include <stdlib.h>
#include "core/context.h"

void up_server_config_defaults(up_server_config_t *cfg)
{
    cfg->max_head_size = UP_DEFAULT_MAX_HEAD_SIZE;
    cfg->max_headers = UP_DEFAULT_MAX_HEADERS;
    cfg->max_body_size = UP_DEFAULT_MAX_BODY_SIZE;
    cfg->spool_threshold = UP_DEFAULT_SPOOL_THRESHOLD;
    cfg->head_timeout_ms = UP_DEFAULT_HEAD_TIMEOUT_MS;
    cfg->body_timeout_ms = UP_DEFAULT_BODY_TIMEOUT_MS;
    cfg->keepalive_timeout_ms = UP_DEFAULT_KEEPALIVE_TIMEOUT_MS;
    cfg->write_timeout_ms = UP_DEFAULT_WRITE_TIMEOUT_MS;
    cfg->max_pipeline = UP_DEFAULT_MAX_PIPELINE;
    snprintf(cfg->tmp_dir, sizeof(cfg->tmp_dir), "/tmp");
}

up_timer_list_t *up_server_idle_timers(up_context_t *server, unsigned duration_ms)
{
    up_timer_list_t *nearest = NULL;
    uint64_t nearest_gap = UINT64_MAX;
    for (int i = 0; i < server->num_idle_timers; i++) {
        up_timer_list_t *list = &server->idle_timers[i];
        if (list->duration_ms == duration_ms)
            return list;
        uint64_t gap = list->duration_ms > duration_ms ? list->duration_ms - duration_ms
                                                       : duration_ms - list->duration_ms;
        if (gap < nearest_gap) {
            nearest_gap = gap;
            nearest = list;
        }
    }
    if (server->num_idle_timers == UP_MAX_IDLE_DURATIONS)
        return nearest;
    up_timer_list_t *list = &server->idle_timers[server->num_idle_timers++];
    up_timer_list_init(list, duration_ms);
    return list;
}

void up_server_any_task(up_context_t *server, up_task_t *task)
{
    up_task_t *head = atomic_load(&server->task_head);
    do {
        task->_next = head;
    } while (!atomic_compare_exchange_weak(&server->task_head, &head, task));
    if (head == NULL)
        up_loop_wake(server->loop); /* a list that was not empty has its wake-up on the way */
}

/* Touches nothing of the loop: it may run after the loop is gone. */
static void really_free(up_context_t *server)
{
    while (server->retired_listeners != NULL) {
        up_listener_t *l = server->retired_listeners;
        server->retired_listeners = l->next;
        l->transport->release_context(l->transport_ctx);
        free(l);
    }
    up_buffer_pool_dispose(&server->pool);
    free(server);
}

void up_server_retain(up_context_t *server)
{
    atomic_fetch_add_explicit(&server->refs, 1, memory_order_relaxed);
}

void up_server_release(up_context_t *server)
{
    if (atomic_fetch_sub_explicit(&server->refs, 1, memory_order_acq_rel) == 1)
        really_free(server);
}

int up_server_add_handler(up_context_t *server, int (*serve)(void *data, up_exchange_t *ex),
                          void *data)
{
    if (server->num_handlers == UP_MAX_HANDLERS)
        return -1;
    server->handlers[server->num_handlers++] = (up_handler_t){serve, data};
    return 0;
}

up_handled_t up_server_loop_handle(up_context_t *server, up_exchange_t *ex,
                                   void (*lend)(up_exchange_t *ex))
{
    for (size_t i = 0; i < server->num_handlers; i++) {
        if (server->handlers[i].serve(server->handlers[i].data, ex)) {
            if (server->handler.on_served != NULL)
                server->handler.on_served(ex, server->handler.user);
            return UP_HANDLED_HERE;
        }
    }
    lend(ex);
    return server->handler.on_request(ex, server->handler.user) == UP_REQUEST_DEFERRED
               ? UP_HANDLED_DEFERRED
               : UP_HANDLED_DONE;
}
