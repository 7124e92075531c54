#include <stdio.h>
#include <stdlib.h>
#include "base/memory.h"

void up_fatal(const char *what)
{
    fprintf(stderr, "up: fatal: %s\n", what);
    abort();
}

void *up_malloc(size_t size)
{
    void *p = malloc(size);
    if (p == NULL)
        up_fatal("out of memory (malloc)");
    return p;
}

void *up_calloc(size_t count, size_t size)
{
    void *p = calloc(count, size);
    if (p == NULL)
        up_fatal("out of memory (calloc)");
    return p;
}

void *up_realloc(void *ptr, size_t size)
{
    void *p = realloc(ptr, size);
    if (p == NULL)
        up_fatal("out of memory (realloc)");
    return p;
}
