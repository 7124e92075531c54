#ifndef UP_ACCESS_LOG_H
#define UP_ACCESS_LOG_H

/* The access log (--access-log FILE): one line a request in the common log format, then the
 * seconds the request took, buffered and written a batch at a time. The format and the rules
 * are one for every runtime: the MRI binding (ext/up/ruby) and the Node addon (ext/up/node)
 * both keep one of these per server. Calls may come from any thread (the lock is inside). */

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include "core/conn.h"
#include "core/exchange.h"

/* Bytes buffered at most; the buffer goes out once it is half full. */
#define UP_ACCESS_LOG_BUFFER 65536

typedef struct up_access_log_t {
    int fd; /* -1 when there is no access log */
    char *path;
    pthread_mutex_t lock;
    size_t len;
    time_t first_line; /* when the oldest line in buf was added */
    time_t date_second;
    char date[32];
    char buf[UP_ACCESS_LOG_BUFFER];
} up_access_log_t;

/* Makes log closed (fd -1) with its lock; up_access_log_destroy undoes it (closing first). */
void up_access_log_init(up_access_log_t *log);
void up_access_log_destroy(up_access_log_t *log);
/* Opens path for appending (created 0644). Returns 0, or -1 with errno set (nothing opened). */
int up_access_log_open(up_access_log_t *log, const char *path);
/* One line for the exchange ex (its request head and its staged response's status
 * and body bytes), which took took_ns. Goes to the file when the buffer is half full. */
void up_access_log_request(up_access_log_t *log, const up_exchange_t *ex, uint64_t took_ns);
/* Writes what is buffered if its oldest line is from an earlier second than now (force: in
 * any case). The binding calls it at least once a second while lines wait. */
void up_access_log_flush(up_access_log_t *log, int force);
/* After a rotation (HUP): what is buffered goes to the old file, then the file is opened again
 * by its name. When that fails the old file stays in use. Returns 0, or -1 with errno set. */
int up_access_log_reopen(up_access_log_t *log);
/* Writes what is buffered and closes the file (again: nothing). */
void up_access_log_close(up_access_log_t *log);

#endif
