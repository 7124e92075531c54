/* Tests for permessage-deflate (RFC 7692): the negotiation as a table of offers (each also sent
 * as one field line per list element), the inflater on the RFC's §7.2.3 examples (whole, a
 * byte at a time and split at every point, each chunk ending right before an unreadable page),
 * round trips through our deflater for every window size and both context takeover modes with
 * messages cut into chunks of every size, broadcasts shared with a connection that keeps its
 * context, the size limit against a decompression bomb, and corrupt data. */

#include <stdint.h>
#include <zlib.h>
#include "websocket/websocket_deflate.h"
#include "test.h"

/* ================================================================ negotiation */

static const up_ws_deflate_policy_t off = {0, 0, 0, 0};
static const up_ws_deflate_policy_t keep = {1, 0, 0, 0};   /* context takeover both ways */
static const up_ws_deflate_policy_t fresh = {1, 1, 1, 0};  /* no context either way */
static const up_ws_deflate_policy_t small = {1, 0, 0, 10}; /* clients asked for 10 bits */
static const up_ws_deflate_policy_t tight = {1, 1, 1, 9};  /* everything a policy can ask */

typedef struct negotiate_case_t {
    const char *name;
    const up_ws_deflate_policy_t *policy;
    const char *lines[3];
    const char *response; /* NULL: declined */
    unsigned char snct, cnct, sbits, cbits;
} negotiate_case_t;

#define ACCEPT(name, policy, offer, response, snct, cnct, sbits, cbits)                            \
    {name, &policy, {offer, NULL, NULL}, response, snct, cnct, sbits, cbits}
#define DECLINE(name, policy, offer) {name, &policy, {offer, NULL, NULL}, NULL, 0, 0, 0, 0}

static const negotiate_case_t negotiate_cases[] = {
    ACCEPT("bare offer", keep, "permessage-deflate", "permessage-deflate", 0, 0, 15, 15),
    ACCEPT("browser offer", keep, "permessage-deflate; client_max_window_bits",
           "permessage-deflate", 0, 0, 15, 15),
    ACCEPT("server_no_context_takeover echoed", keep,
           "permessage-deflate; server_no_context_takeover",
           "permessage-deflate; server_no_context_takeover", 1, 0, 15, 15),
    ACCEPT("client_no_context_takeover echoed", keep,
           "permessage-deflate; client_no_context_takeover",
           "permessage-deflate; client_no_context_takeover", 0, 1, 15, 15),
    ACCEPT("server_max_window_bits echoed", keep, "permessage-deflate; server_max_window_bits=10",
           "permessage-deflate; server_max_window_bits=10", 0, 0, 10, 15),
    ACCEPT("server_max_window_bits=8 accepted (compressed with 9)", keep,
           "permessage-deflate; server_max_window_bits=8",
           "permessage-deflate; server_max_window_bits=8", 0, 0, 8, 15),
    ACCEPT("server_max_window_bits=15", keep, "permessage-deflate; server_max_window_bits=15",
           "permessage-deflate; server_max_window_bits=15", 0, 0, 15, 15),
    ACCEPT("quoted window", keep, "permessage-deflate; server_max_window_bits=\"12\"",
           "permessage-deflate; server_max_window_bits=12", 0, 0, 12, 15),
    ACCEPT("quoted window with a quoted-pair", keep,
           "permessage-deflate; server_max_window_bits=\"1\\2\"",
           "permessage-deflate; server_max_window_bits=12", 0, 0, 12, 15),
    ACCEPT("client window taken as the inflater's", keep,
           "permessage-deflate; client_max_window_bits=9", "permessage-deflate", 0, 0, 15, 9),
    ACCEPT("every parameter", keep,
           "permessage-deflate; server_no_context_takeover; client_no_context_takeover; "
           "server_max_window_bits=11; client_max_window_bits=13",
           "permessage-deflate; server_no_context_takeover; client_no_context_takeover; "
           "server_max_window_bits=11",
           1, 1, 11, 13),
    ACCEPT("parameters in any order", keep,
           "permessage-deflate;client_max_window_bits=8;server_max_window_bits=9;server_no_context_"
           "takeover",
           "permessage-deflate; server_no_context_takeover; server_max_window_bits=9", 1, 0, 9, 8),
    ACCEPT("OWS everywhere it may be", keep,
           " \tpermessage-deflate ;\tclient_max_window_bits ; server_no_context_takeover\t ",
           "permessage-deflate; server_no_context_takeover", 1, 0, 15, 15),
    ACCEPT("other extension first", keep, "x-webkit-deflate-frame, permessage-deflate",
           "permessage-deflate", 0, 0, 15, 15),
    ACCEPT("other extension with parameters first", keep,
           "foo; a=1; b=\"x, y\"; c, permessage-deflate; server_max_window_bits=14",
           "permessage-deflate; server_max_window_bits=14", 0, 0, 14, 15),
    ACCEPT("empty list elements", keep, ", ,permessage-deflate , ,", "permessage-deflate", 0, 0, 15,
           15),
    ACCEPT("first of two offers", keep,
           "permessage-deflate; server_max_window_bits=10, permessage-deflate",
           "permessage-deflate; server_max_window_bits=10", 0, 0, 10, 15),
    ACCEPT("unknown parameter: next offer", keep,
           "permessage-deflate; foo, permessage-deflate; client_no_context_takeover",
           "permessage-deflate; client_no_context_takeover", 0, 1, 15, 15),
    ACCEPT("malformed element: next offer", keep,
           "permessage-deflate; server_max_window_bits = 10, permessage-deflate",
           "permessage-deflate", 0, 0, 15, 15),
    ACCEPT("bad quoted element with a comma inside: next offer", keep,
           "permessage-deflate; server_max_window_bits=\"1,0\", permessage-deflate; "
           "server_max_window_bits=9",
           "permessage-deflate; server_max_window_bits=9", 0, 0, 9, 15),
    ACCEPT("policy without context: both flags", fresh, "permessage-deflate",
           "permessage-deflate; server_no_context_takeover; client_no_context_takeover", 1, 1, 15,
           15),
    ACCEPT("policy without context and windows", fresh,
           "permessage-deflate; server_max_window_bits=12; client_max_window_bits",
           "permessage-deflate; server_no_context_takeover; client_no_context_takeover; "
           "server_max_window_bits=12",
           1, 1, 12, 15),
    ACCEPT("policy asks a smaller client window", small,
           "permessage-deflate; client_max_window_bits",
           "permessage-deflate; client_max_window_bits=10", 0, 0, 15, 10),
    ACCEPT("policy asks a smaller client window than offered", small,
           "permessage-deflate; client_max_window_bits=12",
           "permessage-deflate; client_max_window_bits=10", 0, 0, 15, 10),
    ACCEPT("client offered less than the policy asks", small,
           "permessage-deflate; client_max_window_bits=9", "permessage-deflate", 0, 0, 15, 9),
    ACCEPT("client window never sent unoffered (§7.1.2.2)", small, "permessage-deflate",
           "permessage-deflate", 0, 0, 15, 15),
    ACCEPT("the longest response", tight,
           "permessage-deflate; server_max_window_bits=15; client_max_window_bits",
           "permessage-deflate; server_no_context_takeover; client_no_context_takeover; "
           "server_max_window_bits=15; client_max_window_bits=9",
           1, 1, 15, 9),
    {"offer on the second field line",
     &keep,
     {"foo, bar", "permessage-deflate; server_max_window_bits=11", NULL},
     "permessage-deflate; server_max_window_bits=11",
     0,
     0,
     11,
     15},
    {"bad offer on the first line, good on the third",
     &keep,
     {"permessage-deflate; x", "", "permessage-deflate; client_no_context_takeover"},
     "permessage-deflate; client_no_context_takeover",
     0,
     1,
     15,
     15},
    {"unterminated quote ends at its line",
     &keep,
     {"foo; a=\"b, permessage-deflate", "permessage-deflate", NULL},
     "permessage-deflate",
     0,
     0,
     15,
     15},

    DECLINE("disabled", off, "permessage-deflate"),
    DECLINE("empty value", keep, ""),
    DECLINE("only other extensions", keep, "x-webkit-deflate-frame; no_context_takeover"),
    DECLINE("name is case-sensitive", keep, "Permessage-Deflate"),
    DECLINE("name with a suffix", keep, "permessage-deflatex"),
    DECLINE("unknown parameter", keep, "permessage-deflate; foo"),
    DECLINE("parameter name is case-sensitive", keep,
            "permessage-deflate; Server_No_Context_Takeover"),
    DECLINE("duplicate flag", keep,
            "permessage-deflate; server_no_context_takeover; server_no_context_takeover"),
    DECLINE("duplicate window", keep,
            "permessage-deflate; server_max_window_bits=10; server_max_window_bits=10"),
    DECLINE("duplicate client window, one valueless", keep,
            "permessage-deflate; client_max_window_bits; client_max_window_bits=10"),
    DECLINE("flag with a value", keep, "permessage-deflate; server_no_context_takeover=true"),
    DECLINE("client flag with a quoted value", keep,
            "permessage-deflate; client_no_context_takeover=\"x\""),
    DECLINE("server window without value", keep, "permessage-deflate; server_max_window_bits"),
    DECLINE("window 7", keep, "permessage-deflate; server_max_window_bits=7"),
    DECLINE("window 16", keep, "permessage-deflate; server_max_window_bits=16"),
    DECLINE("window with a leading zero", keep, "permessage-deflate; server_max_window_bits=08"),
    DECLINE("window 015", keep, "permessage-deflate; client_max_window_bits=015"),
    DECLINE("window not a number", keep, "permessage-deflate; client_max_window_bits=1a"),
    DECLINE("window with a sign", keep, "permessage-deflate; client_max_window_bits=+9"),
    DECLINE("window 0", keep, "permessage-deflate; client_max_window_bits=0"),
    DECLINE("window far too long", keep,
            "permessage-deflate; server_max_window_bits=100000000000000000009"),
    DECLINE("empty quoted value", keep, "permessage-deflate; server_max_window_bits=\"\""),
    DECLINE("quoted value that is no token", keep,
            "permessage-deflate; server_max_window_bits=\"1 0\""),
    DECLINE("quoted value with a control byte", keep,
            "permessage-deflate; server_max_window_bits=\"1\x01\""),
    DECLINE("unterminated quote", keep, "permessage-deflate; server_max_window_bits=\"10"),
    DECLINE("quoted-pair at the end", keep, "permessage-deflate; server_max_window_bits=\"10\\"),
    DECLINE("empty value after =", keep, "permessage-deflate; client_max_window_bits="),
    DECLINE("spaces around =", keep, "permessage-deflate; client_max_window_bits = 10"),
    DECLINE("trailing semicolon", keep, "permessage-deflate;"),
    DECLINE("double semicolon", keep, "permessage-deflate;; client_max_window_bits"),
    DECLINE("value on the extension name", keep, "permessage-deflate=1"),
    DECLINE("junk after the name", keep, "permessage-deflate x"),
    DECLINE("bad byte in a parameter name", keep, "permessage-deflate; client@max_window_bits"),
    DECLINE("leading semicolon", keep, "; permessage-deflate"),
    DECLINE("all offers bad", keep,
            "permessage-deflate; server_max_window_bits=7, permessage-deflate; foo=bar, "
            "permessage-deflate; client_no_context_takeover; client_no_context_takeover"),
    DECLINE("offer inside a quoted string", keep, "foo; a=\"x, permessage-deflate\""),
    DECLINE("NUL in the value", keep, "permessage-deflate\0"),
};

/* Negotiates the case's lines (each in a guarded block, so that a read past one crashes). */
static size_t negotiate_lines(const negotiate_case_t *c, const char *const *lines, size_t nlines,
                              const size_t *lens, up_ws_deflate_params_t *p, char *out)
{
    up_slice_t values[64] = {{0}};
    for (size_t i = 0; i < nlines; i++)
        values[i] = up_slice(guarded_copy(lines[i], lens[i]), lens[i]);
    memset(p, 0xaa, sizeof(*p));
    size_t n =
        up_ws_deflate_negotiate(c->policy, values, nlines, p, out, UP_WS_DEFLATE_RESPONSE_MAX);
    for (size_t i = 0; i < nlines; i++)
        guarded_free((char *)values[i].base, lens[i]);
    return n;
}

static void check_negotiated(const negotiate_case_t *c, const char *how, size_t n,
                             const up_ws_deflate_params_t *p, const char *out)
{
    if (c->response == NULL) {
        CHECK(n == 0 && p->enabled == 0 && out[0] == '\0', "%s (%s): accepted: %s", c->name, how,
              out);
        return;
    }
    CHECK(n == strlen(c->response) && strcmp(out, c->response) == 0, "%s (%s): response '%s'",
          c->name, how, out);
    CHECK(p->enabled == 1 && p->server_no_context_takeover == c->snct &&
              p->client_no_context_takeover == c->cnct && p->server_max_window_bits == c->sbits &&
              p->client_max_window_bits == c->cbits,
          "%s (%s): params %d %d %d %d %d", c->name, how, p->enabled, p->server_no_context_takeover,
          p->client_no_context_takeover, p->server_max_window_bits, p->client_max_window_bits);
}

static void test_negotiate(void)
{
    for (size_t i = 0; i < sizeof(negotiate_cases) / sizeof(negotiate_cases[0]); i++) {
        const negotiate_case_t *c = &negotiate_cases[i];
        const char *lines[64];
        size_t lens[64], nlines = 0;
        for (size_t k = 0; k < 3 && c->lines[k] != NULL; k++) {
            lines[nlines] = c->lines[k];
            /* the NUL case: its one line holds the byte */
            lens[nlines] = strlen(c->lines[k]) + (strcmp(c->name, "NUL in the value") == 0);
            nlines++;
        }
        up_ws_deflate_params_t p;
        char out[UP_WS_DEFLATE_RESPONSE_MAX];
        size_t n = negotiate_lines(c, lines, nlines, lens, &p, out);
        check_negotiated(c, "as given", n, &p, out);

        /* The same list with each element on its own field line (split at the commas outside
         * quoted strings): RFC 9110 §5.3 makes the two the same. */
        const char *split[64];
        size_t split_lens[64], nsplit = 0;
        for (size_t k = 0; k < nlines && nsplit < 64; k++) {
            const char *s = lines[k], *start = s;
            int quoted = 0;
            for (size_t j = 0; j < lens[k] && nsplit < 63; j++) {
                if (quoted && s[j] == '\\' && j + 1 < lens[k])
                    j++;
                else if (s[j] == '"')
                    quoted = !quoted;
                else if (!quoted && s[j] == ',') {
                    split[nsplit] = start;
                    split_lens[nsplit++] = (size_t)(s + j - start);
                    start = s + j + 1;
                }
            }
            split[nsplit] = start;
            split_lens[nsplit++] = lens[k] - (size_t)(start - s);
        }
        n = negotiate_lines(c, split, nsplit, split_lens, &p, out);
        check_negotiated(c, "a line per element", n, &p, out);
    }

    /* An output buffer under the documented size is refused, not overrun. */
    up_slice_t v = UP_SLICE_LIT("permessage-deflate");
    up_ws_deflate_params_t p;
    char out[UP_WS_DEFLATE_RESPONSE_MAX];
    CHECK(up_ws_deflate_negotiate(&keep, &v, 1, &p, out, UP_WS_DEFLATE_RESPONSE_MAX - 1) == 0 &&
              p.enabled == 0,
          "small response buffer");
    CHECK(up_ws_deflate_negotiate(&keep, NULL, 0, &p, out, sizeof(out)) == 0 && p.enabled == 0,
          "no header at all");
}

/* ================================================================ helpers */

static up_buffer_pool_t pool;

static up_ws_deflate_params_t params_of(int server_nct, int client_nct, unsigned sbits,
                                        unsigned cbits)
{
    up_ws_deflate_params_t p = {1, (unsigned char)server_nct, (unsigned char)client_nct,
                                (unsigned char)sbits, (unsigned char)cbits};
    return p;
}

/* The parameters a client holds for the same agreement: its inflater reads what our deflater
 * sends, so our server side becomes its "client" side. */
static up_ws_deflate_params_t mirror(up_ws_deflate_params_t p)
{
    return params_of(p.client_no_context_takeover, p.server_no_context_takeover,
                     p.client_max_window_bits, p.server_max_window_bits);
}

/* Inflates one message fed in chunks of `step` bytes (0: whole), each chunk in its own guarded
 * block; an empty message is one empty chunk. */
static up_ws_inflate_result_t inflate_in_steps(up_ws_inflater_t *inf, const unsigned char *data,
                                               size_t len, size_t step, up_buffer_t *out)
{
    if (step == 0 || step > len)
        step = len > 0 ? len : 1;
    size_t at = 0;
    do {
        size_t n = len - at < step ? len - at : step;
        char *chunk = guarded_copy((const char *)data + at, n);
        up_ws_inflate_result_t r = up_ws_inflate(inf, chunk, n, at + n == len, out, &pool);
        guarded_free(chunk, n);
        if (r != UP_WS_INFLATE_OK)
            return r;
        at += n;
    } while (at < len);
    return UP_WS_INFLATE_OK;
}

static size_t unhex(const char *hex, unsigned char *out)
{
    size_t n = 0;
    for (const char *p = hex; *p != '\0';) {
        if (*p == ' ') {
            p++;
            continue;
        }
        unsigned v;
        sscanf(p, "%2x", &v);
        out[n++] = (unsigned char)v;
        p += 2;
    }
    return n;
}

/* ================================================================ RFC 7692 §7.2.3 examples */

typedef struct inflate_case_t {
    const char *name;
    int takeover;            /* the sender may keep its window */
    const char *messages[3]; /* hex payloads, one message each */
    const char *texts[3];    /* what each inflates to; NULL: that message fails with `error` */
    up_ws_inflate_result_t error;
} inflate_case_t;

static const inflate_case_t inflate_cases[] = {
    {"7.2.3.1 Hello in one block", 0, {"f248cdc9c90700"}, {"Hello"}, 0},
    {"7.2.3.2 second Hello refers to the first",
     1,
     {"f248cdc9c90700", "f200110000"},
     {"Hello", "Hello"},
     0},
    {"7.2.3.2 without context the reference is bad",
     0,
     {"f248cdc9c90700", "f200110000"},
     {"Hello", NULL},
     UP_WS_INFLATE_BAD_DATA},
    {"7.2.3.3 stored block", 0, {"000500faff48656c6c6f00"}, {"Hello"}, 0},
    {"7.2.3.4 final block", 0, {"f348cdc9c9070000"}, {"Hello"}, 0},
    {"7.2.3.4 final block without the stored block's byte", 0, {"f348cdc9c90700"}, {"Hello"}, 0},
    {"7.2.3.4 window carried over a final block",
     1,
     {"f348cdc9c9070000", "f200110000"},
     {"Hello", "Hello"},
     0},
    {"7.2.3.5 two blocks", 0, {"f24805000000ffffcac9c90700"}, {"Hello"}, 0},
    {"7.2.3.6 empty message", 0, {"00", "00"}, {"", ""}, 0},
    {"empty then Hello with context", 1, {"00", "f248cdc9c90700", "00"}, {"", "Hello", ""}, 0},
    {"empty payload is no DEFLATE data", 0, {""}, {NULL}, UP_WS_INFLATE_BAD_DATA},
    {"cut inside a block", 0, {"f248cd"}, {NULL}, UP_WS_INFLATE_BAD_DATA},
    {"cut inside a stored block", 0, {"000500faff4865"}, {NULL}, UP_WS_INFLATE_BAD_DATA},
    {"stored length check fails", 0, {"000500fafe48656c6c6f00"}, {NULL}, UP_WS_INFLATE_BAD_DATA},
    {"reserved block type", 0, {"07"}, {NULL}, UP_WS_INFLATE_BAD_DATA},
    {"two bytes after the final block", 0, {"f348cdc9c907000000"}, {NULL}, UP_WS_INFLATE_BAD_DATA},
    {"a non-zero byte after the final block",
     0,
     {"f348cdc9c9070001"},
     {NULL},
     UP_WS_INFLATE_BAD_DATA},
    {"a second message after a bad one",
     1,
     {"07", "f248cdc9c90700"},
     {NULL, NULL},
     UP_WS_INFLATE_BAD_DATA},
    {"distance before the start of the stream", 1, {"f200110000"}, {NULL}, UP_WS_INFLATE_BAD_DATA},
};

static void run_inflate_case(const inflate_case_t *c, const char *how, const size_t *cuts,
                             size_t ncuts, int message_to_cut)
{
    up_ws_deflate_params_t p = params_of(0, !c->takeover, 15, 15);
    up_ws_inflater_t inf;
    up_ws_inflater_init(&inf, &p, 1 << 20);
    for (size_t m = 0; m < 3 && c->messages[m] != NULL; m++) {
        unsigned char data[64];
        size_t len = unhex(c->messages[m], data);
        up_buffer_t out = {0};
        up_ws_inflate_result_t r;
        if ((int)m == message_to_cut && ncuts > 0) {
            size_t from = 0;
            r = UP_WS_INFLATE_OK;
            for (size_t k = 0; k <= ncuts && r == UP_WS_INFLATE_OK; k++) {
                size_t to = k < ncuts ? cuts[k] : len;
                char *chunk = guarded_copy((const char *)data + from, to - from);
                r = up_ws_inflate(&inf, chunk, to - from, k == ncuts, &out, &pool);
                guarded_free(chunk, to - from);
                from = to;
            }
        } else {
            r = inflate_in_steps(&inf, data, len, 0, &out);
        }
        if (c->texts[m] == NULL) {
            CHECK(r == c->error, "%s (%s): message %zu gave %d", c->name, how, m, r);
            CHECK(up_ws_inflate(&inf, "\0", 1, 1, &out, &pool) == c->error,
                  "%s (%s): error not sticky", c->name, how);
        } else {
            CHECK(r == UP_WS_INFLATE_OK && out.len == strlen(c->texts[m]) &&
                      memcmp(out.base, c->texts[m], out.len) == 0,
                  "%s (%s): message %zu gave %d, '%.*s'", c->name, how, m, r, (int)out.len,
                  out.base != NULL ? out.base : "");
            CHECK(inf.message_len == 0, "%s (%s): message_len not reset", c->name, how);
        }
        up_buffer_release(&out, &pool);
        if (c->texts[m] == NULL)
            break;
    }
    CHECK(c->takeover || inf._z == NULL, "%s (%s): stream kept without context takeover", c->name,
          how);
    up_ws_inflater_dispose(&inf);
}

static void test_inflate_examples(void)
{
    for (size_t i = 0; i < sizeof(inflate_cases) / sizeof(inflate_cases[0]); i++) {
        const inflate_case_t *c = &inflate_cases[i];
        run_inflate_case(c, "whole", NULL, 0, -1);
        for (int m = 0; m < 3 && c->messages[m] != NULL; m++) {
            unsigned char data[64];
            size_t len = unhex(c->messages[m], data);
            size_t cuts[64];
            for (size_t k = 1; k < len; k++)
                cuts[k - 1] = k;
            run_inflate_case(c, "byte at a time", cuts, len > 0 ? len - 1 : 0, m);
            for (size_t k = 0; k <= len; k++) {
                char how[48];
                snprintf(how, sizeof(how), "message %d split at %zu", m, k);
                run_inflate_case(c, how, &k, 1, m);
            }
        }
    }
}

/* ================================================================ deflating: exact bytes */

static void check_bytes(const char *name, const up_buffer_t *out, size_t from, const char *hex)
{
    unsigned char want[64];
    size_t n = unhex(hex, want);
    CHECK(out->len - from == n && memcmp(out->base + from, want, n) == 0, "%s: %zu bytes", name,
          out->len - from);
}

static void test_deflate_examples(void)
{
    up_ws_compressor_t c;
    up_ws_compressor_init(&c);
    up_buffer_t out = {0};

    /* §7.2.3.1, and the same bytes whatever came before (a shared message has no context). */
    CHECK(up_ws_compress(&c, 15, "Hello", 5, &out, &pool) == 7, "Hello");
    check_bytes("Hello compressed alone", &out, 0, "f248cdc9c90700");
    size_t from = out.len;
    up_ws_compress(&c, 15, "Hello", 5, &out, &pool);
    check_bytes("Hello again, still alone", &out, from, "f248cdc9c90700");
    from = out.len;
    CHECK(up_ws_compress(&c, 8, "", 0, &out, &pool) == 1, "empty");
    check_bytes("§7.2.3.6 empty message", &out, from, "00");
    out.len = 0;

    /* §7.2.3.2 through a deflater that keeps its context. */
    up_ws_deflate_params_t p = params_of(0, 0, 15, 15);
    up_ws_deflater_t d;
    up_ws_deflater_init(&d, &p);
    d.min_size = 0;
    CHECK(up_ws_deflate(&d, &c, "Hello", 5, &out, &pool) == 1, "first Hello");
    check_bytes("first Hello", &out, 0, "f248cdc9c90700");
    from = out.len;
    CHECK(up_ws_deflate(&d, &c, "Hello", 5, &out, &pool) == 1, "second Hello");
    check_bytes("§7.2.3.2 second Hello refers to the first", &out, from, "f200110000");
    from = out.len;
    CHECK(up_ws_deflate(&d, &c, "", 0, &out, &pool) == 1, "empty with context");
    check_bytes("empty message after a flush", &out, from, "00");
    from = out.len;
    up_ws_deflater_note_shared(&d);
    up_ws_deflate(&d, &c, "Hello", 5, &out, &pool);
    check_bytes("after a shared message: no reference back", &out, from, "f248cdc9c90700");
    up_ws_deflater_dispose(&d);

    /* Without context takeover: small or incompressible messages go out plain. */
    p = params_of(1, 0, 15, 15);
    up_ws_deflater_init(&d, &p);
    out.len = 0;
    CHECK(up_ws_deflate(&d, &c, "Hello", 5, &out, &pool) == 0 && out.len == 0, "under min_size");
    d.min_size = 0;
    CHECK(up_ws_deflate(&d, &c, "Hello", 5, &out, &pool) == 0 && out.len == 0,
          "Hello grows: sent plain");
    char text[256];
    memset(text, 'a', sizeof(text));
    CHECK(up_ws_deflate(&d, &c, text, sizeof(text), &out, &pool) == 1 && out.len < 16, "256 a's");
    CHECK(d._z == NULL, "no stream of its own without context takeover");
    up_ws_deflater_dispose(&d);

    up_buffer_release(&out, &pool);
    up_ws_compressor_dispose(&c);
}

/* ================================================================ round trips */

/* Messages of many shapes: JSON that repeats between messages, text, bytes that do not
 * compress, runs, empty ones, some longer than the largest window. Deterministic. */
#define NMESSAGES 40
typedef struct corpus_t {
    unsigned char *msg[NMESSAGES];
    size_t len[NMESSAGES];
} corpus_t;

static void corpus_make(corpus_t *c)
{
    uint32_t x = 12345;
    for (size_t i = 0; i < NMESSAGES; i++) {
        size_t len;
        switch (i % 8) {
        case 0: len = 0; break;
        case 1: len = 40 + i; break;
        case 2: len = 300; break;
        case 3: len = 1000 + 37 * i; break;
        case 4: len = 70000; break;
        case 5: len = 3; break;
        case 6: len = 5000; break;
        default: len = 600; break;
        }
        unsigned char *m = malloc(len > 0 ? len : 1);
        for (size_t k = 0; k < len; k++) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            if (i % 8 == 6)
                m[k] = (unsigned char)x; /* incompressible */
            else if (i % 8 == 4)
                m[k] = (unsigned char)("abcdefgh"[(k / 1000 + (x % 64 == 0)) % 8]);
            else
                m[k] = (unsigned char)"{\"type\":\"message\",\"user\":\"alice\",\"id\":12345,"
                                      "\"text\":\"hi\"}"[(k + i) % 56];
        }
        if (i % 8 == 7 && len > 10)
            memcpy(m, "{\"seq\":", 7), m[8] = (unsigned char)('0' + i % 10);
        c->msg[i] = m;
        c->len[i] = len;
    }
}

static void corpus_free(corpus_t *c)
{
    for (size_t i = 0; i < NMESSAGES; i++)
        free(c->msg[i]);
}

/* Sends the corpus from our deflater (params as the server agreed them) to an inflater holding
 * the client's side, each compressed message cut into chunks of `step` bytes. Every `shared_every`
 * th message (0: none) is a broadcast compressed alone instead. Checks every message arrives. */
static void round_trip(const corpus_t *corpus, up_ws_deflate_params_t p, size_t step,
                       size_t shared_every, up_ws_compressor_t *c)
{
    up_ws_deflater_t d;
    up_ws_deflater_init(&d, &p);
    d.min_size = p.server_no_context_takeover ? UP_WS_DEFLATE_MIN_SIZE : 0;
    up_ws_deflate_params_t client = mirror(p);
    up_ws_inflater_t inf;
    up_ws_inflater_init(&inf, &client, 1 << 20);
    up_buffer_t wire = {0}, got = {0};
    int ok = 1;
    for (size_t i = 0; i < NMESSAGES && ok; i++) {
        wire.len = 0;
        int compressed;
        if (shared_every > 0 && i % shared_every == shared_every - 1) {
            unsigned bits = p.server_max_window_bits;
            CHECK(up_ws_deflate_accepts_shared(&p, bits), "shared frame refused");
            up_ws_compress(c, bits, corpus->msg[i], corpus->len[i], &wire, &pool);
            up_ws_deflater_note_shared(&d);
            compressed = 1;
        } else {
            compressed = up_ws_deflate(&d, c, corpus->msg[i], corpus->len[i], &wire, &pool);
        }
        got.len = 0;
        up_ws_inflate_result_t r = UP_WS_INFLATE_OK;
        if (compressed)
            r = inflate_in_steps(&inf, (unsigned char *)wire.base, wire.len, step, &got);
        else
            up_buffer_append(&got, &pool, corpus->msg[i], corpus->len[i]);
        ok = r == UP_WS_INFLATE_OK && got.len == corpus->len[i] &&
             (got.len == 0 || memcmp(got.base, corpus->msg[i], got.len) == 0);
        CHECK(ok,
              "round trip snct %d cnct %d bits %d step %zu shared %zu: message %zu (%zu bytes, %s) "
              "gave %d, %zu bytes",
              p.server_no_context_takeover, p.client_no_context_takeover, p.server_max_window_bits,
              step, shared_every, i, corpus->len[i], compressed ? "compressed" : "plain", r,
              got.len);
    }
    if (p.server_no_context_takeover)
        CHECK(inf._z == NULL, "client inflater kept a stream without context takeover");
    up_buffer_release(&wire, &pool);
    up_buffer_release(&got, &pool);
    up_ws_inflater_dispose(&inf);
    up_ws_deflater_dispose(&d);
}

static void test_round_trips(void)
{
    corpus_t corpus;
    corpus_make(&corpus);
    up_ws_compressor_t c;
    up_ws_compressor_init(&c);
    for (unsigned bits = 8; bits <= 15; bits++)
        for (int snct = 0; snct <= 1; snct++)
            for (int cnct = 0; cnct <= 1; cnct++) {
                up_ws_deflate_params_t p = params_of(snct, cnct, bits, 15 - (bits - 8));
                round_trip(&corpus, p, 0, 0, &c);
                round_trip(&corpus, p, 0, 3, &c);
            }
    /* Chunks of every size from 1 to 64 bytes, and some larger ones. */
    up_ws_deflate_params_t keep_ctx = params_of(0, 0, 15, 15), alone = params_of(1, 1, 10, 15);
    for (size_t step = 1; step <= 64; step++) {
        round_trip(&corpus, keep_ctx, step, 0, &c);
        round_trip(&corpus, alone, step, 0, &c);
    }
    for (size_t step = 100; step < 80000; step = step * 3 + 1)
        round_trip(&corpus, keep_ctx, step, 4, &c);
    up_ws_compressor_dispose(&c);
    corpus_free(&corpus);
}

/* A shared message sent to a connection that keeps its context, without telling its deflater:
 * its next message refers back across bytes the client saw and it did not, and arrives wrong.
 * This is what up_ws_deflater_note_shared() prevents. */
static void test_shared_needs_note(void)
{
    up_ws_compressor_t c;
    up_ws_compressor_init(&c);
    up_ws_deflate_params_t p = params_of(0, 0, 15, 15), client = mirror(p);
    up_ws_deflater_t d;
    up_ws_deflater_init(&d, &p);
    up_ws_inflater_t inf;
    up_ws_inflater_init(&inf, &client, 1 << 20);
    const char *msg = "{\"type\":\"message\",\"text\":\"the same words again and again\"}";
    size_t len = strlen(msg);
    up_buffer_t wire = {0}, got = {0};
    up_ws_deflate(&d, &c, msg, len, &wire, &pool);
    CHECK(inflate_in_steps(&inf, (unsigned char *)wire.base, wire.len, 0, &got) == UP_WS_INFLATE_OK,
          "first message");
    wire.len = got.len = 0;
    up_ws_compress(&c, 15, "0123456789abcdefghijklmnopqrstuvwxyz", 36, &wire, &pool);
    CHECK(inflate_in_steps(&inf, (unsigned char *)wire.base, wire.len, 0, &got) ==
                  UP_WS_INFLATE_OK &&
              got.len == 36,
          "shared message");
    wire.len = got.len = 0;
    up_ws_deflate(&d, &c, msg, len, &wire, &pool); /* no note_shared: refers to the first */
    up_ws_inflate_result_t r =
        inflate_in_steps(&inf, (unsigned char *)wire.base, wire.len, 0, &got);
    CHECK(r != UP_WS_INFLATE_OK || got.len != len || memcmp(got.base, msg, len) != 0,
          "the message arrived intact although the windows differ");
    up_buffer_release(&wire, &pool);
    up_buffer_release(&got, &pool);
    up_ws_inflater_dispose(&inf);
    up_ws_deflater_dispose(&d);
    up_ws_compressor_dispose(&c);
}

static void test_accepts_shared(void)
{
    up_ws_deflate_params_t p8 = params_of(0, 0, 8, 15), p12 = params_of(1, 1, 12, 15),
                           p15 = params_of(0, 1, 15, 8), none = {0};
    CHECK(up_ws_deflate_accepts_shared(&p8, 8) && up_ws_deflate_accepts_shared(&p8, 9),
          "8 bits takes messages compressed with 9 (zlib's smallest, reaching back 250 bytes)");
    CHECK(!up_ws_deflate_accepts_shared(&p8, 10), "8 bits refuses 10");
    CHECK(up_ws_deflate_accepts_shared(&p12, 12) && !up_ws_deflate_accepts_shared(&p12, 13),
          "12 bits");
    CHECK(up_ws_deflate_accepts_shared(&p15, 15) && up_ws_deflate_accepts_shared(&p15, 9),
          "15 bits takes any");
    CHECK(!up_ws_deflate_accepts_shared(&none, 15) && !up_ws_deflate_accepts_shared(&none, 8),
          "not negotiated");
}

/* A 9-bit zlib stream read with an 8-bit window: the claim behind accepting
 * server_max_window_bits=8. Text with repeats at every distance up to 300 bytes. */
static void test_window_8(void)
{
    unsigned char msg[20000];
    for (size_t i = 0; i < sizeof(msg); i++)
        msg[i] = (unsigned char)("abcdefghijklmnopqrstuvwxyz"[(i * 7 + i / 300) % 26]);
    up_ws_compressor_t c;
    up_ws_compressor_init(&c);
    up_buffer_t wire = {0}, got = {0};
    size_t n = up_ws_compress(&c, 8, msg, sizeof(msg), &wire, &pool);
    CHECK(n < sizeof(msg) / 4, "compressed with 9 bits: %zu bytes", n);
    z_stream z;
    memset(&z, 0, sizeof(z));
    CHECK(inflateInit2(&z, -8) == Z_OK, "zlib inflates with 8 bits");
    up_buffer_append(&wire, &pool, "\x00\x00\xff\xff", 4);
    unsigned char *plain = malloc(sizeof(msg));
    z.next_in = (unsigned char *)wire.base;
    z.avail_in = (uInt)wire.len;
    z.next_out = plain;
    z.avail_out = sizeof(msg);
    int r = inflate(&z, Z_SYNC_FLUSH);
    CHECK(r == Z_OK && z.avail_out == 0 && memcmp(plain, msg, sizeof(msg)) == 0,
          "an 8-bit window reads it: %d (%s)", r, z.msg != NULL ? z.msg : "");
    inflateEnd(&z);
    free(plain);

    /* And our own inflater with an 8-bit window, over a deflater that keeps its context. */
    up_ws_deflate_params_t p = params_of(0, 0, 8, 15), client = mirror(p);
    up_ws_deflater_t d;
    up_ws_deflater_init(&d, &p);
    up_ws_inflater_t inf;
    up_ws_inflater_init(&inf, &client, 1 << 20);
    for (int i = 0; i < 5; i++) {
        wire.len = got.len = 0;
        up_ws_deflate(&d, &c, msg + i * 1000, 3000, &wire, &pool);
        CHECK(inflate_in_steps(&inf, (unsigned char *)wire.base, wire.len, 7, &got) ==
                      UP_WS_INFLATE_OK &&
                  got.len == 3000 && memcmp(got.base, msg + i * 1000, 3000) == 0,
              "8-bit window with context, message %d", i);
    }
    up_ws_inflater_dispose(&inf);
    up_ws_deflater_dispose(&d);
    up_buffer_release(&wire, &pool);
    up_buffer_release(&got, &pool);
    up_ws_compressor_dispose(&c);
}

/* ================================================================ limits and bad data */

/* n zeros as a client would send them compressed, at zlib's best ratio (about 1000 to 1):
 * raw DEFLATE with a sync flush, its tail dropped. */
static size_t zeros_message(size_t n, up_buffer_t *wire)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    deflateInit2(&z, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY);
    unsigned char *zeros = calloc(1, n > 0 ? n : 1);
    size_t room = n / 500 + 64;
    unsigned char *dst = (unsigned char *)up_buffer_reserve(wire, &pool, room);
    z.next_in = zeros;
    z.avail_in = (uInt)n;
    z.next_out = dst;
    z.avail_out = (uInt)room;
    CHECK(deflate(&z, Z_SYNC_FLUSH) == Z_OK && z.avail_in == 0 && z.avail_out > 0,
          "zeros compressed");
    size_t len = room - z.avail_out - 4;
    wire->len += len;
    deflateEnd(&z);
    free(zeros);
    return len;
}

static void test_bomb(void)
{
    const size_t max = 100000;
    up_ws_deflate_params_t p = params_of(0, 0, 15, 15);
    up_buffer_t wire = {0};
    size_t len = zeros_message(50u << 20, &wire); /* 50 MiB of zeros */
    CHECK(len < 100000, "the bomb is small: %zu bytes", len);
    size_t steps[] = {0, 1, 999, 4096};
    for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
        up_ws_inflater_t inf;
        up_ws_inflater_init(&inf, &p, max);
        up_buffer_t got = {0};
        up_buffer_append(&got, &pool, "earlier", 7); /* the buffer may hold bytes already */
        up_ws_inflate_result_t r =
            inflate_in_steps(&inf, (unsigned char *)wire.base, len, steps[s], &got);
        CHECK(r == UP_WS_INFLATE_TOO_BIG && up_ws_inflate_close_code(r) == 1009,
              "bomb, step %zu: %d", steps[s], r);
        CHECK(got.len == 7 + max, "bomb, step %zu: stopped at %zu bytes", steps[s], got.len);
        CHECK(got.cap <= 7 + max, "bomb, step %zu: buffer grew to %zu", steps[s], got.cap);
        CHECK(inf._z == NULL, "bomb: stream freed");
        CHECK(up_ws_inflate(&inf, "\0", 1, 1, &got, &pool) == UP_WS_INFLATE_TOO_BIG &&
                  got.len == 7 + max,
              "bomb: sticky");
        up_buffer_release(&got, &pool);
        up_ws_inflater_dispose(&inf);
    }
    up_buffer_release(&wire, &pool);

    /* Exactly max is fine, one more byte is not, whatever the chunks. */
    for (size_t n = max - 1; n <= max + 1; n++) {
        wire.len = 0;
        len = zeros_message(n, &wire);
        for (size_t step = 0; step <= 3; step++) {
            up_ws_inflater_t inf;
            up_ws_inflater_init(&inf, &p, max);
            up_buffer_t got = {0};
            up_ws_inflate_result_t r =
                inflate_in_steps(&inf, (unsigned char *)wire.base, len, step, &got);
            up_ws_inflate_result_t want = n > max ? UP_WS_INFLATE_TOO_BIG : UP_WS_INFLATE_OK;
            CHECK(r == want && got.len == (n > max ? max : n),
                  "%zu bytes under max %zu, step %zu: %d, %zu", n, max, step, r, got.len);
            if (r == UP_WS_INFLATE_OK) {
                /* and the next message starts from zero again */
                up_buffer_t again = {0};
                r = inflate_in_steps(&inf, (unsigned char *)wire.base, len, step, &again);
                CHECK(r == UP_WS_INFLATE_OK && again.len == n, "second message at max");
                up_buffer_release(&again, &pool);
            }
            up_buffer_release(&got, &pool);
            up_ws_inflater_dispose(&inf);
        }
    }
    up_buffer_release(&wire, &pool);
    /* A limit smaller than a pool chunk. */
    up_ws_inflater_t inf;
    up_ws_inflater_init(&inf, &p, 5);
    up_buffer_t got = {0};
    unsigned char hello[] = {0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00};
    CHECK(up_ws_inflate(&inf, hello, sizeof(hello), 1, &got, &pool) == UP_WS_INFLATE_OK &&
              got.len == 5,
          "Hello at max 5");
    up_ws_inflater_dispose(&inf);
    up_ws_inflater_init(&inf, &p, 4);
    got.len = 0;
    CHECK(up_ws_inflate(&inf, hello, sizeof(hello), 1, &got, &pool) == UP_WS_INFLATE_TOO_BIG &&
              got.len == 4,
          "Hello over max 4");
    up_ws_inflater_dispose(&inf);
    up_buffer_release(&got, &pool);
}

/* Random bytes as a compressed message: zlib refuses nearly all; whatever happens, the
 * inflater stays within max, never crashes, and an error sticks. */
static void test_corrupt(void)
{
    uint32_t x = 99;
    up_ws_deflate_params_t p = params_of(0, 0, 15, 15);
    int bad = 0;
    for (int round = 0; round < 300; round++) {
        unsigned char data[200];
        size_t len = 1 + round % sizeof(data);
        for (size_t i = 0; i < len; i++) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            data[i] = (unsigned char)x;
        }
        up_ws_inflater_t inf;
        up_ws_inflater_init(&inf, &p, 1000);
        up_buffer_t got = {0};
        up_ws_inflate_result_t r = inflate_in_steps(&inf, data, len, (size_t)round % 5, &got);
        bad += r == UP_WS_INFLATE_BAD_DATA;
        CHECK(got.len <= 1000, "random input inflated past max");
        if (r != UP_WS_INFLATE_OK)
            CHECK(up_ws_inflate_close_code(r) == (r == UP_WS_INFLATE_BAD_DATA ? 1007 : 1009) &&
                      inf._z == NULL,
                  "random input: close code or stream");
        up_buffer_release(&got, &pool);
        up_ws_inflater_dispose(&inf);
    }
    CHECK(bad > 250, "random bytes are refused: %d of 300", bad);

    /* A connection that closes in the middle of a message frees its stream (ASan: no leak). */
    up_ws_inflater_t inf;
    up_ws_inflater_init(&inf, &p, 1000);
    up_buffer_t got = {0};
    CHECK(up_ws_inflate(&inf, "\xf2\x48", 2, 0, &got, &pool) == UP_WS_INFLATE_OK, "half a message");
    up_ws_inflater_dispose(&inf);
    up_buffer_release(&got, &pool);
    CHECK(up_ws_inflate_close_code(UP_WS_INFLATE_OK) == 0, "no close code for OK");
}

int main(void)
{
    up_buffer_pool_init(&pool);
    test_negotiate();
    test_inflate_examples();
    test_deflate_examples();
    test_accepts_shared();
    test_window_8();
    test_shared_needs_note();
    test_round_trips();
    test_bomb();
    test_corrupt();
    up_buffer_pool_dispose(&pool);
    return test_report("websocket_deflate");
}
