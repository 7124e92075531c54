#ifndef WSL_MODES_H
#define WSL_MODES_H

/* The three measurements. Each runs to its end within the bounds of opt, prints its JSON line
 * on out (report.h) and returns 0, or returns 1 without a line when it could not start (no
 * memory, no epoll), after saying why on stderr. Called once by main. */

#include <stdio.h>

#include "options.h"

/* opt->connections clients, each sending a message and waiting for its echo before the next,
 * for opt->duration seconds: round trips a second and their latency. */
int wsl_echo(const wsl_options_t *opt, FILE *out);

/* opt->connections subscribers and one publisher that keeps opt->window messages in flight
 * (sent and not yet received by every subscriber) for opt->duration seconds: deliveries a
 * second, publish-to-receipt latency, and lost, duplicate and out-of-order messages. */
int wsl_broadcast(const wsl_options_t *opt, FILE *out);

/* opt->connections connections opened and held opt->hold seconds without traffic, then
 * opt->sample of them must still echo. With opt->sync, waits for a line on stdin after the
 * hold (bench/run reads the server's memory then). */
int wsl_idle(const wsl_options_t *opt, FILE *out);

#endif
