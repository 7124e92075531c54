/* Table tests for path globs (path_glob.c): "*" within a segment, "**" across them, "?" one byte,
 * and a pattern built to make a backtracking matcher take exponential time, which this one
 * answers in a bounded number of steps. */

#include "base/path_glob.h"
#include "test.h"

typedef struct glob_case_t {
    const char *pattern, *path;
    int match;
} glob_case_t;

static const glob_case_t cases[] = {
    {"/", "/", 1},
    {"/", "/a", 0},
    {"/about", "/about", 1},
    {"/about", "/about/", 0},
    {"/*.html", "/index.html", 1},
    {"/*.html", "/a/index.html", 0},
    {"/**.html", "/a/index.html", 1},
    {"/assets/**", "/assets/app.css", 1},
    {"/assets/**", "/assets/js/app.js", 1},
    {"/assets/**", "/assets/", 1},
    {"/assets/**", "/assetsx", 0},
    {"/assets/*", "/assets/js/app.js", 0},
    {"/**", "/", 1},
    {"/**", "/anything/at/all", 1},
    {"*", "", 1},
    {"", "", 1},
    {"", "/", 0},
    {"/a?c", "/abc", 1},
    {"/a?c", "/a/c", 0},
    {"/a?c", "/ac", 0},
    {"/***/x", "/a/b/x", 1},
    {"/old/*/page", "/old/2019/page", 1},
    {"/old/*/page", "/old/2019/05/page", 0},
    {"/*/*", "/a/b", 1},
    {"/*/*", "/a", 0},
    {"*a*a*a*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 0},
    {"**a**a**a**a**a**b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab", 1},
};

int main(void)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const glob_case_t *c = &cases[i];
        up_path_glob_t g;
        CHECK(up_path_glob_compile(&g, c->pattern, strlen(c->pattern)) == 0, "%s compiles", c->pattern);
        size_t len = strlen(c->path);
        char *in = guarded_copy(c->path, len);
        CHECK(up_path_glob_match(&g, in, len) == c->match, "%s ~ %s: want %d", c->pattern, c->path,
              c->match);
        guarded_free(in, len);
    }
    char big[UP_PATH_GLOB_MAX + 2];
    memset(big, 'a', sizeof(big));
    up_path_glob_t g;
    CHECK(up_path_glob_compile(&g, big, UP_PATH_GLOB_MAX) == 0, "UP_PATH_GLOB_MAX tokens compile");
    CHECK(up_path_glob_compile(&g, big, UP_PATH_GLOB_MAX + 1) == -1, "one more is refused");
    return test_report("path_glob");
}
