/* Tests for the incremental UTF-8 validator.
 *
 * The table holds the UTF-8 sequences of the Autobahn TestSuite's section 6 (taken from Markus
 * Kuhn's UTF-8 decoder stress test) and the exact byte each invalid one must be refused at:
 * Autobahn 6.4.x wants a text message failed at the first byte that cannot be UTF-8 ("fail
 * fast"), not at its end. Every case runs whole, one byte per call and split in two at every
 * point, each piece right before an unmapped page.
 *
 * Then the validator is compared with a reference written another way (it decodes the code
 * point and asks whether any completion of a partial sequence can still be valid) on every
 * string of up to three bytes, on four-byte strings of boundary bytes, and on random strings cut
 * at random points. */

#include <stdint.h>
#include "base/utf8.h"
#include "test.h"

#define OPEN_AT_END ((size_t)-2) /* valid so far, a character still open */
#define ALL_VALID ((size_t)-1)

typedef struct utf8_case_t {
    const char *name;
    const char *bytes;
    size_t len;
    size_t bad_at; /* offset of the first invalid byte, or ALL_VALID / OPEN_AT_END */
} utf8_case_t;

#define VALID(name, s) {name, s, sizeof(s) - 1, ALL_VALID}
#define OPEN(name, s) {name, s, sizeof(s) - 1, OPEN_AT_END}
#define BAD(name, s, at) {name, s, sizeof(s) - 1, at}

/* Autobahn 6.3.1 / 6.4.x: "κόσμε", then a byte that cannot follow, then "edited". */
#define KOSME "\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5"

static const utf8_case_t cases[] = {
    VALID("empty", ""),
    VALID("ASCII", "hello world"),
    VALID("NUL is valid", "a\0b"),
    VALID("6.2.1 Latin-1 range", "Hello-\xc2\xb5@\xc3\x9f\xc3\xb6\xc3\xa4\xc3\xbc\xc3\xa0\xc3\xa1-UTF-8!!"),
    VALID("6.2.4 kosme", KOSME),
    VALID("6.5.1 U+0024", "hello\x24world"),
    VALID("6.5.2 U+00A2", "hello\xc2\xa2world"),
    VALID("6.5.3 U+20AC", "hello\xe2\x82\xacworld"),
    VALID("6.5.4 U+24B62", "hello\xf0\xa4\xad\xa2world"),
    VALID("6.7.1 first 1-byte U+0000", "\x00"),
    VALID("6.7.2 first 2-byte U+0080", "\xc2\x80"),
    VALID("6.7.3 first 3-byte U+0800", "\xe0\xa0\x80"),
    VALID("6.7.4 first 4-byte U+10000", "\xf0\x90\x80\x80"),
    BAD("6.8.1 5-byte form", "\xf8\x88\x80\x80\x80", 0),
    BAD("6.8.2 6-byte form", "\xfc\x84\x80\x80\x80\x80", 0),
    VALID("6.9.1 last 1-byte U+007F", "\x7f"),
    VALID("6.9.2 last 2-byte U+07FF", "\xdf\xbf"),
    VALID("6.9.3 last 3-byte U+FFFF", "\xef\xbf\xbf"),
    VALID("6.9.4 last U+10FFFF", "\xf4\x8f\xbf\xbf"),
    BAD("6.10.1 U+1FFFFF", "\xf7\xbf\xbf\xbf", 0),
    BAD("6.10.2 5-byte max", "\xfb\xbf\xbf\xbf\xbf", 0),
    BAD("6.10.3 6-byte max", "\xfd\xbf\xbf\xbf\xbf\xbf", 0),
    VALID("6.11.1 U+D7FF", "\xed\x9f\xbf"),
    VALID("6.11.2 U+E000", "\xee\x80\x80"),
    VALID("6.11.3 U+FFFD", "\xef\xbf\xbd"),
    VALID("6.11.4 U+10FFFF", "\xf4\x8f\xbf\xbf"),
    BAD("6.11.5 U+110000", "\xf4\x90\x80\x80", 1),
    BAD("6.12.1 lone 80", "\x80", 0),
    BAD("6.12.2 lone BF", "\xbf", 0),
    BAD("6.12.3 80 BF", "\x80\xbf", 0),
    BAD("6.12.8 continuations after ASCII", "ab\x80\xbf\x80\xbf\x80\xbf", 2),
    BAD("6.13.1 lonely C0", "\xc0\x20", 0),
    BAD("6.13.1 lonely C2 then space", "\xc2\x20", 1),
    BAD("6.13.2 lonely E1 then space", "\xe1\x20", 1),
    BAD("6.13.3 lonely F1 then space", "\xf1\x20", 1),
    BAD("6.13.4 lonely F8", "\xf8\x20", 0),
    BAD("6.13.5 lonely FC", "\xfc\x20", 0),
    BAD("6.14.1 C0 alone", "\xc0", 0),
    BAD("6.14.2 E0 80", "\xe0\x80", 1),
    BAD("6.14.3 F0 80 80", "\xf0\x80\x80", 1),
    BAD("6.14.4 F8 80 80 80", "\xf8\x80\x80\x80", 0),
    BAD("6.14.5 FC 80 80 80 80", "\xfc\x80\x80\x80\x80", 0),
    OPEN("6.14.6 DF alone", "\xdf"),
    OPEN("6.14.7 EF BF", "\xef\xbf"),
    BAD("6.14.8 F7 BF BF", "\xf7\xbf\xbf", 0),
    BAD("6.14.9 FB", "\xfb\xbf\xbf\xbf", 0),
    BAD("6.14.10 FD", "\xfd\xbf\xbf\xbf\xbf", 0),
    OPEN("last byte missing, F4 8F BF", "\xf4\x8f\xbf"),
    OPEN("last byte missing, F1 80", "\xf1\x80"),
    BAD("6.15.1 incomplete sequences one after another", "\xdf\xef\xbf", 1),
    BAD("6.16.1 FE", "\xfe", 0),
    BAD("6.16.2 FF", "\xff", 0),
    BAD("6.16.3 FE FE FF FF", "\xfe\xfe\xff\xff", 0),
    BAD("6.17.1 overlong '/' C0 AF", "\xc0\xaf", 0),
    BAD("6.17.2 overlong '/' E0 80 AF", "\xe0\x80\xaf", 1),
    BAD("6.17.3 overlong '/' F0 80 80 AF", "\xf0\x80\x80\xaf", 1),
    BAD("6.17.4 overlong '/' F8", "\xf8\x80\x80\x80\xaf", 0),
    BAD("6.17.5 overlong '/' FC", "\xfc\x80\x80\x80\x80\xaf", 0),
    BAD("6.18.1 max overlong C1 BF", "\xc1\xbf", 0),
    BAD("6.18.2 max overlong E0 9F BF", "\xe0\x9f\xbf", 1),
    BAD("6.18.3 max overlong F0 8F BF BF", "\xf0\x8f\xbf\xbf", 1),
    BAD("6.18.4 max overlong F8", "\xf8\x87\xbf\xbf\xbf", 0),
    BAD("6.18.5 max overlong FC", "\xfc\x83\xbf\xbf\xbf\xbf", 0),
    BAD("6.19.1 overlong NUL C0 80", "\xc0\x80", 0),
    BAD("6.19.2 overlong NUL E0 80 80", "\xe0\x80\x80", 1),
    BAD("6.19.3 overlong NUL F0 80 80 80", "\xf0\x80\x80\x80", 1),
    BAD("6.20.1 U+D800", "\xed\xa0\x80", 1),
    BAD("6.20.2 U+DB7F", "\xed\xad\xbf", 1),
    BAD("6.20.3 U+DB80", "\xed\xae\x80", 1),
    BAD("6.20.4 U+DBFF", "\xed\xaf\xbf", 1),
    BAD("6.20.5 U+DC00", "\xed\xb0\x80", 1),
    BAD("6.20.6 U+DF80", "\xed\xbe\x80", 1),
    BAD("6.20.7 U+DFFF", "\xed\xbf\xbf", 1),
    BAD("6.21.1 U+D800 U+DC00", "\xed\xa0\x80\xed\xb0\x80", 1),
    BAD("6.21.8 U+DBFF U+DFFF", "\xed\xaf\xbf\xed\xbf\xbf", 1),
    VALID("6.22.1 noncharacter U+FFFE", "\xef\xbf\xbe"),
    VALID("6.22.3 noncharacter U+1FFFE", "\xf0\x9f\xbf\xbe"),
    VALID("6.22.34 noncharacter U+10FFFF", "\xf4\x8f\xbf\xbf"),
    VALID("6.23.1 U+FFF9", "\xef\xbf\xb9"),
    VALID("6.23.5 replacement char", "\xef\xbf\xbd"),
    BAD("6.3.1 surrogate inside a message", KOSME "\xed\xa0\x80" "edited", 12),
    BAD("6.4.1 past U+10FFFF inside a message", KOSME "\xf4\x90\x80\x80" "edited", 12),
    BAD("invalid after an ASCII word", "abcdefgh" "abcdefgh" "\xff", 16),
    BAD("invalid inside an ASCII word", "abcdefgh" "abc\xc0" "efgh", 11),
    VALID("multibyte after ASCII words", "abcdefgh" "abcdefgh" "\xe2\x82\xac" "abcdefgh"),
    OPEN("open after ASCII words", "abcdefgh" "abcdefgh" "\xf0\x9f"),
};

/* The first invalid offset (or ALL_VALID / OPEN_AT_END) of bytes fed as pieces cut at cuts.
 * (size_t)-3 and -4 report a broken contract: a return past the piece, a call after a failure
 * that did not return 0. */
static size_t validate_pieces(const char *bytes, size_t len, const size_t *cuts, size_t ncuts)
{
    up_utf8_state_t s = UP_UTF8_ACCEPT;
    size_t from = 0, bad = ALL_VALID;
    for (size_t i = 0; i <= ncuts; i++) {
        size_t to = i < ncuts ? cuts[i] : len, n = to - from;
        char *piece = guarded_copy(bytes + from, n);
        size_t r = up_utf8_validate(&s, piece, n);
        guarded_free(piece, n);
        if (r > n)
            return (size_t)-3;
        if (bad != ALL_VALID) {
            if (r != 0 || !up_utf8_failed(s))
                return (size_t)-4;
        } else if (r < n) {
            if (!up_utf8_failed(s))
                return (size_t)-4;
            bad = from + r;
        }
        from = to;
    }
    if (bad == ALL_VALID && !up_utf8_complete(s))
        return OPEN_AT_END;
    return bad;
}

static void test_cases(void)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const utf8_case_t *c = &cases[i];
        size_t got = validate_pieces(c->bytes, c->len, NULL, 0);
        CHECK(got == c->bad_at, "%s (whole): got %zd, want %zd", c->name, (ssize_t)got, (ssize_t)c->bad_at);

        size_t cuts[64];
        for (size_t k = 1; k < c->len; k++)
            cuts[k - 1] = k;
        got = validate_pieces(c->bytes, c->len, cuts, c->len > 0 ? c->len - 1 : 0);
        CHECK(got == c->bad_at, "%s (byte at a time): got %zd, want %zd", c->name, (ssize_t)got,
              (ssize_t)c->bad_at);

        for (size_t k = 1; k < c->len; k++) {
            got = validate_pieces(c->bytes, c->len, &k, 1);
            CHECK(got == c->bad_at, "%s (split at %zu): got %zd, want %zd", c->name, k, (ssize_t)got,
                  (ssize_t)c->bad_at);
        }
        CHECK(up_utf8_valid(c->bytes, c->len) == (c->bad_at == ALL_VALID), "%s: up_utf8_valid", c->name);
    }
}

/* ---- The reference ---- */

/* Whether some code point in [lo, hi] may be encoded with a sequence whose code points lie in
 * [min, max]: not overlong, not past U+10FFFF, not a surrogate. */
static int range_has_valid(uint32_t lo, uint32_t hi, uint32_t min, uint32_t max)
{
    if (lo < min)
        lo = min;
    if (hi > max)
        hi = max;
    if (lo > hi)
        return 0;
    return !(lo >= 0xd800 && hi <= 0xdfff);
}

/* Decodes; returns the offset of the first byte after which no completion can be valid, or
 * ALL_VALID / OPEN_AT_END. */
static size_t reference(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        int m;
        uint32_t cp, min, max;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf) {
            m = 2, cp = c & 0x1f, min = 0x80, max = 0x7ff;
        } else if (c >= 0xe0 && c <= 0xef) {
            m = 3, cp = c & 0x0f, min = 0x800, max = 0xffff;
        } else if (c >= 0xf0 && c <= 0xf4) {
            m = 4, cp = c & 0x07, min = 0x10000, max = 0x10ffff;
        } else {
            return i;
        }
        for (int j = 1; j < m; j++) {
            if (i + (size_t)j == n)
                return OPEN_AT_END;
            unsigned d = s[i + (size_t)j];
            if ((d & 0xc0) != 0x80)
                return i + (size_t)j;
            cp = cp << 6 | (d & 0x3f);
            int rest = 6 * (m - 1 - j);
            uint32_t lo = cp << rest, hi = lo + ((uint32_t)1 << rest) - 1;
            if (!range_has_valid(lo, hi, min, max))
                return i + (size_t)j;
        }
        i += (size_t)m;
    }
    return ALL_VALID;
}

/* The validator on s whole (no guard pages: millions of calls). */
static size_t validate_plain(const unsigned char *s, size_t n)
{
    up_utf8_state_t st = UP_UTF8_ACCEPT;
    size_t r = up_utf8_validate(&st, (const char *)s, n);
    if (r < n)
        return r;
    return up_utf8_complete(st) ? ALL_VALID : OPEN_AT_END;
}

static void test_against_reference(void)
{
    unsigned char s[4];
    size_t mismatches = 0;

    for (uint32_t v = 0; v < (1u << 24); v++) {
        s[0] = (unsigned char)(v >> 16);
        s[1] = (unsigned char)(v >> 8);
        s[2] = (unsigned char)v;
        for (size_t n = 1; n <= 3; n++) {
            /* lengths 1 and 2 once each, on the values that end in 00 */
            if (n < 3 && (v & ((1u << (8 * (3 - n))) - 1)) != 0)
                continue;
            if (validate_plain(s, n) != reference(s, n) && mismatches++ < 10)
                CHECK(0, "%zu bytes %02x %02x %02x: validator %zd, reference %zd", n, s[0], s[1], s[2],
                      (ssize_t)validate_plain(s, n), (ssize_t)reference(s, n));
        }
    }

    static const unsigned char edge[] = {0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf,
                                         0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xed, 0xef, 0xf0, 0xf4,
                                         0xf5, 0xff};
    const size_t ne = sizeof(edge);
    for (unsigned lead = 0xf0; lead <= 0xf4; lead++)
        for (size_t a = 0; a < 256; a++)
            for (size_t b = 0; b < ne; b++)
                for (size_t c = 0; c < ne; c++) {
                    s[0] = (unsigned char)lead, s[1] = (unsigned char)a, s[2] = edge[b], s[3] = edge[c];
                    if (validate_plain(s, 4) != reference(s, 4) && mismatches++ < 10)
                        CHECK(0, "4 bytes %02x %02x %02x %02x", s[0], s[1], s[2], s[3]);
                }
    CHECK(mismatches == 0, "%zu strings where the validator and the reference disagree", mismatches);
}

/* Random strings of bytes drawn mostly from the interesting ones, cut once at random: the state
 * carried across the cut must give the same answer as the whole. */
static void test_random_splits(void)
{
    static const unsigned char pool[] = {'a', ' ', 0x00, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf,
                                         0xc2, 0xdf, 0xe0, 0xe1, 0xed, 0xee, 0xef, 0xf0, 0xf1,
                                         0xf4, 0xf5, 0xc0, 0xff};
    uint32_t x = 2463534242u;
    size_t mismatches = 0;
    unsigned char s[24];

    for (int iter = 0; iter < 1000000; iter++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        size_t n = 1 + x % sizeof(s);
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 17, x ^= x << 5;
            s[i] = (x & 0x100) ? pool[x % sizeof(pool)] : (unsigned char)x;
        }
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        size_t cut = x % (n + 1);
        up_utf8_state_t st = UP_UTF8_ACCEPT;
        size_t got, r = up_utf8_validate(&st, (const char *)s, cut);
        if (r < cut) {
            got = r;
        } else {
            r = up_utf8_validate(&st, (const char *)s + cut, n - cut);
            got = r < n - cut ? cut + r : up_utf8_complete(st) ? ALL_VALID : OPEN_AT_END;
        }
        if (got != reference(s, n) && mismatches++ < 10)
            CHECK(0, "random string of %zu cut at %zu: validator %zd, reference %zd", n, cut, (ssize_t)got,
                  (ssize_t)reference(s, n));
    }
    CHECK(mismatches == 0, "%zu random strings disagree", mismatches);
}

/* Every scalar value encodes to valid UTF-8; every surrogate is refused at its second byte. */
static size_t encode(uint32_t cp, unsigned char *out)
{
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xc0 | cp >> 6);
        out[1] = (unsigned char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xe0 | cp >> 12);
        out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (unsigned char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (unsigned char)(0xf0 | cp >> 18);
    out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (unsigned char)(0x80 | (cp & 0x3f));
    return 4;
}

static void test_every_code_point(void)
{
    size_t wrong = 0;
    unsigned char s[4];
    for (uint32_t cp = 0; cp <= 0x10ffff; cp++) {
        size_t n = encode(cp, s);
        size_t want = cp >= 0xd800 && cp <= 0xdfff ? 1 : ALL_VALID;
        if (validate_plain(s, n) != want && wrong++ < 10)
            CHECK(0, "U+%04X", cp);
    }
    CHECK(wrong == 0, "%zu code points misjudged", wrong);
}

/* A non-ASCII byte at every offset of a long ASCII run: the word-at-a-time skip must stop at
 * exactly the right byte, wherever it falls in a word. */
static void test_ascii_fast_path(void)
{
    char s[80];
    for (size_t at = 0; at < 64; at++) {
        memset(s, 'x', sizeof(s));
        s[at] = (char)0xff;
        CHECK(validate_pieces(s, sizeof(s), NULL, 0) == at, "FF at %zu", at);
        memset(s, 'x', sizeof(s));
        memcpy(s + at, "\xe2\x82\xac", 3);
        CHECK(validate_pieces(s, sizeof(s), NULL, 0) == ALL_VALID, "euro sign at %zu", at);
        CHECK(validate_pieces(s, at + 2, NULL, 0) == OPEN_AT_END, "euro sign cut at %zu", at);
    }
}

static void test_state(void)
{
    up_utf8_state_t s = UP_UTF8_ACCEPT;
    CHECK(up_utf8_validate(&s, "\xe2", 1) == 1 && !up_utf8_complete(s) && !up_utf8_failed(s),
          "an open sequence is neither complete nor failed");
    CHECK(up_utf8_validate(&s, "\x82\xac", 2) == 2 && up_utf8_complete(s), "closed by the next piece");
    CHECK(up_utf8_validate(&s, "a\xff", 2) == 1 && up_utf8_failed(s), "refused at FF");
    CHECK(up_utf8_validate(&s, "abc", 3) == 0 && up_utf8_failed(s), "a refused state sticks");
    CHECK(up_utf8_validate(&s, "", 0) == 0, "nothing, still refused");
    CHECK(up_utf8_valid("", 0), "empty text is valid");
    CHECK(!up_utf8_valid("\xc3", 1), "an open sequence is not valid text");
}

int main(void)
{
    test_cases();
    test_state();
    test_ascii_fast_path();
    test_every_code_point();
    test_against_reference();
    test_random_splits();
    return test_report("utf8");
}
