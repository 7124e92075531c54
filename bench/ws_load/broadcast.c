#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "histogram.h"
#include "message.h"
#include "modes.h"
#include "report.h"

/* Broadcast: connections 0 to N-1 subscribe (the app subscribes each to one channel when it
 * opens), connection N publishes (the app publishes each message it gets to that channel).
 *
 * First the subscriptions are checked end to end: the publisher sends probes, one every
 * PROBE_EVERY, until every subscriber has received one, because a server may subscribe a
 * connection some time after its handshake. Then the measured period: the publisher keeps
 * `window` messages in flight, a message being in flight from its send until every
 * subscriber has received it, so it publishes as fast as delivery allows without queueing
 * without bound in the server. Each subscriber checks that it gets every message once, in
 * order: `seq` is the next it expects and `early` has a bit for each later one already
 * received (bit 0 is seq itself). After the period, the messages in flight get DRAIN to
 * arrive; what never arrives is lost. */

#define PROBE_EVERY 100000000ull /* ns */
#define DRAIN 5000000000ull      /* ns */

typedef enum { PROBING, MEASURING, DRAINING } phase_t;

typedef struct {
    uint8_t *msg;
    phase_t phase;
    wsl_conn_t *publisher;
    unsigned subscribers;
    unsigned ready; /* subscribers that received a probe and are open */
    uint64_t start, end;
    uint64_t published;                 /* messages 0 to published - 1 were sent */
    uint64_t oldest;                    /* the oldest message some subscriber still waits for */
    unsigned remaining[WSL_MAX_WINDOW]; /* receipts still due, by seq % window */
    uint64_t deliveries;                /* receipts within the measured period */
    uint64_t received;                  /* every first receipt */
    uint64_t duplicates;
    uint64_t out_of_order;
    wsl_histogram_t latency;
} broadcast_t;

static void advance(wsl_run_t *run)
{
    broadcast_t *b = run->mode;
    unsigned window = run->opt->window;
    while (b->oldest < b->published && b->remaining[b->oldest % window] == 0)
        b->oldest++;
}

static void publish_more(wsl_run_t *run)
{
    broadcast_t *b = run->mode;
    const wsl_options_t *opt = run->opt;
    while (b->phase == MEASURING && b->published - b->oldest < opt->window && b->ready > 0 &&
           b->publisher->state == WSL_CONN_OPEN && wsl_now() < b->end) {
        uint64_t seq = b->published++;
        b->remaining[seq % opt->window] = b->ready;
        wsl_message_write(b->msg, opt->size, seq, wsl_now());
        wsl_conn_send(run, b->publisher, WSL_OP_TEXT, b->msg, opt->size);
    }
}

static void probe(wsl_run_t *run)
{
    broadcast_t *b = run->mode;
    wsl_message_write_probe(b->msg, run->opt->size);
    wsl_conn_send(run, b->publisher, WSL_OP_TEXT, b->msg, run->opt->size);
}

static void on_data(wsl_run_t *run, wsl_conn_t *c, uint64_t offset, const uint8_t *data, size_t len)
{
    if (offset == 0)
        c->bad = false;
    if (offset < WSL_MESSAGE_HEAD) {
        size_t n = WSL_MESSAGE_HEAD - offset < len ? WSL_MESSAGE_HEAD - offset : len;
        memcpy(c->head + offset, data, n);
    }
    if (!wsl_message_matches_tail(run->opt->size, offset, data, len))
        c->bad = true;
}

/* A first receipt of seq by some subscriber, at run->now. */
static void delivered(wsl_run_t *run, uint64_t seq, uint64_t sent_ns)
{
    broadcast_t *b = run->mode;
    b->received++;
    b->remaining[seq % run->opt->window]--;
    if (run->now <= b->end) {
        b->deliveries++;
        wsl_histogram_add(&b->latency, run->now > sent_ns ? run->now - sent_ns : 0);
    }
    advance(run);
    publish_more(run);
}

static void on_message(wsl_run_t *run, wsl_conn_t *c, uint8_t opcode, uint64_t len)
{
    broadcast_t *b = run->mode;
    uint64_t seq, sent_ns;
    if (c == b->publisher) {
        wsl_run_error(run, WSL_ERR_MISMATCH, "the publisher received a message");
        return;
    }
    if (opcode != WSL_OP_TEXT || len != run->opt->size || c->bad) {
        wsl_run_error(run, WSL_ERR_MISMATCH,
                      "a subscriber received a wrong message: opcode %u, "
                      "%llu bytes (sent %u)",
                      opcode, (unsigned long long)len, run->opt->size);
        return;
    }
    if (wsl_message_is_probe(c->head, WSL_MESSAGE_HEAD)) {
        if (!c->ready && b->phase == PROBING) {
            c->ready = true;
            b->ready++;
        }
        return;
    }
    if (!c->ready || !wsl_message_parse(c->head, &seq, &sent_ns) || seq >= b->published) {
        wsl_run_error(run, WSL_ERR_MISMATCH, "a subscriber received a message never published");
        return;
    }
    if (seq < c->seq) {
        b->duplicates++;
        return;
    }
    uint64_t ahead = seq - c->seq; /* below the window: c->seq >= oldest */
    if (ahead >= 64 || (c->early >> ahead & 1)) {
        if (ahead >= 64)
            wsl_run_error(run, WSL_ERR_MISMATCH, "message %llu arrived %llu ahead",
                          (unsigned long long)seq, (unsigned long long)ahead);
        else
            b->duplicates++;
        return;
    }
    if (ahead > 0)
        b->out_of_order++;
    c->early |= 1ull << ahead;
    while (c->early & 1) {
        c->early >>= 1;
        c->seq++;
    }
    delivered(run, seq, sent_ns);
}

/* A subscriber that closes owes nothing more: what it had not received stops holding up the
 * window (it counts as lost at the end). */
static void on_close(wsl_run_t *run, wsl_conn_t *c)
{
    broadcast_t *b = run->mode;
    if (c == b->publisher || !c->ready)
        return;
    b->ready--;
    for (uint64_t s = c->seq; s < b->published; s++)
        if (!(c->early >> (s - c->seq) & 1))
            b->remaining[s % run->opt->window]--;
    advance(run);
    publish_more(run);
}

static const wsl_mode_ops_t OPS = {
    .on_data = on_data, .on_message = on_message, .on_close = on_close};

/* Probes until every open subscriber has received one; false if that takes past deadline or
 * the publisher is gone. */
static bool wait_ready(wsl_run_t *run, uint64_t deadline)
{
    broadcast_t *b = run->mode;
    uint64_t next_probe = 0;
    for (;;) {
        if (b->publisher->state != WSL_CONN_OPEN)
            return false;
        if (b->ready == run->open - 1)
            return true;
        uint64_t now = wsl_now();
        if (now >= deadline) {
            wsl_run_error(run, WSL_ERR_TIMEOUT, "%u of %u subscribers got no probe in time",
                          run->open - 1 - b->ready, run->open - 1);
            return false;
        }
        if (now >= next_probe) {
            probe(run);
            next_probe = now + PROBE_EVERY;
        }
        if (wsl_run_poll(run, next_probe < deadline ? next_probe : deadline) != 0)
            return false;
    }
}

int wsl_broadcast(const wsl_options_t *opt, FILE *out)
{
    broadcast_t *b = calloc(1, sizeof *b);
    wsl_run_t run;
    if (!b || !(b->msg = malloc(opt->size)) ||
        wsl_run_init(&run, opt, &OPS, b, opt->connections + 1)) {
        perror("ws_load: broadcast");
        if (b)
            free(b->msg);
        free(b);
        return 1;
    }
    b->subscribers = opt->connections;
    b->publisher = &run.conns[opt->connections];
    for (unsigned i = 0; i < opt->connections; i++)
        run.conns[i].path = opt->path;
    b->publisher->path = opt->publish_path;

    uint64_t began = wsl_now();
    uint64_t open_deadline = began + (uint64_t)(opt->open_timeout * 1e9);
    wsl_run_open_all(&run, open_deadline);
    uint64_t opened = wsl_now();
    if (b->publisher->state == WSL_CONN_OPEN && run.open > 1 &&
        wait_ready(&run, opened + (uint64_t)(opt->open_timeout * 1e9))) {
        b->phase = MEASURING;
        b->start = wsl_now();
        b->end = b->start + (uint64_t)(opt->duration * 1e9);
        publish_more(&run);
        while (wsl_now() < b->end && b->publisher->state == WSL_CONN_OPEN && b->ready > 0)
            if (wsl_run_poll(&run, b->end) != 0)
                break;
        b->phase = DRAINING;
        uint64_t drain_end = wsl_now() + DRAIN;
        while (b->oldest < b->published && wsl_now() < drain_end)
            if (wsl_run_poll(&run, drain_end) != 0)
                break;
        if (b->oldest < b->published)
            wsl_run_error(&run, WSL_ERR_TIMEOUT,
                          "messages %llu to %llu not received by every subscriber after %.0f s",
                          (unsigned long long)b->oldest, (unsigned long long)b->published - 1,
                          DRAIN / 1e9);
    }
    uint64_t stopped = b->end ? (wsl_now() < b->end ? wsl_now() : b->end) : b->start;

    uint64_t lost = 0;
    unsigned subscribed = 0;
    for (unsigned i = 0; i < opt->connections; i++) {
        wsl_conn_t *c = &run.conns[i];
        if (!c->ready)
            continue;
        subscribed++;
        lost += b->published - c->seq - (uint64_t)__builtin_popcountll(c->early);
    }
    run.ending = true;
    for (unsigned i = 0; i < run.count; i++)
        wsl_conn_close(&run, &run.conns[i], true);

    double seconds = (double)(stopped - b->start) / 1e9;
    wsl_report_begin(out, "broadcast", &run);
    fprintf(out,
            "\"subscribers\":%u,\"subscribed\":%u,\"window\":%u,\"open_s\":%.3f,\"seconds\":%.3f,"
            "\"published\":%llu,\"deliveries\":%llu,\"per_s\":%.1f,\"lost\":%llu,"
            "\"duplicates\":%llu,\"out_of_order\":%llu,",
            opt->connections, subscribed, opt->window, (double)(opened - began) / 1e9, seconds,
            (unsigned long long)b->published, (unsigned long long)b->deliveries,
            seconds > 0 ? (double)b->deliveries / seconds : 0.0, (unsigned long long)lost,
            (unsigned long long)b->duplicates, (unsigned long long)b->out_of_order);
    wsl_report_latency(out, "latency", &b->latency);
    wsl_report_end(out, &run, b->deliveries);
    wsl_run_free(&run);
    free(b->msg);
    free(b);
    return 0;
}
