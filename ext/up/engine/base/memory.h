#ifndef UP_MEMORY_H
#define UP_MEMORY_H

/* The one way the engine allocates. Running out of memory is not an error a request can
 * recover from, so these never return NULL: they print where it happened and abort. */

#include <stddef.h>

void *up_malloc(size_t size);
void *up_calloc(size_t count, size_t size);
void *up_realloc(void *ptr, size_t size);
void up_fatal(const char *what) __attribute__((noreturn));

#endif
