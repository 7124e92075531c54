/* The media type table (mime.c): extensions matched without regard to case, the last extension
 * of the last segment counts, text types get a charset, unknown ones the default, and what is
 * not a valid field value is refused. */

#include "handlers/mime.h"
#include "test.h"

typedef struct lookup_case_t {
    const char *name, *want;
} lookup_case_t;

static const lookup_case_t lookups[] = {
    {"app.css", "text/css; charset=utf-8"},
    {"assets/app-1a2b3c4d.js", "text/javascript; charset=utf-8"},
    {"APP.CSS", "text/css; charset=utf-8"},
    {"data.json", "application/json; charset=utf-8"},
    {"logo.svg", "image/svg+xml; charset=utf-8"},
    {"photo.png", "image/png"},
    {"archive.tar.gz", "application/x-gzip"},
    {"README", UP_MIME_DEFAULT},
    {".htaccess", UP_MIME_DEFAULT},
    {"dir/.css", UP_MIME_DEFAULT},
    {"dir.css/file", UP_MIME_DEFAULT},
    {"trailing.", UP_MIME_DEFAULT},
    {"unknown.xyz", UP_MIME_DEFAULT},
    {"video.webm", "video/webm; codecs=vp9"},
    {"page.html", "text/html; charset=utf-8"},
};

int main(void)
{
    up_mime_t *m = up_mime_new();
    CHECK(up_mime_add(m, ".css", "text/css") == 0, "add .css");
    CHECK(up_mime_add(m, "js", "text/javascript") == 0, "add js without a dot");
    CHECK(up_mime_add(m, ".json", "application/json") == 0, "add .json");
    CHECK(up_mime_add(m, ".svg", "image/svg+xml") == 0, "add .svg");
    CHECK(up_mime_add(m, ".png", "image/png") == 0, "add .png");
    CHECK(up_mime_add(m, ".gz", "application/x-gzip") == 0, "add .gz");
    CHECK(up_mime_add(m, ".webm", "video/webm; codecs=vp9") == 0, "a type with a parameter");
    CHECK(up_mime_add(m, ".html", "text/plain") == 0 && up_mime_add(m, ".HTML", "text/html") == 0,
          "a later add replaces");
    /* Enough to grow the table a few times. */
    for (int i = 0; i < 700; i++) {
        char ext[16];
        snprintf(ext, sizeof(ext), ".x%d", i);
        CHECK(up_mime_add(m, ext, "application/x-test") == 0, "add %s", ext);
    }
    CHECK(up_mime_add(m, "", "text/plain") == -1, "an empty extension is refused");
    CHECK(up_mime_add(m, ".", "text/plain") == -1, "a lone dot is refused");
    CHECK(up_mime_add(m, ".a", "") == -1, "an empty type is refused");
    CHECK(up_mime_add(m, ".a", "text/plain\r\nx-evil: 1") == -1, "CR LF in a type is refused");
    CHECK(up_mime_add(m, ".abcdefghijabcdefghijabcdefghijabc", "text/plain") == -1,
          "an extension past UP_MIME_MAX_EXT is refused");
    for (size_t i = 0; i < sizeof(lookups) / sizeof(lookups[0]); i++) {
        size_t len = strlen(lookups[i].name);
        char *in = guarded_copy(lookups[i].name, len);
        up_slice_t t = up_mime_lookup(m, in, len);
        CHECK(t.len == strlen(lookups[i].want) && memcmp(t.base, lookups[i].want, t.len) == 0,
              "%s: \"%.*s\", want \"%s\"", lookups[i].name, (int)t.len, t.base, lookups[i].want);
        guarded_free(in, len);
    }
    up_slice_t t = up_mime_lookup(m, "f.x699", 6);
    CHECK(t.len == 18, "the last added of many is found");
    up_mime_free(m);
    return test_report("mime");
}
