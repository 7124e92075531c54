/* Pub/sub inside one server; see pubsub.h. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/memory.h"
#include "base/utf8.h"
#include "pubsub/pubsub.h"
#include "sse/sse.h"
#include "websocket/websocket.h"
#include "websocket/websocket_deflate.h"

typedef struct topic_t topic_t;

/* One subscription: on its topic's list, and on its connection's list (to end them all at a
 * close). */
typedef struct sub_t {
    topic_t *topic;
    up_conn_t *conn; /* referenced; NULL for a server-wide subscription */
    up_pubsub_delivery_t delivery;
    void *user;
    struct sub_t *next_in_topic, *prev_in_topic;
} sub_t;

/* A channel or a pattern with its subscriptions. */
struct topic_t {
    char *name;
    size_t len;
    int is_pattern;
    uint64_t hash;
    sub_t *subs;
    size_t num_subs;
    topic_t *next; /* the channel table's bucket, or the pattern list */
    topic_t **prev_link;
};

struct up_pubsub_t {
    up_context_t *server;
    uint64_t max_pending;
    up_pubsub_callbacks_t callbacks;
    pthread_mutex_t lock; /* the registry: topics, subscriptions, counters */
    topic_t **buckets;    /* channels, by hash */
    size_t num_buckets, num_channels;
    topic_t *patterns;
    up_pubsub_stats_t stats;
    /* Compresses a broadcast once for every subscriber that negotiated permessage-deflate;
     * loop thread only, made at the first. */
    up_ws_compressor_t compressor;
    int compressor_ready;
};

/* ---------------------------------------------------------------- glob */

/* Whether c is in the class at p (just after '['); *end gets past its ']'. A class without a
 * closing ']' runs to the end of the pattern, as in Redis. */
static int in_class(const char *p, const char *pend, unsigned char c, const char **end)
{
    int negate = p < pend && *p == '^';
    if (negate)
        p++;
    int match = 0;
    while (p < pend && *p != ']') {
        if (*p == '\\' && p + 1 < pend) {
            p++;
            match |= (unsigned char)*p == c;
            p++;
        } else if (p + 2 < pend && p[1] == '-' && p[2] != ']') {
            unsigned char lo = (unsigned char)p[0], hi = (unsigned char)p[2];
            if (lo > hi) {
                unsigned char t = lo;
                lo = hi;
                hi = t;
            }
            match |= c >= lo && c <= hi;
            p += 3;
        } else {
            match |= (unsigned char)*p == c;
            p++;
        }
    }
    *end = p < pend ? p + 1 : p;
    return negate ? !match : match;
}

/* Iterative, with one backtrack point (the last star): linear in pattern x string at worst. */
int up_glob_match(const char *pattern, size_t plen, const char *str, size_t slen)
{
    const char *p = pattern, *pend = pattern + plen, *s = str, *send = str + slen;
    const char *star = NULL, *star_s = NULL;
    while (s < send) {
        if (p < pend && *p == '*') {
            while (p < pend && *p == '*')
                p++;
            if (p == pend)
                return 1;
            star = p;
            star_s = s;
            continue;
        }
        if (p < pend) {
            const char *next = p + 1;
            int ok;
            if (*p == '?') {
                ok = 1;
            } else if (*p == '[') {
                ok = in_class(p + 1, pend, (unsigned char)*s, &next);
            } else if (*p == '\\' && p + 1 < pend) {
                ok = p[1] == *s;
                next = p + 2;
            } else {
                ok = *p == *s;
            }
            if (ok) {
                p = next;
                s++;
                continue;
            }
        }
        if (star == NULL)
            return 0;
        p = star;
        s = ++star_s;
    }
    while (p < pend && *p == '*')
        p++;
    return p == pend;
}

/* ---------------------------------------------------------------- the registry */

static uint64_t hash_of(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

up_pubsub_t *up_pubsub_new(up_context_t *server, uint64_t max_pending,
                           const up_pubsub_callbacks_t *callbacks)
{
    up_pubsub_t *ps = up_calloc(1, sizeof(*ps));
    ps->server = server;
    ps->max_pending = max_pending;
    ps->callbacks = *callbacks;
    pthread_mutex_init(&ps->lock, NULL);
    ps->num_buckets = 64;
    ps->buckets = up_calloc(ps->num_buckets, sizeof(*ps->buckets));
    return ps;
}

static void link_topic(topic_t **link, topic_t *t)
{
    t->next = *link;
    if (*link != NULL)
        (*link)->prev_link = &t->next;
    *link = t;
    t->prev_link = link;
}

static void unlink_topic(topic_t *t)
{
    *t->prev_link = t->next;
    if (t->next != NULL)
        t->next->prev_link = t->prev_link;
}

static void grow_buckets(up_pubsub_t *ps)
{
    size_t n = ps->num_buckets * 2;
    topic_t **buckets = up_calloc(n, sizeof(*buckets));
    for (size_t i = 0; i < ps->num_buckets; i++) {
        while (ps->buckets[i] != NULL) {
            topic_t *t = ps->buckets[i];
            unlink_topic(t);
            link_topic(&buckets[t->hash & (n - 1)], t);
        }
    }
    free(ps->buckets);
    ps->buckets = buckets;
    ps->num_buckets = n;
}

/* The topic for (name, is_pattern); made when create (then *created is set). Lock held. */
static topic_t *find_topic(up_pubsub_t *ps, const char *name, size_t len, int is_pattern,
                           int create, int *created)
{
    uint64_t h = hash_of(name, len);
    topic_t **head = is_pattern ? &ps->patterns : &ps->buckets[h & (ps->num_buckets - 1)];
    for (topic_t *t = *head; t != NULL; t = t->next) {
        if (t->hash == h && t->len == len && memcmp(t->name, name, len) == 0)
            return t;
    }
    if (!create)
        return NULL;
    if (!is_pattern && ps->num_channels + 1 > ps->num_buckets) {
        grow_buckets(ps);
        head = &ps->buckets[h & (ps->num_buckets - 1)];
    }
    topic_t *t = up_calloc(1, sizeof(*t));
    t->name = up_malloc(len + 1);
    memcpy(t->name, name, len);
    t->name[len] = '\0';
    t->len = len;
    t->is_pattern = is_pattern;
    t->hash = h;
    link_topic(head, t);
    if (!is_pattern)
        ps->num_channels++;
    *created = 1;
    return t;
}

/* Returns 1 when t went with its last subscription. */
static int drop_topic_if_empty(up_pubsub_t *ps, topic_t *t)
{
    if (t->subs != NULL)
        return 0;
    unlink_topic(t);
    if (!t->is_pattern)
        ps->num_channels--;
    free(t->name);
    free(t);
    return 1;
}

/* Takes sub off its topic; lock held. Returns its user; *gone is set when the topic went. */
static void *remove_sub(up_pubsub_t *ps, sub_t *sub, int *gone)
{
    topic_t *t = sub->topic;
    if (sub->prev_in_topic != NULL)
        sub->prev_in_topic->next_in_topic = sub->next_in_topic;
    else
        t->subs = sub->next_in_topic;
    if (sub->next_in_topic != NULL)
        sub->next_in_topic->prev_in_topic = sub->prev_in_topic;
    t->num_subs--;
    ps->stats.subscriptions--;
    void *user = sub->user;
    if (sub->conn != NULL)
        up_conn_release(sub->conn);
    free(sub);
    if (drop_topic_if_empty(ps, t) && gone != NULL)
        *gone = 1;
    return user;
}

/* conn's subscription in t (or, for conn NULL, the one with user); lock held. */
static sub_t *find_sub(topic_t *t, up_conn_t *conn, void *user)
{
    for (sub_t *s = t->subs; s != NULL; s = s->next_in_topic) {
        if (conn != NULL ? s->conn == conn : s->user == user)
            return s;
    }
    return NULL;
}

int up_pubsub_any_subscribe(up_pubsub_t *ps, up_conn_t *conn, const char *channel, size_t len,
                            int is_pattern, up_pubsub_delivery_t delivery, void *user,
                            void **replaced, int *first)
{
    *replaced = NULL;
    *first = 0;
    if (conn != NULL && up_conn_any_broken(conn))
        return -1;
    sub_t *sub = up_calloc(1, sizeof(*sub));
    sub->conn = conn;
    sub->delivery = delivery;
    sub->user = user;
    if (conn != NULL)
        up_conn_retain(conn);
    pthread_mutex_lock(&ps->lock);
    topic_t *t = find_topic(ps, channel, len, is_pattern, 1, first);
    sub_t *old = conn != NULL ? find_sub(t, conn, NULL) : NULL;
    sub->topic = t;
    sub->next_in_topic = t->subs;
    if (t->subs != NULL)
        t->subs->prev_in_topic = sub;
    t->subs = sub;
    t->num_subs++;
    ps->stats.subscriptions++;
    if (old != NULL)
        *replaced = remove_sub(ps, old, NULL);
    pthread_mutex_unlock(&ps->lock);
    return 0;
}

void *up_pubsub_any_unsubscribe(up_pubsub_t *ps, up_conn_t *conn, const char *channel,
                                size_t len, int is_pattern, void *user, int *last)
{
    void *found = NULL;
    int unused;
    *last = 0;
    pthread_mutex_lock(&ps->lock);
    topic_t *t = find_topic(ps, channel, len, is_pattern, 0, &unused);
    sub_t *sub = t != NULL ? find_sub(t, conn, user) : NULL;
    if (sub != NULL)
        found = remove_sub(ps, sub, last);
    pthread_mutex_unlock(&ps->lock);
    return found;
}

void up_pubsub_any_stats(up_pubsub_t *ps, up_pubsub_stats_t *out)
{
    pthread_mutex_lock(&ps->lock);
    *out = ps->stats;
    pthread_mutex_unlock(&ps->lock);
}

/* Removes every subscription of t, and so t. Lock held (or no other thread left). */
static void drop_topic(up_pubsub_t *ps, topic_t *t)
{
    for (size_t n = t->num_subs; n > 0; n--)
        remove_sub(ps, t->subs, NULL); /* the last one frees t */
}

void up_pubsub_free(up_pubsub_t *ps)
{
    for (size_t i = 0; i < ps->num_buckets; i++) {
        while (ps->buckets[i] != NULL)
            drop_topic(ps, ps->buckets[i]);
    }
    while (ps->patterns != NULL)
        drop_topic(ps, ps->patterns);
    free(ps->buckets);
    if (ps->compressor_ready)
        up_ws_compressor_dispose(&ps->compressor);
    pthread_mutex_destroy(&ps->lock);
    free(ps);
}

/* ---------------------------------------------------------------- the fan-out */

/* The forms a message is sent in: the deliveries' three, and a WebSocket frame compressed
 * with permessage-deflate (RSV1) for subscribers that negotiated it. */
enum { FORM_WS_TEXT, FORM_WS_BINARY, FORM_SSE, FORM_WS_TEXT_Z, FORM_WS_BINARY_Z, FORMS };

typedef struct publish_t {
    up_task_t task; /* first: the server hands it back */
    up_pubsub_t *ps;
    up_shared_t message; /* the message bytes, after the channel's in the same block */
    size_t channel_len;
    char *channel;
    /* The encoded forms, made for the first subscriber that needs each. */
    up_shared_t *frames[FORMS];
    int compressed_useless; /* compressing the message does not pay: plain frames for all */
} publish_t;

/* A frame or event in one block of its own, shared by every subscriber that gets it. */
typedef struct encoded_t {
    up_shared_t shared;
    char bytes[];
} encoded_t;

static void free_encoded(up_shared_t *shared)
{
    free(shared);
}

/* A WebSocket frame of the message: header and payload in one block. */
static up_shared_t *ws_frame(int opcode, int rsv1, const char *payload, size_t len)
{
    uint8_t header[UP_WS_MAX_HEADER];
    size_t h = up_ws_frame_header(header, 1, rsv1, opcode, len);
    encoded_t *e = up_malloc(sizeof(*e) + h + len);
    memcpy(e->bytes, header, h);
    memcpy(e->bytes + h, payload, len);
    up_shared_init(&e->shared, e->bytes, h + len, free_encoded);
    return &e->shared;
}

/* An event stream's data event of the message, as up_sse_any_send makes them. */
static up_shared_t *sse_event(const char *msg, size_t len)
{
    size_t lines = 1, n = 0;
    for (size_t i = 0; i < len; i++)
        lines += msg[i] == '\n' || (msg[i] == '\r' && !(i + 1 < len && msg[i + 1] == '\n'));
    encoded_t *e = up_malloc(sizeof(*e) + len + lines * 7 + 1);
    const char *q = msg, *end = msg + len;
    for (;;) {
        const char *eol = q;
        while (eol < end && *eol != '\r' && *eol != '\n')
            eol++;
        memcpy(e->bytes + n, "data: ", 6);
        memcpy(e->bytes + n + 6, q, (size_t)(eol - q));
        n += 6 + (size_t)(eol - q);
        e->bytes[n++] = '\n';
        if (eol == end)
            break;
        if (*eol == '\r' && eol + 1 < end && eol[1] == '\n')
            eol++;
        q = eol + 1;
    }
    e->bytes[n++] = '\n';
    up_shared_init(&e->shared, e->bytes, n, free_encoded);
    return &e->shared;
}

/* The message compressed once (an empty window of 15 bits: every client that negotiated the
 * extension reads it), or NULL when that does not make it smaller. */
static up_shared_t *compressed_frame(publish_t *p, int opcode)
{
    up_pubsub_t *ps = p->ps;
    if (p->compressed_useless || p->message.len < UP_WS_DEFLATE_MIN_SIZE)
        return NULL;
    if (!ps->compressor_ready) {
        up_ws_compressor_init(&ps->compressor);
        ps->compressor_ready = 1;
    }
    up_buffer_t z = {0};
    up_ws_compress(&ps->compressor, 15, p->message.base, p->message.len, &z, &ps->server->pool);
    up_shared_t *frame = NULL;
    if (z.len < p->message.len)
        frame = ws_frame(opcode, 1, z.base, z.len);
    else
        p->compressed_useless = 1;
    up_buffer_release(&z, &ps->server->pool);
    return frame;
}

/* The frame for a subscriber: encoded at its first use, shared by every other. */
static up_shared_t *encode(publish_t *p, up_pubsub_delivery_t delivery, int deflate)
{
    int form = delivery == UP_PUBSUB_SSE       ? FORM_SSE
               : delivery == UP_PUBSUB_WS_TEXT ? FORM_WS_TEXT
                                               : FORM_WS_BINARY;
    if (form == FORM_WS_TEXT && !up_utf8_valid(p->message.base, p->message.len))
        form = FORM_WS_BINARY; /* see pubsub.h */
    if (deflate && form != FORM_SSE && !p->compressed_useless) {
        int zform = form == FORM_WS_TEXT ? FORM_WS_TEXT_Z : FORM_WS_BINARY_Z;
        if (p->frames[zform] == NULL)
            p->frames[zform] = compressed_frame(
                p, form == FORM_WS_TEXT ? UP_WS_OP_TEXT : UP_WS_OP_BINARY);
        if (p->frames[zform] != NULL)
            return p->frames[zform];
    }
    if (p->frames[form] == NULL)
        p->frames[form] = form == FORM_SSE ? sse_event(p->message.base, p->message.len)
                          : ws_frame(form == FORM_WS_TEXT ? UP_WS_OP_TEXT : UP_WS_OP_BINARY, 0,
                                     p->message.base, p->message.len);
    return p->frames[form];
}

/* A direct subscriber too far behind: closed the protocol's way behind what it has, never
 * written to again. Loop thread. */
static void close_slow(up_pubsub_t *ps, sub_t *sub)
{
    up_conn_t *conn = sub->conn;
    if (sub->delivery == UP_PUBSUB_SSE)
        up_sse_loop_close(conn);
    else
        up_ws_loop_close(conn, UP_WS_CLOSE_POLICY_VIOLATION, "subscriber too slow");
    up_conn_loop_defer_update(conn);
    ps->stats.slow_closed++;
    if (ps->callbacks.on_log != NULL) {
        char line[256];
        snprintf(line, sizeof(line),
                 "closed a subscriber from %s: more than %llu bytes behind on channel %.64s",
                 conn->remote_addr, (unsigned long long)ps->max_pending, sub->topic->name);
        ps->callbacks.on_log(ps->callbacks.data, line);
    }
}

static void deliver(publish_t *p, sub_t *sub)
{
    up_pubsub_t *ps = p->ps;
    ps->stats.delivered++;
    if (sub->delivery == UP_PUBSUB_CALLBACK) {
        ps->callbacks.on_message(sub->user, p->channel, p->channel_len, &p->message);
        return;
    }
    up_conn_t *conn = sub->conn;
    if (up_conn_any_state(conn) != UP_CONN_OPEN)
        return; /* closing or closed: its unsubscribe is on its way */
    up_shared_t *frame = encode(p, sub->delivery,
                                sub->delivery != UP_PUBSUB_SSE && up_ws_loop_takes_shared_deflate(conn));
    if (ps->max_pending > 0 && up_conn_any_backlog(conn) + frame->len > ps->max_pending) {
        /* Written once a wake-up, a burst of messages piles up in front of a fast client too:
         * what its socket takes now does not count against it. */
        up_conn_loop_update(conn);
        if (up_conn_any_state(conn) != UP_CONN_OPEN)
            return;
        if (up_conn_any_backlog(conn) + frame->len > ps->max_pending) {
            close_slow(ps, sub);
            return;
        }
    }
    up_conn_loop_queue_shared(conn, frame, 0, frame->len);
    up_conn_loop_defer_update(conn);
}

static void deliver_to(publish_t *p, topic_t *t)
{
    for (sub_t *s = t->subs; s != NULL; s = s->next_in_topic)
        deliver(p, s);
}

static void publish_run(up_context_t *server, up_task_t *task)
{
    publish_t *p = (publish_t *)task;
    up_pubsub_t *ps = p->ps;
    (void)server;
    pthread_mutex_lock(&ps->lock);
    ps->stats.published++;
    int unused;
    topic_t *t = find_topic(ps, p->channel, p->channel_len, 0, 0, &unused);
    if (t != NULL)
        deliver_to(p, t);
    for (topic_t *pat = ps->patterns; pat != NULL; pat = pat->next) {
        if (up_glob_match(pat->name, pat->len, p->channel, p->channel_len))
            deliver_to(p, pat);
    }
    pthread_mutex_unlock(&ps->lock);
    for (int i = 0; i < FORMS; i++) {
        if (p->frames[i] != NULL)
            up_shared_release(p->frames[i]);
    }
    up_shared_release(&p->message); /* frees p, unless a callback subscriber kept it */
}

static void free_publish(up_shared_t *message)
{
    free((char *)message - offsetof(publish_t, message));
}

void up_pubsub_any_publish(up_pubsub_t *ps, const char *channel, size_t channel_len,
                           const char *message, size_t message_len)
{
    publish_t *p = up_malloc(sizeof(*p) + channel_len + message_len);
    char *bytes = (char *)(p + 1);
    memcpy(bytes, channel, channel_len);
    memcpy(bytes + channel_len, message, message_len);
    p->task.run = publish_run;
    p->ps = ps;
    p->channel = bytes;
    p->channel_len = channel_len;
    memset(p->frames, 0, sizeof(p->frames));
    p->compressed_useless = 0;
    up_shared_init(&p->message, bytes + channel_len, message_len, free_publish);
    up_server_any_task(ps->server, &p->task);
}
