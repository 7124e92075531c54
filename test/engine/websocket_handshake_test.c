/* Tests for the WebSocket opening handshake (RFC 6455 §4.2.1, §4.2.2) and what it is built on:
 * SHA-1 (FIPS 180-4, the test vectors of FIPS 180-2's appendix and RFC 3174), base64 (RFC 4648
 * §10's vectors, and the strict decoding a key gets), comma-separated lists (RFC 9110 §5.6.1).
 *
 * Every handshake case is checked twice: one call per header line, and with the lines of a
 * repeated field joined by ", " (what a Rack env holds); both must agree. Every value lies right
 * before an unmapped page. */

#include <stdint.h>
#include <strings.h>
#include "base/base64.h"
#include "base/sha1.h"
#include "http1/websocket_handshake.h"
#include "test.h"

/* ---- SHA-1 ---- */

static void hex(const uint8_t *d, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

typedef struct sha1_case_t {
    const char *input; /* NULL: `repeat` times 'a' */
    size_t repeat;
    const char *digest;
} sha1_case_t;

static void test_sha1(void)
{
    static const sha1_case_t cases[] = {
        {"", 0, "da39a3ee5e6b4b0d3255bfef95601890afd80709"},
        {"abc", 0, "a9993e364706816aba3e25717850c26c9cd0d89d"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 0,
         "84983e441c3bd26ebaae4aa1f95129e5e54670f1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopq"
         "rsmnopqrstnopqrstu",
         0, "a49b2446a02c645bf419f995b67091253a04a259"},
        {"The quick brown fox jumps over the lazy dog", 0, "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12"},
        /* lengths around the padding's boundaries: 55 bytes still fit the length in the block */
        {NULL, 55, "c1c8bbdc22796e28c0e15163d20899b65621d65a"},
        {NULL, 56, "c2db330f6083854c99d4b5bfb6e8f29f201be699"},
        {NULL, 57, "f08f24908d682555111be7ff6f004e78283d989a"},
        {NULL, 63, "03f09f5b158a7a8cdad920bddc29b81c18a551f5"},
        {NULL, 64, "0098ba824b5c16427bd7a1122a5a442a25ec644d"},
        {NULL, 65, "11655326c708d70319be2610e8a57d9a5b959d3b"},
        {NULL, 119, "ee971065aaa017e0632a8ca6c77bb3bf8b1dfc56"},
        {NULL, 120, "f34c1488385346a55709ba056ddd08280dd4c6d6"},
        {NULL, 128, "ad5b3fdbcb526778c2839d2f151ea753995e26a0"},
        {NULL, 1000000, "34aa973cd4c4daa4f61eeb2bdbad27316534016f"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const sha1_case_t *c = &cases[i];
        size_t len = c->input ? strlen(c->input) : c->repeat;
        char *msg = malloc(len + 1);
        if (c->input)
            memcpy(msg, c->input, len);
        else
            memset(msg, 'a', len);
        char *in = guarded_copy(msg, len);
        uint8_t d[UP_SHA1_DIGEST_SIZE];
        char got[41];

        up_sha1(in, len, d);
        hex(d, sizeof(d), got);
        CHECK(strcmp(got, c->digest) == 0, "sha1 of %zu bytes (whole): %s", len, got);

        /* pieces of every size from 1 to 130 */
        for (size_t step = 1; step <= 130 && len <= 1000; step++) {
            up_sha1_t ctx;
            up_sha1_init(&ctx);
            for (size_t at = 0; at < len; at += step)
                up_sha1_update(&ctx, in + at, len - at < step ? len - at : step);
            up_sha1_final(&ctx, d);
            hex(d, sizeof(d), got);
            CHECK(strcmp(got, c->digest) == 0, "sha1 of %zu bytes in pieces of %zu: %s", len, step, got);
        }
        guarded_free(in, len);
        free(msg);
    }
    up_sha1_t ctx;
    uint8_t d[UP_SHA1_DIGEST_SIZE];
    char got[41];
    up_sha1_init(&ctx);
    up_sha1_update(&ctx, NULL, 0);
    up_sha1_update(&ctx, "abc", 3);
    up_sha1_update(&ctx, NULL, 0);
    up_sha1_final(&ctx, d);
    hex(d, sizeof(d), got);
    CHECK(strcmp(got, "a9993e364706816aba3e25717850c26c9cd0d89d") == 0, "empty updates change nothing");
}

/* ---- base64 ---- */

typedef struct b64_case_t {
    const char *encoded;
    const char *decoded; /* NULL: refused */
} b64_case_t;

static void test_base64(void)
{
    static const b64_case_t cases[] = {
        {"", ""},
        {"Zg==", "f"},
        {"Zm8=", "fo"},
        {"Zm9v", "foo"},
        {"Zm9vYg==", "foob"},
        {"Zm9vYmE=", "fooba"},
        {"Zm9vYmFy", "foobar"},
        {"+/+/", "\xfb\xff\xbf"},
        {"Zh==", NULL},         /* bits under the padding not zero */
        {"Zm9=", NULL},
        {"Zg=", NULL},          /* length not a multiple of 4 */
        {"Zg", NULL},
        {"Z===", NULL},         /* three pads */
        {"====", NULL},
        {"Zg==Zg==", NULL},     /* padding before the end */
        {"Zm=v", NULL},         /* '=' then data */
        {"Zm9v\n", NULL},
        {" Zm9", NULL},
        {"Zm9*", NULL},
        {"Zm9-", NULL},         /* the URL alphabet is another encoding */
        {"Zm9_", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const b64_case_t *c = &cases[i];
        size_t len = strlen(c->encoded);
        char *in = guarded_copy(c->encoded, len);
        uint8_t out[16];
        ssize_t n = up_base64_decode(in, len, out, sizeof(out));
        if (c->decoded == NULL) {
            CHECK(n == -1, "decode %s: %zd, want refused", c->encoded, n);
        } else {
            CHECK(n == (ssize_t)strlen(c->decoded) && memcmp(out, c->decoded, (size_t)n) == 0, "decode %s: %zd",
                  c->encoded, n);
            char enc[32];
            size_t m = up_base64_encode((const uint8_t *)c->decoded, strlen(c->decoded), enc);
            CHECK(m == len && memcmp(enc, c->encoded, len) == 0, "encode %s", c->decoded);
            CHECK(m == UP_BASE64_ENCODED_LEN(strlen(c->decoded)), "encoded length of %s", c->decoded);
            if (n > 0)
                CHECK(up_base64_decode(in, len, out, (size_t)n - 1) == -1, "decode %s into too little room",
                      c->encoded);
        }
        guarded_free(in, len);
    }
    /* every byte value through a round trip */
    uint8_t all[256], back[256];
    char enc[UP_BASE64_ENCODED_LEN(256)];
    for (int i = 0; i < 256; i++)
        all[i] = (uint8_t)i;
    for (size_t len = 0; len <= 256; len++) {
        size_t m = up_base64_encode(all, len, enc);
        CHECK(up_base64_decode(enc, m, back, sizeof(back)) == (ssize_t)len && memcmp(back, all, len) == 0,
              "round trip of %zu bytes", len);
    }
}

/* ---- Sec-WebSocket-Accept ---- */

static void test_accept_key(void)
{
    char out[UP_WS_ACCEPT_LEN + 1];
    const char *key = "dGhlIHNhbXBsZSBub25jZQ==";
    char *in = guarded_copy(key, strlen(key));
    up_ws_accept_key(in, strlen(key), out);
    CHECK(strcmp(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=") == 0, "RFC 6455 §1.3's example: %s", out);
    guarded_free(in, strlen(key));
    up_ws_accept_key("x3JJHMbDL1EzLkh9GBhXDw==", 24, out);
    CHECK(strcmp(out, "HSmrc0sMlYUkAGmm5OPpG2HaGWk=") == 0, "a second key (digest by sha1sum and base64): %s", out);
}

/* ---- The handshake ---- */

#define MAX_FIELDS 10

typedef struct field_t {
    const char *name, *value;
} field_t;

typedef struct handshake_case_t {
    const char *name;
    const char *method;
    int minor_version;
    field_t fields[MAX_FIELDS];
    up_ws_handshake_result_t want;
} handshake_case_t;

#define KEY_FIELD {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}
#define VERSION_FIELD {"Sec-WebSocket-Version", "13"}
#define UPGRADE_FIELDS {"Upgrade", "websocket"}, {"Connection", "Upgrade"}
#define GOOD UPGRADE_FIELDS, KEY_FIELD, VERSION_FIELD

static const handshake_case_t cases[] = {
    {"RFC 6455 §1.2's request", "GET", 1,
     {{"Host", "server.example.com"}, {"Upgrade", "websocket"}, {"Connection", "Upgrade"}, KEY_FIELD,
      {"Origin", "http://example.com"}, {"Sec-WebSocket-Protocol", "chat, superchat"}, VERSION_FIELD},
     UP_WS_HANDSHAKE_OK},
    {"names and tokens in any case", "GET", 1,
     {{"UPGRADE", "WebSocket"}, {"connection", "keep-alive, UPGRADE"}, {"sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="},
      {"SEC-WEBSOCKET-VERSION", "13"}},
     UP_WS_HANDSHAKE_OK},
    {"lists with empty elements and whitespace", "GET", 1,
     {{"Upgrade", " , websocket\t,"}, {"Connection", ",,  upgrade ,"}, KEY_FIELD, VERSION_FIELD},
     UP_WS_HANDSHAKE_OK},
    {"websocket among other protocols", "GET", 1, {{"Upgrade", "h2c, websocket"}, {"Connection", "Upgrade"},
     KEY_FIELD, VERSION_FIELD}, UP_WS_HANDSHAKE_OK},
    {"Upgrade sent on two lines", "GET", 1, {{"Upgrade", "h2c"}, {"Upgrade", "websocket"}, {"Connection", "Upgrade"},
     KEY_FIELD, VERSION_FIELD}, UP_WS_HANDSHAKE_OK},
    {"Connection sent on two lines", "GET", 1, {{"Upgrade", "websocket"}, {"Connection", "keep-alive"},
     {"Connection", "Upgrade"}, KEY_FIELD, VERSION_FIELD}, UP_WS_HANDSHAKE_OK},
    {"padded version", "GET", 1, {UPGRADE_FIELDS, KEY_FIELD, {"Sec-WebSocket-Version", " 13\t"}},
     UP_WS_HANDSHAKE_OK},
    {"another key", "GET", 1, {UPGRADE_FIELDS, {"Sec-WebSocket-Key", "AQIDBAUGBwgJCgsMDQ4PEA=="}, VERSION_FIELD},
     UP_WS_HANDSHAKE_OK},
    {"plain request", "GET", 1, {{"Host", "a"}}, UP_WS_HANDSHAKE_NOT_WEBSOCKET},
    {"Upgrade without Connection: upgrade", "GET", 1, {{"Upgrade", "websocket"}, KEY_FIELD, VERSION_FIELD},
     UP_WS_HANDSHAKE_NOT_WEBSOCKET},
    {"Connection: keep-alive only", "GET", 1, {{"Upgrade", "websocket"}, {"Connection", "keep-alive"},
     KEY_FIELD, VERSION_FIELD}, UP_WS_HANDSHAKE_NOT_WEBSOCKET},
    {"Connection without Upgrade", "GET", 1, {{"Connection", "Upgrade"}, KEY_FIELD, VERSION_FIELD},
     UP_WS_HANDSHAKE_NOT_WEBSOCKET},
    {"upgrade to h2c", "GET", 1, {{"Upgrade", "h2c"}, {"Connection", "Upgrade"}}, UP_WS_HANDSHAKE_NOT_WEBSOCKET},
    {"websocket with a version suffix", "GET", 1, {{"Upgrade", "websocket/13"}, {"Connection", "Upgrade"},
     KEY_FIELD, VERSION_FIELD}, UP_WS_HANDSHAKE_NOT_WEBSOCKET},
    {"a longer Connection token", "GET", 1, {{"Upgrade", "websocket"}, {"Connection", "upgraded"},
     KEY_FIELD, VERSION_FIELD}, UP_WS_HANDSHAKE_NOT_WEBSOCKET},
    {"not a websocket, whatever the method", "POST", 0, {{"Upgrade", "h2c"}}, UP_WS_HANDSHAKE_NOT_WEBSOCKET},
    {"HTTP/1.0 ignores Upgrade", "GET", 0, {GOOD}, UP_WS_HANDSHAKE_BAD_HTTP_VERSION},
    {"HTTP/1.0 before the method", "POST", 0, {GOOD}, UP_WS_HANDSHAKE_BAD_HTTP_VERSION},
    {"POST", "POST", 1, {GOOD}, UP_WS_HANDSHAKE_BAD_METHOD},
    {"method is case-sensitive", "get", 1, {GOOD}, UP_WS_HANDSHAKE_BAD_METHOD},
    {"no version", "GET", 1, {UPGRADE_FIELDS, KEY_FIELD}, UP_WS_HANDSHAKE_BAD_VERSION},
    {"version 8", "GET", 1, {UPGRADE_FIELDS, KEY_FIELD, {"Sec-WebSocket-Version", "8"}}, UP_WS_HANDSHAKE_BAD_VERSION},
    {"version 013", "GET", 1, {UPGRADE_FIELDS, KEY_FIELD, {"Sec-WebSocket-Version", "013"}},
     UP_WS_HANDSHAKE_BAD_VERSION},
    {"version list", "GET", 1, {UPGRADE_FIELDS, KEY_FIELD, {"Sec-WebSocket-Version", "13, 8"}},
     UP_WS_HANDSHAKE_BAD_VERSION},
    {"version twice", "GET", 1, {UPGRADE_FIELDS, KEY_FIELD, VERSION_FIELD, VERSION_FIELD}, UP_WS_HANDSHAKE_BAD_VERSION},
    {"empty version", "GET", 1, {UPGRADE_FIELDS, KEY_FIELD, {"Sec-WebSocket-Version", ""}}, UP_WS_HANDSHAKE_BAD_VERSION},
    {"bad version before bad key", "GET", 1, {UPGRADE_FIELDS, {"Sec-WebSocket-Version", "7"}},
     UP_WS_HANDSHAKE_BAD_VERSION},
    {"no key", "GET", 1, {UPGRADE_FIELDS, VERSION_FIELD}, UP_WS_HANDSHAKE_BAD_KEY},
    {"empty key", "GET", 1, {UPGRADE_FIELDS, {"Sec-WebSocket-Key", ""}, VERSION_FIELD}, UP_WS_HANDSHAKE_BAD_KEY},
    {"key of 15 bytes", "GET", 1, {UPGRADE_FIELDS, {"Sec-WebSocket-Key", "AQIDBAUGBwgJCgsMDQ4P"}, VERSION_FIELD},
     UP_WS_HANDSHAKE_BAD_KEY},
    {"key of 18 bytes", "GET", 1, {UPGRADE_FIELDS, {"Sec-WebSocket-Key", "AQIDBAUGBwgJCgsMDQ4PEBES"}, VERSION_FIELD},
     UP_WS_HANDSHAKE_BAD_KEY},
    {"key not canonical", "GET", 1, {UPGRADE_FIELDS, {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZR=="}, VERSION_FIELD},
     UP_WS_HANDSHAKE_BAD_KEY},
    {"key without padding", "GET", 1, {UPGRADE_FIELDS, {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ"}, VERSION_FIELD},
     UP_WS_HANDSHAKE_BAD_KEY},
    {"key with a bad character", "GET", 1,
     {UPGRADE_FIELDS, {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25j*Q=="}, VERSION_FIELD}, UP_WS_HANDSHAKE_BAD_KEY},
    {"key twice", "GET", 1, {UPGRADE_FIELDS, KEY_FIELD, KEY_FIELD, VERSION_FIELD}, UP_WS_HANDSHAKE_BAD_KEY},
};

/* Runs a case with its fields as given, or with the lines of each repeated field joined by ", "
 * into one value; returns the verdict and the key it kept. */
static up_ws_handshake_result_t run_handshake(const handshake_case_t *c, int join, char *key_out)
{
    up_ws_handshake_t h;
    char joined[MAX_FIELDS][256];
    char *copies[MAX_FIELDS];
    size_t lens[MAX_FIELDS];
    const char *names[MAX_FIELDS];
    size_t n = 0;

    for (size_t i = 0; i < MAX_FIELDS && c->fields[i].name != NULL; i++) {
        size_t j = n;
        for (size_t k = 0; join && k < n && j == n; k++)
            if (strcasecmp(names[k], c->fields[i].name) == 0)
                j = k;
        if (j < n) {
            size_t len = strlen(joined[j]);
            snprintf(joined[j] + len, sizeof(joined[j]) - len, ", %s", c->fields[i].value);
        } else {
            names[n] = c->fields[i].name;
            snprintf(joined[n], sizeof(joined[n]), "%s", c->fields[i].value);
            n++;
        }
    }
    up_ws_handshake_init(&h);
    for (size_t i = 0; i < n; i++) {
        lens[i] = strlen(joined[i]);
        copies[i] = guarded_copy(joined[i], lens[i]);
        up_ws_handshake_header(&h, up_slice(names[i], strlen(names[i])), up_slice(copies[i], lens[i]));
    }
    char *method = guarded_copy(c->method, strlen(c->method));
    up_ws_handshake_result_t r = up_ws_handshake_check(&h, up_slice(method, strlen(c->method)), c->minor_version);
    snprintf(key_out, 64, "%.*s", (int)h.key.len, h.key.base);
    guarded_free(method, strlen(c->method));
    for (size_t i = 0; i < n; i++)
        guarded_free(copies[i], lens[i]);
    return r;
}

static void test_handshake(void)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const handshake_case_t *c = &cases[i];
        char key[64];
        up_ws_handshake_result_t r = run_handshake(c, 0, key);
        CHECK(r == c->want, "%s (a call per line): %s, want %s", c->name, up_ws_handshake_reason(r),
              up_ws_handshake_reason(c->want));
        if (r == UP_WS_HANDSHAKE_OK)
            CHECK(strlen(key) == 24, "%s: key kept: %s", c->name, key);
        r = run_handshake(c, 1, key);
        CHECK(r == c->want, "%s (lines joined): %s, want %s", c->name, up_ws_handshake_reason(r),
              up_ws_handshake_reason(c->want));
    }
    CHECK(up_ws_handshake_status(UP_WS_HANDSHAKE_OK) == 101, "OK: 101");
    CHECK(up_ws_handshake_status(UP_WS_HANDSHAKE_BAD_VERSION) == 400, "bad version: 400");
    CHECK(up_ws_handshake_status(UP_WS_HANDSHAKE_BAD_KEY) == 400, "bad key: 400");
    CHECK(up_ws_handshake_status(UP_WS_HANDSHAKE_BAD_METHOD) == 400, "bad method: 400");
    CHECK(up_ws_handshake_status(UP_WS_HANDSHAKE_BAD_HTTP_VERSION) == 0, "HTTP/1.0: a plain request");
    CHECK(up_ws_handshake_status(UP_WS_HANDSHAKE_NOT_WEBSOCKET) == 0, "not websocket: a plain request");
}

/* ---- Lists ---- */

static void test_lists(void)
{
    static const struct {
        const char *list;
        const char *elements; /* joined by '|' */
    } lists[] = {
        {"", ""},
        {" , ,\t", ""},
        {"a", "a"},
        {"a,b", "a|b"},
        {" a , b\t,,c, ", "a|b|c"},
        {",chat", "chat"},
        {"chat, superchat", "chat|superchat"},
        {"x y, z", "x y|z"},
    };
    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
        size_t len = strlen(lists[i].list);
        char *in = guarded_copy(lists[i].list, len);
        up_slice_t rest = up_slice(in, len), e;
        char got[64] = "";
        size_t at = 0;
        while (up_ws_list_next(&rest, &e)) {
            at += (size_t)snprintf(got + at, sizeof(got) - at, "%s%.*s", at ? "|" : "", (int)e.len, e.base);
            CHECK(e.len > 0, "empty element from %s", lists[i].list);
        }
        CHECK(strcmp(got, lists[i].elements) == 0, "elements of '%s': %s", lists[i].list, got);
        CHECK(rest.len == 0 && !up_ws_list_next(&rest, &e), "list '%s' used up", lists[i].list);
        guarded_free(in, len);
    }

    const char *offered = "chat, superchat";
    char *in = guarded_copy(offered, strlen(offered));
    up_slice_t list = up_slice(in, strlen(offered));
    CHECK(up_ws_list_contains(list, "chat", 4, 0), "chat offered");
    CHECK(up_ws_list_contains(list, "superchat", 9, 0), "superchat offered");
    CHECK(!up_ws_list_contains(list, "Chat", 4, 0), "subprotocols match exactly");
    CHECK(up_ws_list_contains(list, "Chat", 4, 1), "unless told to ignore case");
    CHECK(!up_ws_list_contains(list, "super", 5, 0), "no prefix match");
    CHECK(!up_ws_list_contains(list, "chat, superchat", 15, 0), "no whole-list match");
    CHECK(!up_ws_list_contains(up_slice(in, 0), "chat", 4, 0), "empty list");
    guarded_free(in, strlen(offered));
}

int main(void)
{
    test_sha1();
    test_base64();
    test_accept_key();
    test_handshake();
    test_lists();
    return test_report("websocket_handshake");
}
