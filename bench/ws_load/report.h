#ifndef WSL_REPORT_H
#define WSL_REPORT_H

/* The one JSON line a run prints on stdout for bench/run to parse. Each mode prints its own
 * fields after wsl_report_begin, then wsl_report_end adds what every mode has: the errors by
 * kind, the first error's text, and this process's CPU time (getrusage), whole and per
 * operation (round trip, delivery or handshake). */

#include <stdint.h>
#include <stdio.h>

#include "conn.h"
#include "histogram.h"

/* Starts the line: {"mode":NAME,"requested":N,"connections":N,"opened":N,"size":N, */
void wsl_report_begin(FILE *out, const char *mode, const wsl_run_t *run);

/* "NAME_p50_us":X,"NAME_p99_us":X,"NAME_max_us":X, from a histogram of nanoseconds. */
void wsl_report_latency(FILE *out, const char *name, const wsl_histogram_t *h);

/* Ends the line: "errors":{...},"first_error":"...","wall_s":X,"cpu_s":X,"cpu_us_per_op":X}
 * and a newline, then flushes. wall_s: since the run was set up, so cpu_s / wall_s is how busy
 * the client was (near 1: it may have been what limited the run). ops: what the CPU time is
 * divided by. */
void wsl_report_end(FILE *out, const wsl_run_t *run, uint64_t ops);

/* This process's user + system CPU time so far, in seconds. */
double wsl_cpu_seconds(void);

#endif
