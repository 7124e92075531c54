#ifndef UP_PATH_GLOB_H
#define UP_PATH_GLOB_H

/* Path globs for the static site config (its headers and redirects, as in the static buildpack's
 * static.json): "*" matches any run of bytes but '/', "**" any run at all, "?" one byte but
 * '/', every other byte itself. Matching simulates the pattern as an automaton, one step per
 * byte of the path over a set of states, so its cost is bounded by the path's length times the
 * pattern's, whatever the client sends (no backtracking). Pure: any thread. */

#include <stddef.h>
#include <stdint.h>

/* Most tokens (literal bytes and wildcards) in a pattern. */
#define UP_PATH_GLOB_MAX 190

typedef struct up_path_glob_t {
    unsigned char kind[UP_PATH_GLOB_MAX]; /* literal, '?', '*' or "**" */
    unsigned char byte[UP_PATH_GLOB_MAX];
    int count;
} up_path_glob_t;

/* Compiles pattern[0..len). Returns 0, or -1 when it has more than UP_PATH_GLOB_MAX tokens. */
int up_path_glob_compile(up_path_glob_t *g, const char *pattern, size_t len);
/* 1 when s[0..len) matches the whole pattern, else 0. */
int up_path_glob_match(const up_path_glob_t *g, const char *s, size_t len);

#endif
