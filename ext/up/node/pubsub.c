/* Pub/sub on `up`: the engine's registry and fan-out (pubsub.h) for node/up/pubsub.js. A
 * subscription without a block is the engine's alone: the loop writes each message to the
 * client, encoded once and shared by every subscriber, with no JavaScript at all. One with a
 * block is a number of pubsub.js's (its id, never 0), and each of its messages is queued as an
 * event (event_queue.h) for pubsub.js to run the block. */

#include <stdlib.h>
#include <string.h>
#include "base/memory.h"
#include "upgrades.h"
#include "base/utf8.h"

static napi_value number(napi_env env, double d)
{
    napi_value v;
    napi_create_double(env, d, &v);
    return v;
}

/* What the engine keeps as a subscription's user: ours, freed when the engine hands it back
 * (replaced, unsubscribed), or with the environment (up_node_pubsub_free_users) for those the
 * engine still holds then. JavaScript holds it as an external (pubsub.js needs it to end a
 * subscription of the server's own, which the engine finds by its user). */
struct up_node_sub_t {
    up_node_upgrades_t *u;
    uint32_t id;
    up_node_sub_t *prev, *next; /* u->subs: every one the engine holds */
};

static up_node_sub_t *new_user(up_node_upgrades_t *u, uint32_t id)
{
    up_node_sub_t *user = up_malloc(sizeof(*user));
    user->u = u;
    user->id = id;
    user->prev = NULL;
    user->next = u->subs;
    if (u->subs != NULL)
        u->subs->prev = user;
    u->subs = user;
    return user;
}

static void free_user(up_node_sub_t *user)
{
    if (user->prev != NULL)
        user->prev->next = user->next;
    else
        user->u->subs = user->next;
    if (user->next != NULL)
        user->next->prev = user->prev;
    free(user);
}

void up_node_pubsub_free_users(up_node_upgrades_t *u)
{
    while (u->subs != NULL)
        free_user(u->subs);
}

/* ---------------------------------------------------------------- the engine's side */

/* Loop thread, under the registry's lock: queued, never run here. */
static void on_pubsub_message(void *user, const char *channel, size_t channel_len,
                              up_shared_t *message)
{
    up_node_sub_t *sub = user;
    char *copy = up_malloc(channel_len + 1);
    memcpy(copy, channel, channel_len);
    copy[channel_len] = '\0';
    up_shared_retain(message);
    /* A block gets text when the bytes are UTF-8 (what a text frame carried), else bytes, as
     * up_ruby's does (subscription.c). */
    up_node_event_t ev = {.kind = up_utf8_valid(message->base, message->len)
                                      ? UP_NODE_EV_PUBSUB_TEXT
                                      : UP_NODE_EV_PUBSUB_BINARY,
                          .id = sub->id,
                          .message = message,
                          .channel = copy,
                          .channel_len = channel_len};
    up_node_event_queue_push(&sub->u->queue, &ev);
}

static void on_pubsub_log(void *data, const char *message)
{
    up_node_upgrades_t *u = data;
    up_node_log(u->srv, message);
}

const up_pubsub_callbacks_t up_node_pubsub_callbacks = {on_pubsub_message, on_pubsub_log, NULL};

/* ---------------------------------------------------------------- JavaScript's calls */

/* The connection a client token names (NULL for null or undefined: the server's own); *closed
 * set for a token that names none now. */
static up_conn_t *conn_arg(napi_env env, up_node_upgrades_t *u, napi_value v, int *closed)
{
    napi_valuetype type;
    *closed = 0;
    napi_typeof(env, v, &type);
    if (type == napi_null || type == napi_undefined)
        return NULL;
    up_node_client_t *c = up_node_client_of(u, env, v);
    if (c == NULL)
        *closed = 1;
    return c == NULL ? NULL : c->conn;
}

static uint32_t id_of_user(void *user)
{
    if (user == NULL)
        return 0;
    uint32_t id = ((up_node_sub_t *)user)->id;
    free_user(user);
    return id;
}

/* subscribe(token, channel, isPattern, delivery, id): subscribes the client token names (null:
 * the server itself, delivery 3 only) to channel or, isPattern, to the channels the glob
 * matches. delivery: 0 text frames, 1 binary frames, 2 events (the engine writes them), 3 a
 * block (id's messages come as events). Returns [handle, the id of the subscription it replaced
 * or 0, whether it is the server's first to channel], or null when the client is closed. */
static napi_value subscribe(napi_env env, napi_callback_info info)
{
    size_t argc = 5;
    napi_value argv[5], result, handle, replaced_v, first_v;
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    up_node_upgrades_t *u = up_node_upgrades_of(env);
    uint32_t delivery, id;
    bool is_pattern = false;
    if (u == NULL || argc < 5 || napi_get_value_uint32(env, argv[3], &delivery) != napi_ok ||
        delivery > UP_PUBSUB_CALLBACK || napi_get_value_uint32(env, argv[4], &id) != napi_ok ||
        id == 0) {
        napi_throw_type_error(env, NULL, "subscribe(token, channel, isPattern, delivery, id)");
        return NULL;
    }
    napi_get_value_bool(env, argv[2], &is_pattern);
    int closed;
    up_conn_t *conn = conn_arg(env, u, argv[0], &closed);
    const char *channel;
    size_t len;
    if (closed || (conn == NULL && delivery != UP_PUBSUB_CALLBACK)) {
        napi_get_null(env, &result);
        return result;
    }
    if (up_node_scratch_bytes(env, &u->scratch, argv[1], 1, 0, &channel, &len) != 0) {
        napi_throw_type_error(env, NULL, "a channel must be a String");
        return NULL;
    }
    up_node_sub_t *user = new_user(u, id);
    void *replaced = NULL;
    int first = 0;
    if (up_pubsub_any_subscribe(u->pubsub, conn, channel, len, is_pattern,
                                (up_pubsub_delivery_t)delivery, user, &replaced, &first) != 0) {
        free_user(user);
        napi_get_null(env, &result);
        return result;
    }
    napi_create_external(env, user, NULL, NULL, &handle);
    napi_create_uint32(env, id_of_user(replaced), &replaced_v);
    napi_get_boolean(env, first, &first_v);
    napi_create_array_with_length(env, 3, &result);
    napi_set_element(env, result, 0, handle);
    napi_set_element(env, result, 1, replaced_v);
    napi_set_element(env, result, 2, first_v);
    return result;
}

/* unsubscribe(token, channel, isPattern, handle): ends the client's subscription (token null:
 * the server's own that subscribe's handle names). Returns its id * 2 + whether it was the
 * server's last to channel; 0 when there was none. */
static napi_value unsubscribe(napi_env env, napi_callback_info info)
{
    size_t argc = 4;
    napi_value argv[4];
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    up_node_upgrades_t *u = up_node_upgrades_of(env);
    if (u == NULL || argc < 4)
        return number(env, 0);
    int closed;
    up_conn_t *conn = conn_arg(env, u, argv[0], &closed);
    bool is_pattern = false;
    void *user = NULL;
    napi_get_value_bool(env, argv[2], &is_pattern);
    /* The server's own, or a client's whose close event ran already (its slot is gone, the
     * engine's subscription is not): found by its user. */
    (void)closed;
    if (conn == NULL && napi_get_value_external(env, argv[3], &user) != napi_ok)
        return number(env, 0);
    const char *channel;
    size_t len;
    if (up_node_scratch_bytes(env, &u->scratch, argv[1], 1, 0, &channel, &len) != 0)
        return number(env, 0);
    int last = 0;
    void *found = up_pubsub_any_unsubscribe(u->pubsub, conn, channel, len, is_pattern, user, &last);
    return number(env, (double)id_of_user(found) * 2 + last);
}

/* publish(channel, message, utf8): to this process's subscribers, fanned out by the loop's next
 * turn. message: a String (UTF-8, or one char a byte when utf8 is false) or a Buffer. */
static napi_value publish(napi_env env, napi_callback_info info)
{
    size_t argc = 3;
    napi_value argv[3];
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    up_node_upgrades_t *u = up_node_upgrades_of(env);
    bool utf8 = true;
    const char *channel, *message;
    size_t channel_len, len;
    if (u == NULL || argc < 3) {
        napi_throw_error(env, NULL, "publish(channel, message, utf8) after upgrades()");
        return NULL;
    }
    napi_get_value_bool(env, argv[2], &utf8);
    if (up_node_scratch_bytes(env, &u->scratch, argv[1], utf8, 0, &message, &len) != 0) {
        napi_throw_type_error(env, NULL, "a message must be a String or a Buffer");
        return NULL;
    }
    /* The channel after the message in scratch memory (a Buffer message is not in it). */
    size_t at = message == u->scratch.base ? len + 1 : 0;
    if (up_node_scratch_bytes(env, &u->scratch, argv[0], 1, at, &channel, &channel_len) != 0) {
        napi_throw_type_error(env, NULL, "a channel must be a String");
        return NULL;
    }
    if (at > 0)
        message = u->scratch.base; /* scratch memory may have moved */
    up_pubsub_any_publish(u->pubsub, channel, channel_len, message, len);
    return NULL;
}

napi_status up_node_define_pubsub(napi_env env, napi_value exports)
{
    napi_property_descriptor props[] = {
        {"subscribe", NULL, subscribe, NULL, NULL, NULL, napi_default_jsproperty, NULL},
        {"unsubscribe", NULL, unsubscribe, NULL, NULL, NULL, napi_default_jsproperty, NULL},
        {"publish", NULL, publish, NULL, NULL, NULL, napi_default_jsproperty, NULL},
    };
    return napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
}
