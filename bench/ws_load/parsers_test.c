/* Unit tests of ws_load's pure parts: the server frame reader and the handshake checks as
 * tables (each case whole and a byte at a time, the input ending right before an unreadable
 * page), plus the frame header writer, the latency histogram and the messages. Built
 * with ASan and UBSan by `make check`. */

#include <stdio.h>
#include <string.h>

#include "frame.h"
#include "handshake.h"
#include "histogram.h"
#include "message.h"
#include "test.h"

/* ---- frame reader ------------------------------------------------------------------------ */

/* A reader's events as text: "h<opcode>:<fin>:<length>" per header, the data of a frame in
 * brackets (its bytes when 16 or fewer, printable ones as they are, else its length), "e" per
 * end, "!<error>" for an error. Data in pieces reads the same as data in one piece. */
typedef struct {
    char text[512];
    size_t data_len;
    char data[17];
} summary_t;

static void put(summary_t *s, const char *piece)
{
    size_t at = strlen(s->text);
    snprintf(s->text + at, sizeof s->text - at, "%s%s", at ? " " : "", piece);
}

static void flush_data(summary_t *s)
{
    if (s->data_len == 0)
        return;
    char piece[48];
    if (s->data_len <= 16)
        snprintf(piece, sizeof piece, "[%s]", s->data);
    else
        snprintf(piece, sizeof piece, "[%zu bytes]", s->data_len);
    put(s, piece);
    s->data_len = 0;
    s->data[0] = '\0';
}

static void on_event(summary_t *s, const wsl_frame_event_t *ev)
{
    char piece[48];
    switch (ev->kind) {
    case WSL_FRAME_NEED_MORE: break;
    case WSL_FRAME_HEADER:
        flush_data(s);
        snprintf(piece, sizeof piece, "h%x:%d:%llu", ev->opcode, ev->fin,
                 (unsigned long long)ev->length);
        put(s, piece);
        break;
    case WSL_FRAME_DATA:
        for (size_t i = 0; i < ev->len; i++, s->data_len++)
            if (s->data_len < 16) {
                char ch = (char)ev->data[i];
                s->data[s->data_len] = ch >= 0x20 && ch < 0x7f ? ch : '.';
                s->data[s->data_len + 1] = '\0';
            }
        break;
    case WSL_FRAME_END:
        flush_data(s);
        put(s, "e");
        break;
    case WSL_FRAME_ERROR:
        flush_data(s);
        snprintf(piece, sizeof piece, "!%s", wsl_frame_error_name(ev->error));
        put(s, piece);
        break;
    }
}

/* Reads input in pieces of step bytes (0: all at once) into a summary. */
static void read_frames(const uint8_t *input, size_t len, size_t step, summary_t *s)
{
    wsl_frame_reader_t r;
    wsl_frame_reader_init(&r, 65540);
    memset(s, 0, sizeof *s);
    size_t at = 0;
    do {
        size_t piece = step && len - at > step ? step : len - at;
        char *copy = guarded_copy((const char *)input + at, piece);
        size_t used = 0;
        wsl_frame_event_t ev;
        do {
            used += wsl_frame_read(&r, (const uint8_t *)copy + used, piece - used, &ev);
            on_event(s, &ev);
        } while (ev.kind != WSL_FRAME_NEED_MORE && ev.kind != WSL_FRAME_ERROR);
        guarded_free(copy, piece);
        at += piece;
        if (ev.kind == WSL_FRAME_ERROR)
            break;
    } while (at < len);
    flush_data(s);
}

typedef struct {
    const char *name;
    const char *input;
    size_t len;
    size_t fill;      /* this many 'x' bytes follow input */
    const char *tail; /* and then these */
    size_t tail_len;
    const char *want;
} frame_case_t;

#define BYTES(s) s, sizeof s - 1

static const frame_case_t FRAME_CASES[] = {
    {"a text frame", BYTES("\x81\x05hello"), 0, "", 0, "h1:1:5 [hello] e"},
    {"an empty text frame", BYTES("\x81\x00"), 0, "", 0, "h1:1:0 e"},
    {"a binary frame with a 16-bit length", BYTES("\x82\x7e\x00\x7e"), 126, "", 0,
     "h2:1:126 [126 bytes] e"},
    {"a frame with a 64-bit length", BYTES("\x82\x7f\x00\x00\x00\x00\x00\x01\x00\x00"), 65536, "",
     0, "h2:1:65536 [65536 bytes] e"},
    {"a fragmented text message", BYTES("\x01\x03hel\x80\x02lo"), 0, "", 0,
     "h1:0:3 [hel] e h0:1:2 [lo] e"},
    {"a ping between fragments", BYTES("\x01\x03hel\x89\x01p\x80\x02lo"), 0, "", 0,
     "h1:0:3 [hel] e h9:1:1 [p] e h0:1:2 [lo] e"},
    {"a close with its code", BYTES("\x88\x02\x03\xe8"), 0, "", 0, "h8:1:2 [..] e"},
    {"an empty pong", BYTES("\x8a\x00"), 0, "", 0, "ha:1:0 e"},
    {"two frames in one read",
     BYTES("\x81\x01"
           "a\x81\x01"
           "b"),
     0, "", 0, "h1:1:1 [a] e h1:1:1 [b] e"},
    {"a message at the limit in two frames", BYTES("\x02\x7f\x00\x00\x00\x00\x00\x01\x00\x00"),
     65536,
     BYTES("\x80\x04"
           "abcd"),
     "h2:0:65536 [65536 bytes] e h0:1:4 [abcd] e"},
    /* Partial input: events so far, no error. */
    {"only the first byte of a header", BYTES("\x81"), 0, "", 0, ""},
    {"half a 16-bit length", BYTES("\x82\x7e\x00"), 0, "", 0, ""},
    {"a payload cut short", BYTES("\x81\x05hel"), 0, "", 0, "h1:1:5 [hel]"},
    {"a fragment without its end", BYTES("\x01\x02hi"), 0, "", 0, "h1:0:2 [hi] e"},
    /* Rejections. */
    {"a masked server frame", BYTES("\x81\x85\x01\x02\x03\x04hello"), 0, "", 0,
     "!masked server frame"},
    {"RSV1 without an extension", BYTES("\xc1\x05hello"), 0, "", 0, "!reserved bits set"},
    {"RSV3 without an extension", BYTES("\x91\x00"), 0, "", 0, "!reserved bits set"},
    {"reserved data opcode 3", BYTES("\x83\x00"), 0, "", 0, "!reserved opcode"},
    {"reserved control opcode 0xb", BYTES("\x8b\x00"), 0, "", 0, "!reserved opcode"},
    {"a ping over 125 bytes", BYTES("\x89\x7e\x00\x7e"), 0, "", 0, "!control frame over 125 bytes"},
    {"a fragmented ping", BYTES("\x09\x00"), 0, "", 0, "!fragmented control frame"},
    {"a continuation with no message", BYTES("\x80\x01x"), 0, "", 0,
     "!continuation without a message"},
    {"a text frame inside a fragmented message",
     BYTES("\x01\x01"
           "a\x81\x01"
           "b"),
     0, "", 0, "h1:0:1 [a] e !data frame inside a fragmented message"},
    {"a 16-bit length below 126", BYTES("\x81\x7e\x00\x05hello"), 0, "", 0,
     "!length not in its shortest form"},
    {"a 64-bit length below 65536", BYTES("\x81\x7f\x00\x00\x00\x00\x00\x00\x00\x7e"), 0, "", 0,
     "!length not in its shortest form"},
    {"a 64-bit length with its top bit", BYTES("\x81\x7f\x80\x00\x00\x00\x00\x00\x00\x00"), 0, "",
     0, "!length not in its shortest form"},
    {"a frame over the limit", BYTES("\x82\x7f\x00\x00\x00\x00\x00\x20\x00\x00"), 0, "", 0,
     "!message too big"},
    {"a message over the limit in two frames", BYTES("\x02\x7f\x00\x00\x00\x00\x00\x01\x00\x00"),
     65536,
     BYTES("\x80\x05"
           "abcde"),
     "h2:0:65536 [65536 bytes] e !message too big"},
};

static void test_frame_reader(void)
{
    static uint8_t input[70000];
    for (size_t i = 0; i < sizeof FRAME_CASES / sizeof *FRAME_CASES; i++) {
        const frame_case_t *c = &FRAME_CASES[i];
        size_t len = 0;
        memcpy(input, c->input, c->len);
        len += c->len;
        memset(input + len, 'x', c->fill);
        len += c->fill;
        memcpy(input + len, c->tail, c->tail_len);
        len += c->tail_len;
        summary_t whole, bytes;
        read_frames(input, len, 0, &whole);
        CHECK(strcmp(whole.text, c->want) == 0, "%s, whole: got \"%s\", want \"%s\"", c->name,
              whole.text, c->want);
        if (len < 1024) {
            read_frames(input, len, 1, &bytes);
            CHECK(strcmp(bytes.text, c->want) == 0, "%s, byte at a time: got \"%s\"", c->name,
                  bytes.text);
        } else {
            read_frames(input, len, 7, &bytes); /* long payloads: 7 bytes at a time */
            CHECK(strcmp(bytes.text, c->want) == 0, "%s, 7 bytes at a time: got \"%s\"", c->name,
                  bytes.text);
        }
    }
}

static void test_frame_header(void)
{
    static const struct {
        uint64_t len;
        size_t header;
        const char *want;
    } cases[] = {
        {5, 6, "\x81\x85"},
        {125, 6, "\x81\xfd"},
        {126, 8, "\x81\xfe\x00\x7e"},
        {65535, 8, "\x81\xfe\xff\xff"},
        {65536, 14, "\x81\xff\x00\x00\x00\x00\x00\x01\x00\x00"},
    };
    const uint8_t mask[4] = {1, 2, 3, 4};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        uint8_t out[WSL_FRAME_HEADER_MAX];
        size_t n = wsl_frame_header(out, WSL_OP_TEXT, true, cases[i].len, mask);
        CHECK(n == cases[i].header, "length %llu: header of %zu bytes",
              (unsigned long long)cases[i].len, n);
        CHECK(memcmp(out, cases[i].want, n - 4) == 0 && memcmp(out + n - 4, mask, 4) == 0,
              "length %llu: header bytes", (unsigned long long)cases[i].len);
    }
    uint8_t fragment[WSL_FRAME_HEADER_MAX];
    wsl_frame_header(fragment, WSL_OP_BINARY, false, 1, mask);
    CHECK(fragment[0] == 0x02, "no FIN: %02x", fragment[0]);

    /* Masking in pieces equals masking at once (§5.3), and twice gives the text back. */
    uint8_t once[] = "a payload to mask", pieces[] = "a payload to mask";
    wsl_frame_mask(once, sizeof once - 1, mask, 0);
    wsl_frame_mask(pieces, 5, mask, 0);
    wsl_frame_mask(pieces + 5, sizeof pieces - 6, mask, 5);
    CHECK(memcmp(once, pieces, sizeof once) == 0, "masking in pieces");
    CHECK(once[0] == ('a' ^ 1) && once[1] == (' ' ^ 2), "mask bytes in order");
    wsl_frame_mask(once, sizeof once - 1, mask, 0);
    CHECK(strcmp((char *)once, "a payload to mask") == 0, "unmasked: %s", once);
}

/* ---- handshake --------------------------------------------------------------------------- */

/* RFC 6455 §1.3's example key and the accept it gives. */
#define KEY "dGhlIHNhbXBsZSBub25jZQ=="
#define ACCEPT "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
#define GOOD_HEAD                                                                                  \
    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"            \
    "Sec-WebSocket-Accept: " ACCEPT "\r\n\r\n"

#define LOOSE_HEAD                                                                                 \
    "HTTP/1.1 101 OK\r\nDate: Thu, 01 Jan 2026 00:00:00 GMT\r\nupgrade: WebSocket\r\n"             \
    "CONNECTION: keep-alive,  upgrade \r\nsec-websocket-accept:   " ACCEPT "  \r\n\r\n"

typedef struct {
    const char *name;
    const char *input;
    long want; /* the head's length, 0 for "not complete yet", -1 for a refusal */
    wsl_handshake_error_t error;
} handshake_case_t;

static const handshake_case_t HANDSHAKE_CASES[] = {
    {"a plain 101", GOOD_HEAD, sizeof GOOD_HEAD - 1, WSL_HANDSHAKE_OK},
    {"names in any case, tokens in a list, spaces around values", LOOSE_HEAD, sizeof LOOSE_HEAD - 1,
     WSL_HANDSHAKE_OK},
    {"frames right after the head", GOOD_HEAD "\x81\x02hi", sizeof GOOD_HEAD - 1, WSL_HANDSHAKE_OK},
    /* Partial input. */
    {"a head without its blank line", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n",
     0, WSL_HANDSHAKE_OK},
    {"only the start of the status line", "HTTP/1.1 10", 0, WSL_HANDSHAKE_OK},
    /* Rejections. */
    {"a 200", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", -1, WSL_HANDSHAKE_STATUS},
    {"a 426", "HTTP/1.1 426 Upgrade Required\r\n\r\n", -1, WSL_HANDSHAKE_STATUS},
    {"HTTP/1.0", "HTTP/1.0 101 Switching Protocols\r\n\r\n", -1, WSL_HANDSHAKE_STATUS},
    {"a four-digit status", "HTTP/1.1 1010 Nope\r\n\r\n", -1, WSL_HANDSHAKE_STATUS},
    {"no Upgrade header",
     "HTTP/1.1 101 X\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " ACCEPT "\r\n\r\n", -1,
     WSL_HANDSHAKE_UPGRADE},
    {"Upgrade to another protocol",
     "HTTP/1.1 101 X\r\nUpgrade: h2c\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " ACCEPT
     "\r\n\r\n",
     -1, WSL_HANDSHAKE_UPGRADE},
    {"Connection without upgrade",
     "HTTP/1.1 101 X\r\nUpgrade: websocket\r\nConnection: close\r\nSec-WebSocket-Accept: " ACCEPT
     "\r\n\r\n",
     -1, WSL_HANDSHAKE_CONNECTION},
    {"no Sec-WebSocket-Accept",
     "HTTP/1.1 101 X\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", -1,
     WSL_HANDSHAKE_ACCEPT},
    {"a wrong Sec-WebSocket-Accept",
     "HTTP/1.1 101 X\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
     "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOA=\r\n\r\n",
     -1, WSL_HANDSHAKE_ACCEPT},
    {"two Sec-WebSocket-Accept",
     "HTTP/1.1 101 X\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " ACCEPT
     "\r\nSec-WebSocket-Accept: " ACCEPT "\r\n\r\n",
     -1, WSL_HANDSHAKE_ACCEPT},
    {"an extension nobody asked for",
     "HTTP/1.1 101 X\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " ACCEPT
     "\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n",
     -1, WSL_HANDSHAKE_EXTENSION},
    {"a subprotocol nobody asked for",
     "HTTP/1.1 101 X\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " ACCEPT
     "\r\nSec-WebSocket-Protocol: chat\r\n\r\n",
     -1, WSL_HANDSHAKE_EXTENSION},
    {"a folded header", "HTTP/1.1 101 X\r\nUpgrade: websocket\r\n  more\r\n\r\n", -1,
     WSL_HANDSHAKE_MALFORMED},
    {"a line without a colon", "HTTP/1.1 101 X\r\nUpgrade websocket\r\n\r\n", -1,
     WSL_HANDSHAKE_MALFORMED},
    {"an empty header name", "HTTP/1.1 101 X\r\n: websocket\r\n\r\n", -1, WSL_HANDSHAKE_MALFORMED},
    {"a bare LF inside a line", "HTTP/1.1 101 X\r\nUpgrade: web\nsocket\r\n\r\n", -1,
     WSL_HANDSHAKE_MALFORMED},
    {"a bare CR inside a line", "HTTP/1.1 101 X\r\nUpgrade: web\rsocket\r\n\r\n", -1,
     WSL_HANDSHAKE_MALFORMED},
};

/* Parses the first len bytes of input from a guarded copy. */
static long parse_head(const char *input, size_t len, wsl_handshake_error_t *error)
{
    char *copy = guarded_copy(input, len);
    long n = wsl_handshake_parse(copy, len, ACCEPT, error);
    guarded_free(copy, len);
    return n;
}

static void test_handshake_parse(void)
{
    for (size_t i = 0; i < sizeof HANDSHAKE_CASES / sizeof *HANDSHAKE_CASES; i++) {
        const handshake_case_t *c = &HANDSHAKE_CASES[i];
        size_t len = strlen(c->input);
        wsl_handshake_error_t error = WSL_HANDSHAKE_OK;
        long n = parse_head(c->input, len, &error);
        CHECK(n == c->want && (n >= 0 || error == c->error), "%s, whole: got %ld (%s)", c->name, n,
              n < 0 ? wsl_handshake_error_name(error) : "");
        /* As the bytes arrive one by one: "not complete" until the same answer. */
        long first = 0;
        size_t at;
        for (at = 1; at <= len && first == 0; at++)
            first = parse_head(c->input, at, &error);
        CHECK(first == c->want && (first >= 0 || error == c->error),
              "%s, byte at a time: got %ld (%s) at byte %zu", c->name, first,
              first < 0 ? wsl_handshake_error_name(error) : "", at - 1);
    }

    /* A head that never ends is refused once it passes the limit. */
    static char huge[WSL_HANDSHAKE_MAX + 64];
    int n = snprintf(huge, sizeof huge, "HTTP/1.1 101 X\r\nX-Big: ");
    memset(huge + n, 'a', sizeof huge - (size_t)n);
    wsl_handshake_error_t error;
    CHECK(parse_head(huge, WSL_HANDSHAKE_MAX - 1, &error) == 0, "below the limit: not complete");
    CHECK(parse_head(huge, WSL_HANDSHAKE_MAX, &error) == -1 && error == WSL_HANDSHAKE_TOO_LONG,
          "at the limit: too long");
}

static void test_handshake_key_and_request(void)
{
    char key[WSL_KEY_LEN], accept[WSL_ACCEPT_LEN];
    wsl_handshake_key((const uint8_t *)"the sample nonce", key);
    CHECK(strcmp(key, KEY) == 0, "key %s", key);
    wsl_handshake_accept(KEY, accept);
    CHECK(strcmp(accept, ACCEPT) == 0, "accept %s", accept);

    char out[512];
    size_t n = wsl_handshake_request(out, sizeof out, "127.0.0.1:8080", "/chat", KEY);
    CHECK(n == strlen(out) &&
              strncmp(out, "GET /chat HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n", 42) == 0,
          "request: %s", out);
    CHECK(strstr(out, "Sec-WebSocket-Key: " KEY "\r\n") &&
              strstr(out, "Sec-WebSocket-Version: 13\r\n") &&
              strstr(out, "Upgrade: websocket\r\n") && strstr(out, "Connection: Upgrade\r\n") &&
              n > 4 && strcmp(out + n - 4, "\r\n\r\n") == 0,
          "request headers: %s", out);
    CHECK(wsl_handshake_request(out, 40, "127.0.0.1:8080", "/chat", KEY) == 0,
          "too small a buffer");
}

/* ---- SHA-1, histogram, messages ---------------------------------------------------------- */

static void test_histogram(void)
{
    static wsl_histogram_t h;
    CHECK(wsl_histogram_percentile(&h, 0.5) == 0, "empty");
    for (uint64_t v = 1; v <= 100000; v++)
        wsl_histogram_add(&h, v * 1000);
    uint64_t p50 = wsl_histogram_percentile(&h, 0.50), p99 = wsl_histogram_percentile(&h, 0.99);
    CHECK(p50 >= 50000000 && p50 <= 50000000 + 50000000 / 64, "p50 %llu", (unsigned long long)p50);
    CHECK(p99 >= 99000000 && p99 <= 99000000 + 99000000 / 64, "p99 %llu", (unsigned long long)p99);
    CHECK(wsl_histogram_percentile(&h, 1.0) == 100000000, "p100 is the max");
    static wsl_histogram_t small;
    for (uint64_t v = 0; v < 64; v++)
        wsl_histogram_add(&small, v);
    CHECK(wsl_histogram_percentile(&small, 0.5) == 31, "exact below 64: %llu",
          (unsigned long long)wsl_histogram_percentile(&small, 0.5));
    static wsl_histogram_t huge;
    wsl_histogram_add(&huge, UINT64_MAX);
    CHECK(wsl_histogram_percentile(&huge, 0.5) == UINT64_MAX, "the largest value");
}

static void test_messages(void)
{
    uint8_t msg[100];
    wsl_message_write(msg, sizeof msg, 0x1234, 0xabcdef);
    CHECK(memcmp(msg, "0000000000001234 0000000000abcdef i", 35) == 0, "head: %.35s", msg);
    uint64_t seq, ns;
    CHECK(wsl_message_parse(msg, &seq, &ns) && seq == 0x1234 && ns == 0xabcdef, "parsed");
    CHECK(wsl_message_matches(sizeof msg, 0x1234, 0xabcdef, 0, msg, sizeof msg), "matches whole");
    CHECK(wsl_message_matches(sizeof msg, 0x1234, 0xabcdef, 10, msg + 10, 30), "matches a piece");
    CHECK(!wsl_message_matches(sizeof msg, 0x1235, 0xabcdef, 0, msg, sizeof msg), "another seq");
    CHECK(!wsl_message_matches(sizeof msg, 0x1234, 0xabcdef, 13, msg + 12, 10), "shifted");
    CHECK(!wsl_message_matches(sizeof msg, 0x1234, 0xabcdef, 90, msg + 90, 11), "past the end");
    msg[60] ^= 1;
    CHECK(!wsl_message_matches_tail(sizeof msg, 0, msg, sizeof msg), "a changed filler byte");
    msg[60] ^= 1;
    msg[3] = 'x';
    CHECK(!wsl_message_parse(msg, &seq, &ns), "not hex");
    wsl_message_write_probe(msg, sizeof msg);
    CHECK(wsl_message_is_probe(msg, sizeof msg) && !wsl_message_parse(msg, &seq, &ns), "a probe");
    CHECK(wsl_message_matches_tail(sizeof msg, 0, msg, sizeof msg), "a probe's filler");
}

int main(void)
{
    test_frame_reader();
    test_frame_header();
    test_handshake_parse();
    test_handshake_key_and_request();
    test_histogram();
    test_messages();
    return test_report("ws_load parsers");
}
