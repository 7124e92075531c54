#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conn.h"
#include "message.h"
#include "modes.h"
#include "report.h"

/* Idle: open every connection, send nothing for the hold (pings are still answered), then
 * check that a sample spread over them still echoes. The server's memory is read by
 * bench/run, during the --sync pause at the end of the hold. */

/* How long the sample gets to echo, and how long --sync waits for its line. */
#define SAMPLE_TIMEOUT 10000000000ull /* ns */
#define SYNC_TIMEOUT_MS 120000

typedef struct {
    uint8_t *msg;
    unsigned echoed;
} idle_t;

static void on_data(wsl_run_t *run, wsl_conn_t *c, uint64_t offset, const uint8_t *data, size_t len)
{
    if (!wsl_message_matches(run->opt->size, c->seq, c->sent_ns, offset, data, len))
        c->bad = true;
}

static void on_message(wsl_run_t *run, wsl_conn_t *c, uint8_t opcode, uint64_t len)
{
    idle_t *idle = run->mode;
    if (!c->ready || opcode != WSL_OP_TEXT || len != run->opt->size || c->bad) {
        wsl_run_error(run, WSL_ERR_MISMATCH, "%s: opcode %u, %llu bytes (sent %u)",
                      c->ready ? "a wrong echo" : "a message while idle", opcode,
                      (unsigned long long)len, run->opt->size);
        wsl_conn_close(run, c, true);
        return;
    }
    c->ready = false;
    idle->echoed++;
}

static const wsl_mode_ops_t OPS = {.on_data = on_data, .on_message = on_message};

/* Tells bench/run the hold is over and waits for its line on stdin (or for EOF). */
static void sync_with_harness(wsl_run_t *run, FILE *out)
{
    fprintf(out, "{\"phase\":\"held\",\"open\":%u}\n", run->open);
    fflush(out);
    struct pollfd in = {.fd = STDIN_FILENO, .events = POLLIN};
    char ch = 0;
    while (ch != '\n') {
        int ready = poll(&in, 1, SYNC_TIMEOUT_MS);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0) {
            wsl_run_error(run, WSL_ERR_TIMEOUT, "no line on stdin after the hold (--sync)");
            return;
        }
        ssize_t n = read(STDIN_FILENO, &ch, 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return; /* EOF: nobody to wait for */
    }
}

/* Sends one message on each of opt->sample open connections spread evenly over all, and
 * returns how many were sent. */
static unsigned send_sample(wsl_run_t *run)
{
    idle_t *idle = run->mode;
    unsigned want = run->opt->sample < run->open ? run->opt->sample : run->open;
    if (want == 0)
        return 0;
    unsigned step = run->open / want, seen = 0, sent = 0;
    for (unsigned i = 0; i < run->count && sent < want; i++) {
        wsl_conn_t *c = &run->conns[i];
        if (c->state != WSL_CONN_OPEN || seen++ % step != 0)
            continue;
        c->seq = 1;
        c->sent_ns = wsl_now();
        c->ready = true;
        wsl_message_write(idle->msg, run->opt->size, c->seq, c->sent_ns);
        if (wsl_conn_send(run, c, WSL_OP_TEXT, idle->msg, run->opt->size))
            sent++;
    }
    return sent;
}

int wsl_idle(const wsl_options_t *opt, FILE *out)
{
    idle_t *idle = calloc(1, sizeof *idle);
    wsl_run_t run;
    if (!idle || !(idle->msg = malloc(opt->size)) ||
        wsl_run_init(&run, opt, &OPS, idle, opt->connections)) {
        perror("ws_load: idle");
        if (idle)
            free(idle->msg);
        free(idle);
        return 1;
    }
    for (unsigned i = 0; i < run.count; i++)
        run.conns[i].path = opt->path;

    uint64_t began = wsl_now();
    wsl_run_open_all(&run, began + (uint64_t)(opt->open_timeout * 1e9));
    uint64_t opened = wsl_now();
    uint64_t hold_end = opened + (uint64_t)(opt->hold * 1e9);
    while (run.open > 0 && wsl_now() < hold_end)
        if (wsl_run_poll(&run, hold_end) != 0)
            break;
    unsigned still_open = run.open;
    if (opt->sync)
        sync_with_harness(&run, out);

    unsigned sampled = send_sample(&run);
    uint64_t sample_end = wsl_now() + SAMPLE_TIMEOUT;
    while (idle->echoed < sampled && run.open > 0 && wsl_now() < sample_end)
        if (wsl_run_poll(&run, sample_end) != 0)
            break;
    if (idle->echoed < sampled)
        wsl_run_error(&run, WSL_ERR_TIMEOUT, "%u of %u sampled connections did not echo",
                      sampled - idle->echoed, sampled);
    run.ending = true;
    for (unsigned i = 0; i < run.count; i++)
        wsl_conn_close(&run, &run.conns[i], true);

    double open_s = (double)(opened - began) / 1e9;
    wsl_report_begin(out, "idle", &run);
    fprintf(out,
            "\"open_s\":%.3f,\"per_s\":%.1f,\"hold_s\":%.3f,\"still_open\":%u,\"sample\":%u,"
            "\"sample_echoed\":%u,",
            open_s, open_s > 0 ? run.opened / open_s : 0.0, opt->hold, still_open, sampled,
            idle->echoed);
    wsl_report_end(out, &run, run.opened);
    wsl_run_free(&run);
    free(idle->msg);
    free(idle);
    return 0;
}
