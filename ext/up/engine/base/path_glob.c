/* Path globs; see path_glob.h for the contract. */

#include <string.h>
#include "base/path_glob.h"

enum { LITERAL, ONE, STAR, GLOBSTAR };

/* A set of states 0..UP_PATH_GLOB_MAX: state i means "the first i tokens matched". */
#define WORDS ((UP_PATH_GLOB_MAX + 1 + 63) / 64)
typedef struct states_t {
    uint64_t w[WORDS];
} states_t;

static void add(states_t *s, int i)
{
    s->w[i / 64] |= 1ull << (i % 64);
}

static int has(const states_t *s, int i)
{
    return (s->w[i / 64] >> (i % 64)) & 1u;
}

int up_path_glob_compile(up_path_glob_t *g, const char *pattern, size_t len)
{
    g->count = 0;
    for (size_t i = 0; i < len; i++) {
        if (g->count == UP_PATH_GLOB_MAX)
            return -1;
        int k = g->count++;
        g->byte[k] = (unsigned char)pattern[i];
        if (pattern[i] == '?') {
            g->kind[k] = ONE;
        } else if (pattern[i] == '*') {
            g->kind[k] = STAR;
            if (i + 1 < len && pattern[i + 1] == '*') {
                g->kind[k] = GLOBSTAR;
                while (i + 1 < len && pattern[i + 1] == '*')
                    i++; /* "***" is "**" */
            }
        } else {
            g->kind[k] = LITERAL;
        }
    }
    return 0;
}

/* A wildcard may match nothing: a state before one reaches the state after it too. */
static void close_over_stars(const up_path_glob_t *g, states_t *s)
{
    for (int i = 0; i < g->count; i++) {
        if (has(s, i) && (g->kind[i] == STAR || g->kind[i] == GLOBSTAR))
            add(s, i + 1);
    }
}

int up_path_glob_match(const up_path_glob_t *g, const char *s, size_t len)
{
    states_t cur;
    memset(&cur, 0, sizeof(cur));
    add(&cur, 0);
    close_over_stars(g, &cur);
    for (size_t p = 0; p < len; p++) {
        unsigned char c = (unsigned char)s[p];
        states_t next;
        memset(&next, 0, sizeof(next));
        int any = 0;
        for (int i = 0; i < g->count; i++) {
            if (!has(&cur, i))
                continue;
            switch (g->kind[i]) {
            case LITERAL:
                if (g->byte[i] == c) {
                    add(&next, i + 1);
                    any = 1;
                }
                break;
            case ONE:
                if (c != '/') {
                    add(&next, i + 1);
                    any = 1;
                }
                break;
            case STAR:
                if (c != '/') {
                    add(&next, i);
                    any = 1;
                }
                break;
            case GLOBSTAR:
                add(&next, i);
                any = 1;
                break;
            }
        }
        if (!any)
            return 0;
        close_over_stars(g, &next);
        cur = next;
    }
    return has(&cur, g->count);
}
