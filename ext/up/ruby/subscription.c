/* Pub/sub in the MRI binding (docs/websockets.md): Client#subscribe and
 * #unsubscribe, the server-wide subscriptions behind Up.subscribe, Up::Subscription, and the
 * local fan-out behind Up.publish (Up::Server#publish_local). Which engine a publish goes
 * through, and the cluster, are lib/up/pub_sub.rb's.
 *
 * A subscription without a block is the engine's alone (pubsub.h): the loop writes each message
 * to the client, with no Ruby. One with a block gets each message as an event on its client's
 * callbacks (client.c), so the block never runs beside that client's on_message; the server's
 * own subscriptions run on a client of the server's that has no connection. */

#include <ruby/encoding.h>
#include <stdlib.h>
#include <string.h>
#include "client.h"

static VALUE cSubscription, mPubSub, sym_glob, sym_binary, sym_text;
static ID id_call, id_interest_changes, id_interest_changed, id_match, id_as;

/* ---------------------------------------------------------------- Up::Subscription */

static void sub_mark(void *p)
{
    up_rb_sub_t *sub = p;
    rb_gc_mark(sub->block);
    rb_gc_mark(sub->channel);
    /* cancel reaches the client through it, however long the app keeps the subscription. */
    rb_gc_mark(sub->client->self);
}

static size_t sub_size(const void *p)
{
    (void)p;
    return sizeof(up_rb_sub_t);
}

/* Not movable: the engine and waiting events hold its address, and the block is read when an
 * event runs. */
static const rb_data_type_t sub_type = {
    .wrap_struct_name = "Up::Subscription",
    .function = {.dmark = sub_mark, .dfree = RUBY_TYPED_DEFAULT_FREE, .dsize = sub_size},
    .flags = RUBY_TYPED_FREE_IMMEDIATELY,
};

static up_rb_sub_t *get_sub(VALUE self)
{
    return rb_check_typeddata(self, &sub_type);
}

void up_rb_sub_mark_event(const event_t *ev)
{
    if (ev->sub != NULL)
        rb_gc_mark(ev->sub->self);
}

static VALUE new_sub(up_rb_client_t *client, VALUE channel, int is_pattern, VALUE block)
{
    up_rb_sub_t *sub;
    VALUE self = TypedData_Make_Struct(cSubscription, up_rb_sub_t, &sub_type, sub);
    sub->self = self;
    sub->block = block;
    sub->channel = channel;
    sub->is_pattern = is_pattern;
    sub->client = client;
    return self;
}

/* ---------------------------------------------------------------- the engine's side */

/* Loop thread, no GVL: the message becomes an event of the subscription's client. */
static void on_pubsub_message(void *user, const char *channel, size_t channel_len,
                              up_shared_t *message)
{
    up_rb_sub_t *sub = user;
    event_t *ev = calloc(1, sizeof(*ev));
    char *copy = malloc(channel_len + 1);
    if (ev == NULL || copy == NULL) {
        free(ev);
        free(copy);
        up_rb_on_log("out of memory for a pub/sub message; it is lost", sub->client->srv);
        return;
    }
    memcpy(copy, channel, channel_len);
    ev->kind = EV_PUBSUB;
    ev->sub = sub;
    ev->channel = copy;
    ev->channel_len = channel_len;
    up_shared_retain(message);
    ev->message = message;
    up_rb_client_push(sub->client, ev);
}

static void on_pubsub_log(void *data, const char *message)
{
    up_rb_on_log(message, data);
}

const up_pubsub_callbacks_t up_rb_pubsub_callbacks = {on_pubsub_message, on_pubsub_log, NULL};

typedef struct block_call_t {
    VALUE block, channel, message;
} block_call_t;

static VALUE call_block(VALUE arg)
{
    block_call_t *b = (block_call_t *)arg;
    return rb_funcall(b->block, id_call, 2, b->channel, b->message);
}

void up_rb_sub_run(up_rb_client_t *c, event_t *ev)
{
    up_rb_sub_t *sub = ev->sub;
    if (!sub->active)
        return; /* unsubscribed since: its later messages are not for it */
    block_call_t b = {sub->block, rb_utf8_str_new(ev->channel, (long)ev->channel_len),
                      rb_str_new(ev->message->base, (long)ev->message->len)};
    /* Text when it is UTF-8 (what a text frame carried), else bytes. */
    rb_enc_associate_index(b.message, rb_utf8_encindex());
    if (rb_enc_str_coderange(b.message) == ENC_CODERANGE_BROKEN)
        rb_enc_associate_index(b.message, rb_ascii8bit_encindex());
    int state = 0;
    rb_protect(call_block, (VALUE)&b, &state);
    if (state != 0) {
        VALUE err = rb_errinfo();
        rb_set_errinfo(Qnil);
        if (!rb_obj_is_kind_of(err, rb_eException))
            rb_jump_tag(state);
        if (c->srv != NULL)
            up_rb_report(c->srv, err, c->env);
    }
}

/* ---------------------------------------------------------------- subscribing */

/* This server's first subscription to (channel, is_pattern) came (on), or its last went: the
 * engines and the cluster's master hear of it (lib/up/pub_sub.rb), in two steps.
 *
 * note_interest runs right after the registry call, with the GVL held since, and before
 * anything that could run Ruby or check interrupts (a Hash keyed by an Array calls Array#hash,
 * after which MRI may switch threads): it appends the change to Up::PubSub's
 * @interest_changes in C, so that list's order is the registry's (the GVL orders every app
 * thread's registry calls). tell_interest then runs Ruby (interest_changed), where another
 * thread may run first: whichever thread tells the list tells it in order, so two threads
 * that end and make a channel's interest at once cannot reach the master in the opposite
 * order. */
static void note_interest(VALUE channel, int is_pattern, int on)
{
    VALUE changes = rb_ivar_get(mPubSub, id_interest_changes);
    if (RB_TYPE_P(changes, T_ARRAY)) /* else lib/up/pub_sub.rb is not loaded: tell_interest raises */
        rb_ary_push(changes, rb_ary_new_from_args(3, channel, is_pattern ? sym_glob : Qnil,
                                                  on ? Qtrue : Qfalse));
}

static void tell_interest(void)
{
    rb_funcall(mPubSub, id_interest_changed, 0);
}

static VALUE sub_key(VALUE channel, int is_pattern)
{
    return rb_assoc_new(channel, is_pattern ? Qtrue : Qfalse);
}

/* Takes sub out of the engine (and of its client's list); GVL. */
static void end_sub(up_rb_server_t *srv, up_rb_sub_t *sub)
{
    if (!sub->active || srv == NULL)
        return;
    if (srv->pubsub == NULL) { /* the server was collected: its registry went with it */
        sub->active = 0;
        return;
    }
    up_rb_client_t *c = sub->client;
    int last = 0;
    up_pubsub_any_unsubscribe(srv->pubsub, c->conn, RSTRING_PTR(sub->channel),
                              (size_t)RSTRING_LEN(sub->channel), sub->is_pattern, sub, &last);
    if (last)
        note_interest(sub->channel, sub->is_pattern, 0);
    sub->active = 0;
    if (!NIL_P(c->subscriptions))
        rb_hash_delete(c->subscriptions, sub_key(sub->channel, sub->is_pattern));
    if (last)
        tell_interest();
}

/* Subscribes client c (conn NULL for the server's own) and keeps the subscription. */
static VALUE subscribe(up_rb_client_t *c, VALUE channel, int is_pattern,
                       up_pubsub_delivery_t delivery, VALUE block)
{
    up_rb_server_t *srv = c->srv;
    channel = rb_str_new_frozen(StringValue(channel));
    VALUE self = new_sub(c, channel, is_pattern, block);
    up_rb_sub_t *sub = get_sub(self);
    void *replaced = NULL;
    int first = 0;
    if (up_pubsub_any_subscribe(srv->pubsub, c->conn, RSTRING_PTR(channel),
                                (size_t)RSTRING_LEN(channel), is_pattern, delivery, sub,
                                &replaced, &first) != 0)
        return Qnil;
    if (first)
        note_interest(channel, is_pattern, 1);
    sub->active = 1;
    if (replaced != NULL)
        ((up_rb_sub_t *)replaced)->active = 0;
    if (NIL_P(c->subscriptions))
        c->subscriptions = rb_hash_new();
    rb_hash_aset(c->subscriptions, sub_key(channel, is_pattern), self);
    if (first)
        tell_interest();
    return self;
}

static int unsubscribe_i(VALUE key, VALUE value, VALUE arg)
{
    (void)key;
    rb_ary_push(arg, value);
    return ST_CONTINUE;
}

void up_rb_client_unsubscribe_all(up_rb_client_t *c)
{
    if (NIL_P(c->subscriptions) || c->srv == NULL)
        return;
    VALUE subs = rb_ary_new();
    rb_hash_foreach(c->subscriptions, unsubscribe_i, subs);
    for (long i = 0; i < RARRAY_LEN(subs); i++)
        end_sub(c->srv, get_sub(RARRAY_AREF(subs, i)));
}

/* match: :glob, or the draft's is_pattern as the second positional argument. */
static int pattern_arg(VALUE positional, VALUE opts)
{
    VALUE match = NIL_P(opts) ? Qnil : rb_hash_lookup2(opts, ID2SYM(id_match), Qnil);
    if (!NIL_P(match) && match != sym_glob)
        rb_raise(rb_eArgError, "match: must be :glob or nil, not %+" PRIsVALUE, match);
    return match == sym_glob || RTEST(positional);
}

/* subscribe(channel, match: nil, as: :text) { |channel, message| ... } → an Up::Subscription,
 * or nil once the client is closed. */
static VALUE Client_subscribe(int argc, VALUE *argv, VALUE self)
{
    VALUE channel, positional, opts, block;
    rb_scan_args(argc, argv, "11:&", &channel, &positional, &opts, &block);
    int is_pattern = pattern_arg(positional, opts);
    VALUE as = NIL_P(opts) ? Qnil : rb_hash_lookup2(opts, ID2SYM(id_as), Qnil);
    if (!NIL_P(as) && as != sym_text && as != sym_binary)
        rb_raise(rb_eArgError, "as: must be :text or :binary, not %+" PRIsVALUE, as);
    up_rb_client_t *c = up_rb_client_get(self);
    if (c->closed || c->closing || c->srv == NULL || c->conn == NULL)
        return Qnil;
    up_pubsub_delivery_t delivery = !NIL_P(block)                      ? UP_PUBSUB_CALLBACK
                                    : c->protocol == UP_UPGRADE_SSE     ? UP_PUBSUB_SSE
                                    : as == sym_binary                  ? UP_PUBSUB_WS_BINARY
                                                                        : UP_PUBSUB_WS_TEXT;
    return subscribe(c, channel, is_pattern, delivery, block);
}

/* unsubscribe(channel, match: nil) → nil. */
static VALUE Client_unsubscribe(int argc, VALUE *argv, VALUE self)
{
    VALUE channel, positional, opts;
    rb_scan_args(argc, argv, "11:", &channel, &positional, &opts);
    up_rb_client_t *c = up_rb_client_get(self);
    if (NIL_P(c->subscriptions))
        return Qnil;
    VALUE key = sub_key(rb_str_new_frozen(StringValue(channel)), pattern_arg(positional, opts));
    VALUE sub = rb_hash_lookup2(c->subscriptions, key, Qnil);
    if (!NIL_P(sub))
        end_sub(c->srv, get_sub(sub));
    return Qnil;
}

/* Up::Subscription#cancel: ends it, whoever holds it. */
static VALUE Subscription_cancel(VALUE self)
{
    up_rb_sub_t *sub = get_sub(self);
    end_sub(sub->client->srv, sub);
    return Qnil;
}

static VALUE Subscription_channel(VALUE self)
{
    return get_sub(self)->channel;
}

static VALUE Subscription_pattern_p(VALUE self)
{
    return get_sub(self)->is_pattern ? Qtrue : Qfalse;
}

static VALUE Subscription_active_p(VALUE self)
{
    return get_sub(self)->active ? Qtrue : Qfalse;
}

/* ---------------------------------------------------------------- the server's side */

/* Up::Server#subscribe(channel, pattern) { |channel, message| }: a subscription of the
 * server's own (Up.subscribe). */
static VALUE Server_subscribe(VALUE self, VALUE channel, VALUE pattern)
{
    rb_need_block();
    up_rb_server_t *srv = up_rb_server_get(self);
    return subscribe(up_rb_server_client(srv), channel, RTEST(pattern), UP_PUBSUB_CALLBACK,
                     rb_block_proc());
}

/* Up::Server#publish_local(channel, message): to this server's subscribers only. */
static VALUE Server_publish_local(VALUE self, VALUE channel, VALUE message)
{
    up_rb_server_t *srv = up_rb_server_get(self);
    StringValue(channel);
    StringValue(message);
    up_pubsub_any_publish(srv->pubsub, RSTRING_PTR(channel), (size_t)RSTRING_LEN(channel),
                          RSTRING_PTR(message), (size_t)RSTRING_LEN(message));
    return Qtrue;
}

static VALUE Server_pubsub_stats(VALUE self)
{
    up_pubsub_stats_t st;
    up_pubsub_any_stats(up_rb_server_get(self)->pubsub, &st);
    VALUE h = rb_hash_new();
    rb_hash_aset(h, ID2SYM(rb_intern("subscriptions")), ULL2NUM(st.subscriptions));
    rb_hash_aset(h, ID2SYM(rb_intern("published")), ULL2NUM(st.published));
    rb_hash_aset(h, ID2SYM(rb_intern("delivered")), ULL2NUM(st.delivered));
    rb_hash_aset(h, ID2SYM(rb_intern("slow_closed")), ULL2NUM(st.slow_closed));
    return h;
}

/* ---------------------------------------------------------------- setup */

void up_rb_init_subscription(VALUE mUp, VALUE cClient)
{
    VALUE cServer = rb_const_get(mUp, rb_intern("Server"));
    rb_define_method(cServer, "subscribe", Server_subscribe, 2);
    rb_define_method(cServer, "publish_local", Server_publish_local, 2);
    rb_define_method(cServer, "pubsub_stats", Server_pubsub_stats, 0);
    cSubscription = rb_define_class_under(mUp, "Subscription", rb_cObject);
    rb_undef_alloc_func(cSubscription);
    rb_define_method(cSubscription, "cancel", Subscription_cancel, 0);
    rb_define_method(cSubscription, "channel", Subscription_channel, 0);
    rb_define_method(cSubscription, "pattern?", Subscription_pattern_p, 0);
    rb_define_method(cSubscription, "active?", Subscription_active_p, 0);
    rb_define_method(cClient, "subscribe", Client_subscribe, -1);
    rb_define_method(cClient, "unsubscribe", Client_unsubscribe, -1);
    mPubSub = rb_define_module_under(mUp, "PubSub");
    sym_glob = ID2SYM(rb_intern("glob"));
    sym_text = ID2SYM(rb_intern("text"));
    sym_binary = ID2SYM(rb_intern("binary"));
    id_call = rb_intern("call");
    id_interest_changes = rb_intern("@interest_changes");
    id_interest_changed = rb_intern("interest_changed");
    id_match = rb_intern("match");
    id_as = rb_intern("as");
}
