/* Up::Server, the Ruby face of one engine server: options in, listen, run (the loop, on the
 * calling thread), stop (from any thread or a trap handler). The GVL is released only while
 * the loop waits for events; callbacks run with it held. */

#include <math.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <string.h>
#include <time.h>
#include <ruby/version.h>
#include "client.h"
#include "handlers/static_file.h"
#include "http2/http2.h"
#include "transport/tls.h"

static VALUE cServer, eListenError;

static void server_mark(void *p)
{
    up_rb_server_t *srv = p;
    rb_gc_mark_movable(srv->app);
    rb_gc_mark_movable(srv->env_template);
    rb_gc_mark_movable(srv->env_template_tls);
    rb_gc_mark_movable(srv->env_template_h2c);
    rb_gc_mark_movable(srv->empty_input);
    rb_gc_mark_movable(srv->threads);
    rb_gc_mark_movable(srv->server_client);
    up_rb_mark_shared_strings(srv);
    up_rb_clients_mark(srv);
}

static void server_compact(void *p)
{
    up_rb_server_t *srv = p;
    srv->app = rb_gc_location(srv->app);
    srv->env_template = rb_gc_location(srv->env_template);
    srv->env_template_tls = rb_gc_location(srv->env_template_tls);
    srv->env_template_h2c = rb_gc_location(srv->env_template_h2c);
    srv->empty_input = rb_gc_location(srv->empty_input);
    srv->threads = rb_gc_location(srv->threads);
    srv->server_client = rb_gc_location(srv->server_client);
}

void up_rb_server_retain(up_rb_server_t *srv)
{
    srv->refs++;
}

/* The last reference: what the engine teardown left (locks a client may still take). */
void up_rb_server_release(up_rb_server_t *srv)
{
    if (--srv->refs > 0)
        return;
    pthread_mutex_destroy(&srv->queue_lock);
    pthread_cond_destroy(&srv->queue_cond);
    pthread_cond_destroy(&srv->watchdog_cond);
    pthread_cond_destroy(&srv->io_thread_cond);
    pthread_mutex_destroy(&srv->loop_lock);
    pthread_mutex_destroy(&srv->pin_lock);
    up_access_log_destroy(&srv->access_log);
    pthread_mutex_destroy(&srv->log_queue.lock);
    xfree(srv);
}

/* The Ruby object is collected: the engine goes now (no client can reach it: live_conn and
 * end_sub check for that), the struct when its last client goes. */
static void server_free(void *p)
{
    up_rb_server_t *srv = p;
    up_rb_clients_detach(srv);
    if (srv->server != NULL)
        up_server_free(srv->server);
    srv->server = NULL;
    /* Runs the close callbacks up_server_free left, the last of which frees the server. */
    if (srv->loop != NULL)
        up_loop_free(srv->loop);
    srv->loop = NULL;
    up_static_free(srv->static_files); /* after the server: nothing asks it any more */
    srv->static_files = NULL;
    /* After the loop: its last references to connections went with it. */
    if (srv->pubsub != NULL)
        up_pubsub_free(srv->pubsub);
    srv->pubsub = NULL;
    up_ws_compressors_free(srv->ws_settings.compressors);
    srv->ws_settings.compressors = NULL;
    if (srv->main_wake_fd >= 0)
        close(srv->main_wake_fd);
    srv->main_wake_fd = -1;
    up_access_log_close(&srv->access_log);
    up_rb_server_release(srv);
}

static size_t server_size(const void *p)
{
    (void)p;
    return sizeof(up_rb_server_t);
}

static const rb_data_type_t server_type = {
    .wrap_struct_name = "Up::Server",
    .function = {.dmark = server_mark, .dfree = server_free, .dsize = server_size, .dcompact = server_compact},
    .flags = RUBY_TYPED_FREE_IMMEDIATELY,
};

static VALUE Server_alloc(VALUE klass)
{
    up_rb_server_t *srv;
    VALUE obj = TypedData_Make_Struct(klass, up_rb_server_t, &server_type, srv);
    srv->self = obj;
    srv->refs = 1;
    srv->app = srv->env_template = srv->env_template_tls = srv->env_template_h2c = Qnil;
    srv->empty_input = srv->threads = srv->server_client = Qnil;
    pthread_mutex_init(&srv->queue_lock, NULL);
    pthread_cond_init(&srv->queue_cond, NULL);
    pthread_cond_init(&srv->watchdog_cond, NULL);
    pthread_cond_init(&srv->io_thread_cond, NULL);
    up_rb_placement_init(&srv->placement);
    srv->main_wake_fd = -1;
    pthread_mutex_init(&srv->loop_lock, NULL);
    pthread_mutex_init(&srv->pin_lock, NULL);
    up_access_log_init(&srv->access_log);
    pthread_mutex_init(&srv->log_queue.lock, NULL);
    return obj;
}

static up_rb_server_t *get(VALUE self)
{
    return rb_check_typeddata(self, &server_type);
}

up_rb_server_t *up_rb_server_get(VALUE self)
{
    return get(self);
}

/* ---------------------------------------------------------------- engine callbacks */

/* Every request goes to the app threads' queue (thread_pool.c); the thread that ran this
 * turn is usually the one that takes it. */
static up_request_result_t on_request(up_exchange_t *ex, void *user)
{
    up_rb_pool_push(user, up_rb_job_of_exchange(ex));
    return UP_REQUEST_DEFERRED;
}

/* ---------------------------------------------------------------- options */

static VALUE opt(VALUE options, const char *name)
{
    return rb_hash_lookup2(options, ID2SYM(rb_intern(name)), Qnil);
}

/* Whether Ruby runs its threads M:N on fewer native threads: since 3.3, on the main Ractor only
 * when RUBY_MN_THREADS=1 is set at boot. */
static int mn_threads(void)
{
#if RUBY_API_VERSION_CODE >= 30300
    const char *mn = getenv("RUBY_MN_THREADS");
    return mn != NULL && strcmp(mn, "1") == 0;
#else
    return 0;
#endif
}

static uint64_t opt_u64(VALUE options, const char *name, uint64_t fallback)
{
    VALUE v = opt(options, name);
    if (NIL_P(v))
        return fallback;
    long long n = NUM2LL(v);
    if (n < 0)
        rb_raise(rb_eArgError, "%s must not be negative", name);
    return (uint64_t)n;
}

/* Timeouts are given in seconds (Float allowed) and kept in milliseconds. */
static unsigned opt_ms(VALUE options, const char *name, unsigned fallback)
{
    VALUE v = opt(options, name);
    if (NIL_P(v))
        return fallback;
    double s = NUM2DBL(v);
    if (!(s > 0 && s <= 86400))
        rb_raise(rb_eArgError, "%s must be between 0 and 86400 seconds", name);
    /* Up, so that a timeout above 0 never becomes 0 ms (an immediate 408). */
    return (unsigned)ceil(s * 1000);
}

/* The same where 0 means "never" (a ping, a heartbeat). */
static unsigned opt_ms_or_never(VALUE options, const char *name, unsigned fallback)
{
    VALUE v = opt(options, name);
    if (!NIL_P(v) && NUM2DBL(v) == 0)
        return 0;
    return opt_ms(options, name, fallback);
}

/* Server.new(app, threads: 5, max_head_size: ..., errors: io, ...) */
static VALUE Server_initialize(VALUE self, VALUE app, VALUE options)
{
    up_rb_server_t *srv = get(self);
    up_server_config_t *cfg = &srv->config;
    Check_Type(options, T_HASH);
    if (srv->loop != NULL)
        rb_raise(rb_eRuntimeError, "the server is already initialized");
    up_server_config_defaults(cfg);
    srv->app = app;
    /* 0 was "inline": the app called by the thread that runs the loop. One app thread is
     * exactly that now (it runs the loop between app calls), so 0 means 1. */
    srv->num_threads = (int)opt_u64(options, "threads", 1);
    if (srv->num_threads > 1024)
        rb_raise(rb_eArgError, "threads must be at most 1024");
    if (srv->num_threads == 0)
        srv->num_threads = 1;
    cfg->max_head_size = opt_u64(options, "max_head_size", cfg->max_head_size);
    cfg->max_headers = opt_u64(options, "max_headers", cfg->max_headers);
    cfg->max_body_size = opt_u64(options, "max_body_size", cfg->max_body_size);
    cfg->spool_threshold = opt_u64(options, "spool_threshold", cfg->spool_threshold);
    cfg->max_pipeline = (unsigned)opt_u64(options, "max_pipeline", cfg->max_pipeline);
    cfg->head_timeout_ms = opt_ms(options, "head_timeout", cfg->head_timeout_ms);
    cfg->body_timeout_ms = opt_ms(options, "body_timeout", cfg->body_timeout_ms);
    cfg->keepalive_timeout_ms = opt_ms(options, "keepalive_timeout", cfg->keepalive_timeout_ms);
    cfg->write_timeout_ms = opt_ms(options, "write_timeout", cfg->write_timeout_ms);
    srv->shutdown_timeout_ms = opt_ms(options, "shutdown_timeout", 30000);
    if (cfg->max_headers > UP_MAX_HEADERS_LIMIT)
        rb_raise(rb_eArgError, "max_headers must be at most %d", UP_MAX_HEADERS_LIMIT);
    if (cfg->max_head_size > UP_MAX_HEAD_SIZE_LIMIT)
        rb_raise(rb_eArgError, "max_head_size must be at most %d", UP_MAX_HEAD_SIZE_LIMIT);
    if (cfg->max_head_size < 256 || cfg->max_headers < 1 || cfg->max_pipeline < 1)
        rb_raise(rb_eArgError, "max_head_size, max_headers and max_pipeline are too small");
    VALUE tmp = opt(options, "tmp_dir");
    if (!NIL_P(tmp)) {
        const char *dir = StringValueCStr(tmp);
        if (strlen(dir) >= sizeof(cfg->tmp_dir))
            rb_raise(rb_eArgError, "tmp_dir is too long");
        strcpy(cfg->tmp_dir, dir);
    }
    rb_iv_set(self, "@multiprocess", RTEST(opt(options, "multiprocess")) ? Qtrue : Qfalse);
    cfg->exclusive_accept = RTEST(opt(options, "exclusive_accept"));
    VALUE early_hints = opt(options, "early_hints");
    srv->early_hints = NIL_P(early_hints) || RTEST(early_hints);
    VALUE http2 = opt(options, "http2");
    srv->http2 = (NIL_P(http2) || RTEST(http2)) && up_http2_available();
    srv->ws_settings.max_message = opt_u64(options, "max_msg", UP_WS_DEFAULT_MAX_MESSAGE);
    srv->ws_settings.ping_ms = opt_ms_or_never(options, "ws_ping", UP_WS_DEFAULT_PING_MS);
    if (RTEST(opt(options, "ws_deflate")))
        srv->ws_settings.compressors = up_ws_compressors_new();
    srv->sse_heartbeat_ms =
        opt_ms_or_never(options, "sse_heartbeat", UP_SSE_DEFAULT_HEARTBEAT_MS);
    /* Where the loop runs (docs/configuration.md, Threads): io_thread true forces a native
     * thread of its own, false the app threads' turns, nil lets the worker choose by
     * measurement (placement.c). */
    VALUE io_thread = opt(options, "io_thread");
    srv->loop_policy = NIL_P(io_thread) ? UP_RB_LOOP_AUTO
                       : RTEST(io_thread) ? UP_RB_LOOP_THREAD
                                          : UP_RB_LOOP_TURNS;
    /* thread_looks: false is what M:N threads get, for the tests of that way. */
    VALUE looks = opt(options, "thread_looks");
    srv->thread_looks = (NIL_P(looks) || RTEST(looks)) && !mn_threads();
    /* rack.errors: the server log's IO (Up::Log#io) when given; reopening the log on HUP
     * reopens that same object, so the env template keeps pointing at the right file. */
    VALUE errors = opt(options, "errors");
    rb_iv_set(self, "@errors", NIL_P(errors) ? rb_gv_get("$stderr") : errors);

    srv->metrics.enabled = RTEST(opt(options, "metrics"));
    VALUE access_log = opt(options, "access_log");
    if (!NIL_P(access_log) && up_access_log_open(&srv->access_log, StringValueCStr(access_log)) != 0)
        rb_sys_fail(StringValueCStr(access_log));
    srv->loop = up_loop_new();
    if (srv->loop == NULL)
        rb_sys_fail("creating the event loop");
    srv->main_wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (srv->main_wake_fd < 0)
        rb_sys_fail("creating an eventfd");
    /* static: files the engine answers before the app (static.c), built before the server
     * so that a bad value raises with nothing to undo but the loop. */
    VALUE static_config = opt(options, "static");
    if (!NIL_P(static_config))
        srv->static_files = up_rb_static_new(static_config);
    up_server_handler_t handler = {on_request, up_rb_on_log, srv, up_rb_on_served};
    srv->server = up_server_new(srv->loop, cfg, &handler);
    if (srv->static_files != NULL)
        up_static_install(srv->static_files, srv->server);
    up_pubsub_callbacks_t pubsub_callbacks = up_rb_pubsub_callbacks;
    pubsub_callbacks.data = srv;
    srv->pubsub = up_pubsub_new(srv->server, opt_u64(options, "ws_max_pending", 4 << 20),
                                &pubsub_callbacks);
    srv->env_template = up_rb_env_template(srv, &up_transport_tcp, 1);
    srv->env_template_tls = up_rb_env_template(srv, &up_transport_tls, 1);
    srv->env_template_h2c = up_rb_env_template(srv, &up_transport_tcp, 0);
    srv->empty_input = up_rb_input_empty();
    return self;
}

/* The transport and context of a listener: TLS with an Up::TLSContext, else plain TCP. */
static const up_transport_t *transport_of(VALUE tls, void **ctx)
{
    *ctx = NIL_P(tls) ? NULL : up_rb_tls_context_get(tls);
    return NIL_P(tls) ? &up_transport_tcp : &up_transport_tls;
}

/* What the server's listeners speak. */
static const up_protocol_t *protocol_of(const up_rb_server_t *srv)
{
#ifdef UP_HAVE_NGHTTP2
    if (srv->http2)
        return &up_http2_negotiate_protocol;
#else
    (void)srv;
#endif
    return &up_http1_protocol;
}

/* listen(host, port, tls = nil): binds every address host names, serving TLS with an
 * Up::TLSContext; raises Up::ListenError. */
static VALUE Server_listen(int argc, VALUE *argv, VALUE self)
{
    VALUE host, port, tls;
    rb_scan_args(argc, argv, "21", &host, &port, &tls);
    up_rb_server_t *srv = get(self);
    const char *err = NULL;
    VALUE port_str = rb_obj_as_string(port);
    const char *h = NIL_P(host) ? NULL : StringValueCStr(host);
    void *ctx;
    const up_transport_t *transport = transport_of(tls, &ctx);
    if (up_server_listen_with(srv->server, h, StringValueCStr(port_str), transport, ctx,
                              protocol_of(srv), &err) != 0)
        rb_raise(eListenError, "cannot listen on %s:%s: %s", h ? h : "*",
                 StringValueCStr(port_str), err ? err : "no address");
    return self;
}

/* listen_fd(fd, tls = nil): serves on an inherited listening socket, TLS with an
 * Up::TLSContext. */
static VALUE Server_listen_fd(int argc, VALUE *argv, VALUE self)
{
    VALUE fd, tls;
    rb_scan_args(argc, argv, "11", &fd, &tls);
    const char *err = NULL;
    void *ctx;
    const up_transport_t *transport = transport_of(tls, &ctx);
    if (up_server_adopt_listener_with(get(self)->server, NUM2INT(fd), transport, ctx,
                                      protocol_of(get(self)), &err) != 0)
        rb_raise(eListenError, "cannot serve on fd %d: %s", NUM2INT(fd), err);
    return self;
}

/* replace_tls(old, new): the listeners serving the Up::TLSContext old serve new from their next
 * connection on (new certificates); connections open go on with old. Any thread. */
static VALUE Server_replace_tls(VALUE self, VALUE old_tls, VALUE new_tls)
{
    up_server_any_replace_context(get(self)->server, &up_transport_tls,
                                  up_rb_tls_context_get(old_tls), up_rb_tls_context_get(new_tls));
    return self;
}

/* The addresses served, as [[host, port], ...]; port 0 asked for is the real one here. */
static VALUE Server_addresses(VALUE self)
{
    VALUE list = rb_ary_new();
    for (up_listener_t *l = get(self)->server->listeners; l != NULL; l = l->next)
        rb_ary_push(list, rb_assoc_new(rb_str_new_cstr(l->host), INT2NUM(atoi(l->port))));
    return list;
}

/* ---------------------------------------------------------------- running */

static VALUE run_threads(VALUE arg)
{
    up_rb_server_t *srv = (up_rb_server_t *)arg;
    /* Up.publish and Up.subscribe reach the servers this process runs (lib/up/pub_sub.rb). */
    rb_funcall(rb_path2class("Up::PubSub"), rb_intern("server_started"), 1, srv->self);
    up_rb_pool_run(srv);
    return Qnil;
}

static VALUE run_done(VALUE arg)
{
    up_rb_server_t *srv = (up_rb_server_t *)arg;
    srv->running = 0;
    rb_funcall(rb_path2class("Up::PubSub"), rb_intern("server_stopped"), 1, srv->self);
    return Qnil;
}

/* run: serves until stop is called (also before run: a stop is never lost); in-flight
 * requests finish within shutdown_timeout, one deadline for the whole stop. */
static VALUE Server_run(VALUE self)
{
    up_rb_server_t *srv = get(self);
    if (srv->running || srv->finished)
        rb_raise(rb_eRuntimeError, "the server is running or has run");
    srv->running = 1;
    rb_ensure(run_threads, (VALUE)srv, run_done, (VALUE)srv);
    return self;
}

/* stop(timeout = shutdown_timeout): graceful; requests still in flight after timeout seconds
 * are cut off (stop(0): at once, for QUIT). A later call can only bring the deadline nearer.
 * Safe from any thread and from a trap block. */
static VALUE Server_stop(int argc, VALUE *argv, VALUE self)
{
    up_rb_server_t *srv = get(self);
    VALUE timeout;
    rb_scan_args(argc, argv, "01", &timeout);
    uint64_t ms = srv->shutdown_timeout_ms;
    if (!NIL_P(timeout)) {
        double s = NUM2DBL(timeout);
        if (!(s >= 0 && s <= 86400))
            rb_raise(rb_eArgError, "stop timeout must be between 0 and 86400 seconds");
        ms = (uint64_t)ceil(s * 1000);
    }
    up_rb_request_stop(srv, ms);
    return self;
}

void up_rb_request_stop(up_rb_server_t *srv, uint64_t ms)
{
    uint64_t deadline = up_rb_now_ns() + ms * 1000000ull;
    /* Set before the flag: a turn that sees the flag reads this deadline. */
    if (!atomic_load(&srv->stop_requested) || deadline < atomic_load(&srv->deadline_ns)) {
        atomic_store(&srv->deadline_ns, deadline);
        atomic_store(&srv->stop_requested, 1);
    }
    up_loop_wake(srv->loop);
    up_rb_pool_wake_main(srv);
}

/* stats: what this server is doing now, for the master's control endpoint:
 * { requests: finished since start, connections: open, backlog: requests waiting for a thread,
 *   busy: threads in a request, threads: app threads, awake: threads not asleep waiting to be
 *   woken, promotions and demotions: how often the watchdog woke a thread and sent one back
 *   to sleep, loop_takeovers: how often the watchdog ran the loop while every app thread was
 *   in the app (watchdog.c), loop_mode: "app_threads" or "io_thread" (where the loop runs now),
 *   loop_switches: how often it moved, app_cpu_share: the CPU time over the wall time of the
 *   app calls last measured, nil before (placement.c), websockets and event_streams: open now, messages_in: WebSocket
 *   messages received, messages_out: messages written (client writes and pub/sub
 *   deliveries), subscriptions: now, published: messages fanned out here,
 *   slow_subscribers_closed: subscribers closed for falling --ws-max-pending behind,
 *   static_files: requests the engine answered from files (counted in requests too), and with
 *   the metrics option statuses, duration_bounds, duration_buckets, duration_sum (metrics.c) }.
 *   Any thread. */
static VALUE Server_stats(VALUE self)
{
    up_rb_server_t *srv = get(self);
    pthread_mutex_lock(&srv->queue_lock);
    int backlog = srv->queue_len, busy = srv->in_app;
    int awake = srv->running ? up_rb_awake_threads(srv) : 0;
    unsigned long promotions = srv->promotions, demotions = srv->demotions;
    unsigned long sittings = srv->sittings;
    pthread_mutex_unlock(&srv->queue_lock);
    VALUE h = rb_hash_new();
    rb_hash_aset(h, ID2SYM(rb_intern("requests")),
                 ULONG2NUM(atomic_load(&srv->completed) + atomic_load(&srv->static_served)));
    rb_hash_aset(h, ID2SYM(rb_intern("static_files")), ULONG2NUM(atomic_load(&srv->static_served)));
    rb_hash_aset(h, ID2SYM(rb_intern("connections")), SIZET2NUM(up_server_num_conns(srv->server)));
    rb_hash_aset(h, ID2SYM(rb_intern("backlog")), INT2NUM(backlog));
    rb_hash_aset(h, ID2SYM(rb_intern("busy")), INT2NUM(busy));
    rb_hash_aset(h, ID2SYM(rb_intern("threads")), INT2NUM(srv->num_threads));
    rb_hash_aset(h, ID2SYM(rb_intern("awake")), INT2NUM(awake));
    rb_hash_aset(h, ID2SYM(rb_intern("promotions")), ULONG2NUM(promotions));
    rb_hash_aset(h, ID2SYM(rb_intern("demotions")), ULONG2NUM(demotions));
    rb_hash_aset(h, ID2SYM(rb_intern("loop_takeovers")), ULONG2NUM(sittings));
    up_pubsub_stats_t ps;
    up_pubsub_any_stats(srv->pubsub, &ps);
    rb_hash_aset(h, ID2SYM(rb_intern("websockets")), LONG2NUM(atomic_load(&srv->websockets_open)));
    rb_hash_aset(h, ID2SYM(rb_intern("event_streams")), LONG2NUM(atomic_load(&srv->sse_open)));
    rb_hash_aset(h, ID2SYM(rb_intern("messages_in")), LONG2NUM(atomic_load(&srv->messages_in)));
    rb_hash_aset(h, ID2SYM(rb_intern("messages_out")),
                 ULL2NUM((unsigned long long)atomic_load(&srv->messages_out) + ps.delivered));
    rb_hash_aset(h, ID2SYM(rb_intern("subscriptions")), ULL2NUM(ps.subscriptions));
    rb_hash_aset(h, ID2SYM(rb_intern("published")), ULL2NUM(ps.published));
    rb_hash_aset(h, ID2SYM(rb_intern("slow_subscribers_closed")), ULL2NUM(ps.slow_closed));
    up_rb_placement_add_stats(srv, h);
    up_rb_metrics_add_stats(&srv->metrics, h);
    return h;
}

/* reopen_access_log: after a log rotation (HUP). */
static VALUE Server_reopen_access_log(VALUE self)
{
    up_access_log_reopen(&get(self)->access_log);
    return self;
}

static VALUE Server_running_p(VALUE self)
{
    return get(self)->running ? Qtrue : Qfalse;
}

static VALUE Server_threads(VALUE self)
{
    return INT2NUM(get(self)->num_threads);
}

void up_rb_init_server(VALUE mUp)
{
    cServer = rb_define_class_under(mUp, "Server", rb_cObject);
    /* Whether this build speaks HTTP/2 (the engine was built with libnghttp2). */
    rb_define_const(cServer, "HTTP2", up_http2_available() ? Qtrue : Qfalse);
    eListenError = rb_define_class_under(mUp, "ListenError", rb_eStandardError);
    rb_define_alloc_func(cServer, Server_alloc);
    rb_define_method(cServer, "initialize", Server_initialize, 2);
    rb_define_method(cServer, "listen", Server_listen, -1);
    rb_define_method(cServer, "listen_fd", Server_listen_fd, -1);
    rb_define_method(cServer, "replace_tls", Server_replace_tls, 2);
    rb_define_method(cServer, "addresses", Server_addresses, 0);
    rb_define_method(cServer, "run", Server_run, 0);
    rb_define_method(cServer, "stop", Server_stop, -1);
    rb_define_method(cServer, "running?", Server_running_p, 0);
    rb_define_method(cServer, "reopen_access_log", Server_reopen_access_log, 0);
    rb_define_method(cServer, "stats", Server_stats, 0);
    rb_define_method(cServer, "threads", Server_threads, 0);
}
