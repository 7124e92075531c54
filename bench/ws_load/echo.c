#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "histogram.h"
#include "message.h"
#include "modes.h"
#include "report.h"

/* Echo: every connection has one message in flight. Its round trip is timed from just before
 * the send to the read that completes the echo, and counted when it completes within the
 * measured period, which starts once every connection is open. */

typedef struct {
    uint8_t *msg; /* the next message, before masking */
    uint64_t start, end;
    uint64_t round_trips;
    wsl_histogram_t latency;
} echo_t;

static void send_next(wsl_run_t *run, wsl_conn_t *c)
{
    echo_t *e = run->mode;
    c->seq++;
    c->sent_ns = wsl_now();
    c->bad = false;
    c->ready = true; /* waiting for the echo */
    wsl_message_write(e->msg, run->opt->size, c->seq, c->sent_ns);
    wsl_conn_send(run, c, WSL_OP_TEXT, e->msg, run->opt->size);
}

static void on_data(wsl_run_t *run, wsl_conn_t *c, uint64_t offset, const uint8_t *data, size_t len)
{
    if (!wsl_message_matches(run->opt->size, c->seq, c->sent_ns, offset, data, len))
        c->bad = true;
}

static void on_message(wsl_run_t *run, wsl_conn_t *c, uint8_t opcode, uint64_t len)
{
    echo_t *e = run->mode;
    if (!c->ready || opcode != WSL_OP_TEXT || len != run->opt->size || c->bad) {
        wsl_run_error(run, WSL_ERR_MISMATCH,
                      "echo of message %llu differs: %s, opcode %u, %llu bytes (sent %u)",
                      (unsigned long long)c->seq, c->ready ? "expected" : "unasked for", opcode,
                      (unsigned long long)len, run->opt->size);
        wsl_conn_close(run, c, true);
        return;
    }
    c->ready = false;
    if (run->now > e->end)
        return;
    e->round_trips++;
    wsl_histogram_add(&e->latency, run->now - c->sent_ns);
    send_next(run, c);
}

static const wsl_mode_ops_t OPS = {.on_data = on_data, .on_message = on_message};

int wsl_echo(const wsl_options_t *opt, FILE *out)
{
    echo_t *e = calloc(1, sizeof *e);
    wsl_run_t run;
    if (!e || !(e->msg = malloc(opt->size)) || wsl_run_init(&run, opt, &OPS, e, opt->connections)) {
        perror("ws_load: echo");
        if (e)
            free(e->msg);
        free(e);
        return 1;
    }
    for (unsigned i = 0; i < run.count; i++)
        run.conns[i].path = opt->path;

    uint64_t began = wsl_now();
    wsl_run_open_all(&run, began + (uint64_t)(opt->open_timeout * 1e9));
    e->start = wsl_now();
    e->end = e->start + (uint64_t)(opt->duration * 1e9);
    for (unsigned i = 0; i < run.count; i++)
        if (run.conns[i].state == WSL_CONN_OPEN)
            send_next(&run, &run.conns[i]);
    while (run.open > 0 && wsl_now() < e->end)
        if (wsl_run_poll(&run, e->end) != 0)
            break;
    uint64_t stopped = wsl_now() < e->end ? wsl_now() : e->end;
    run.ending = true;
    for (unsigned i = 0; i < run.count; i++)
        wsl_conn_close(&run, &run.conns[i], true);

    double seconds = (double)(stopped - e->start) / 1e9;
    wsl_report_begin(out, "echo", &run);
    fprintf(out, "\"open_s\":%.3f,\"seconds\":%.3f,\"round_trips\":%llu,\"per_s\":%.1f,",
            (double)(e->start - began) / 1e9, seconds, (unsigned long long)e->round_trips,
            seconds > 0 ? (double)e->round_trips / seconds : 0.0);
    wsl_report_latency(out, "latency", &e->latency);
    wsl_report_end(out, &run, e->round_trips);
    wsl_run_free(&run);
    free(e->msg);
    free(e);
    return 0;
}
