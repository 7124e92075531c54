/* Tests for the WebSocket frame reader and writer (RFC 6455 §5), written from the Autobahn
 * TestSuite's case list: sections 1 (framing), 2 (ping/pong), 3 (reserved bits), 4 (opcodes),
 * 5 (fragmentation), 6 (UTF-8, as a reader's caller checks it while the payload streams),
 * 7 (close frames) and 9 (large messages and the size limit).
 *
 * A case is a list of frames, built here with an encoder of the test's own (not the module's
 * writer), and the events the reader must report, written as a string:
 *   T[...] / B[...]   a text / binary message, logged when it ends; T*[ / B*[ when compressed;
 *                     an unterminated T[... is a message still open when the input ended
 *   ping[...] pong[...] close[...]   control frames, logged when read
 *   !1002             the reader failed with that close code
 *   ~N                a Close was read and the N bytes after it were left unread
 * Bytes outside printable ASCII are logged as \xNN. Every case runs whole, one byte per call,
 * split in two at every point, and with a pause after every event; each piece lies right before
 * an unmapped page. All must log the same. */

#include <stdint.h>
#include "base/utf8.h"
#include "websocket/websocket_frame.h"
#include "test.h"

/* ---- A growable byte string ---- */

typedef struct bytes_t {
    char *p;
    size_t len, cap;
} bytes_t;

static void bytes_add(bytes_t *b, const void *data, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (b->len + n + 1 > cap)
            cap *= 2;
        b->p = realloc(b->p, cap);
        if (b->p == NULL)
            abort();
        b->cap = cap;
    }
    if (n > 0)
        memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void bytes_str(bytes_t *b, const char *s)
{
    bytes_add(b, s, strlen(s));
}

static void bytes_escaped(bytes_t *b, const char *data, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)data[i];
        if (c >= 0x20 && c < 0x7f && c != '[' && c != ']' && c != '\\') {
            bytes_add(b, &c, 1);
        } else {
            char hex[5];
            snprintf(hex, sizeof(hex), "\\x%02x", c);
            bytes_add(b, hex, 4);
        }
    }
}

static void bytes_free(bytes_t *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

/* ---- Building frames ---- */

enum { P_FRAME = 1, P_MASKED, P_PLAIN, P_RAW };

typedef struct piece_t {
    int kind;   /* P_FRAME: masked, or plain for a reader of server frames */
    uint8_t b0; /* FIN, RSV, opcode */
    const char *data;
    size_t len;
} piece_t;

/* The key of the n-th frame of a case: a different one each, none with a zero byte. */
static void key_for(size_t n, uint8_t key[4])
{
    key[0] = (uint8_t)(0x9a + 7 * n), key[1] = 0x3c, key[2] = (uint8_t)(0x51 ^ n), key[3] = 0xe7;
}

/* A frame: header with the length in its shortest form, key, payload masked byte by byte. */
static void encode_frame(bytes_t *out, uint8_t b0, const char *payload, size_t len, int masked, size_t n)
{
    uint8_t h[14], key[4];
    size_t hl = 2;
    h[0] = b0;
    h[1] = masked ? 0x80 : 0;
    if (len < 126) {
        h[1] |= (uint8_t)len;
    } else if (len < 65536) {
        h[1] |= 126, h[2] = (uint8_t)(len >> 8), h[3] = (uint8_t)len, hl = 4;
    } else {
        h[1] |= 127;
        for (int i = 0; i < 8; i++)
            h[2 + i] = (uint8_t)((uint64_t)len >> (56 - 8 * i));
        hl = 10;
    }
    key_for(n, key);
    if (masked) {
        memcpy(h + hl, key, 4);
        hl += 4;
    }
    bytes_add(out, h, hl);
    size_t at = out->len;
    bytes_add(out, payload, len);
    if (masked)
        for (size_t i = 0; i < len; i++)
            out->p[at + i] = (char)(out->p[at + i] ^ key[i & 3]);
}

#define MAX_PIECES 12

typedef struct frame_case_t {
    const char *name;
    unsigned flags;        /* UP_WS_READER_* */
    uint64_t max_message;
    piece_t pieces[MAX_PIECES];
    const char *expect;
} frame_case_t;

#define FR(b0, s) {P_FRAME, b0, s, sizeof(s) - 1}
#define MASKED(b0, s) {P_MASKED, b0, s, sizeof(s) - 1}
#define PLAIN(b0, s) {P_PLAIN, b0, s, sizeof(s) - 1}
#define RAW(s) {P_RAW, 0, s, sizeof(s) - 1}
#define TEXT(s) FR(0x81, s)
#define TEXT_MORE(s) FR(0x01, s)
#define BIN(s) FR(0x82, s)
#define BIN_MORE(s) FR(0x02, s)
#define CONT(s) FR(0x80, s)
#define CONT_MORE(s) FR(0x00, s)
#define PING(s) FR(0x89, s)
#define PONG(s) FR(0x8a, s)
#define CLOSE(s) FR(0x88, s)

#define S5 "*****"
#define S25 S5 S5 S5 S5 S5
#define S123 S25 S25 S25 S25 S5 S5 S5 S5 "***"
#define S125 S25 S25 S25 S25 S25
#define HELLO "Hello, world!"
#define MASK4 "\x01\x02\x03\x04"

static const frame_case_t cases[] = {
    /* 1: framing */
    {"1.1.1 empty text", 0, 0, {TEXT("")}, "T[]"},
    {"1.1.2 text of 125", 0, 0, {TEXT(S125)}, "T[" S125 "]"},
    {"1.1.3 text of 126 (16-bit length)", 0, 0, {TEXT(S125 "*")}, "T[" S125 "*]"},
    {"1.2.1 empty binary", 0, 0, {BIN("")}, "B[]"},
    {"1.2.2 binary", 0, 0, {BIN("\x00\xff\xfe\xfd")}, "B[\\x00\\xff\\xfe\\xfd]"},
    {"two messages in a row", 0, 0, {TEXT("one"), BIN("two")}, "T[one]B[two]"},
    {"partial: first header byte", 0, 0, {RAW("\x81")}, ""},
    {"partial: header without key", 0, 0, {RAW("\x81\x85")}, ""},
    {"partial: key cut", 0, 0, {RAW("\x81\x85\x01\x02")}, ""},
    {"partial: payload cut", 0, 0, {RAW("\x81\x85" MASK4 "\x49\x67")}, "T[He"},
    {"partial: 16-bit length cut", 0, 0, {RAW("\x82\xfe\x01")}, ""},
    {"partial: 64-bit length cut", 0, 0, {RAW("\x82\xff\x00\x00\x00\x00\x00\x01")}, ""},
    {"partial: ping payload cut", 0, 0, {RAW("\x89\x85" MASK4 "\x49\x67")}, ""},
    {"unmasked client frame", 0, 0, {PLAIN(0x81, "Hi")}, "!1002"},
    {"unmasked after a good frame", 0, 0, {TEXT("ok"), PLAIN(0x89, "")}, "T[ok]!1002"},
    {"16-bit length under 126", 0, 0, {RAW("\x81\xfe\x00\x7d" MASK4)}, "!1002"},
    {"16-bit length of 0", 0, 0, {RAW("\x81\xfe\x00\x00")}, "!1002"},
    {"64-bit length under 65536", 0, 0, {RAW("\x82\xff\x00\x00\x00\x00\x00\x00\xff\xff")}, "!1002"},
    {"64-bit length of 126", 0, 0, {RAW("\x82\xff\x00\x00\x00\x00\x00\x00\x00\x7e")}, "!1002"},
    {"64-bit length with the top bit set", 0, 0, {RAW("\x82\xff\x80\x00\x00\x00\x00\x00\x00\x00")}, "!1002"},
    {"64-bit length, top bit, no limit", 0, 0, {RAW("\x82\xff\xff\xff\xff\xff\xff\xff\xff\xff")}, "!1002"},
    {"64-bit length of 2^62 streams", 0, 0, {RAW("\x82\xff\x40\x00\x00\x00\x00\x00\x00\x00" "\0\0\0\0" "ab")},
     "B[ab"},
    /* 2: ping and pong */
    {"2.1 ping without payload", 0, 0, {PING("")}, "ping[]"},
    {"2.2 ping with text", 0, 0, {PING(HELLO)}, "ping[" HELLO "]"},
    {"2.3 ping with binary", 0, 0, {PING("\x00\xff\xfe\xfd\xfc\xfb\x00\xff")},
     "ping[\\x00\\xff\\xfe\\xfd\\xfc\\xfb\\x00\\xff]"},
    {"2.4 ping of 125", 0, 0, {PING(S125)}, "ping[" S125 "]"},
    {"2.5 ping of 126", 0, 0, {PING(S125 "*")}, "!1002"},
    {"2.5 ping announcing 127", 0, 0, {RAW("\x89\xff")}, "!1002"},
    {"2.7 pong without payload", 0, 0, {PONG("")}, "pong[]"},
    {"2.8 unsolicited pong", 0, 0, {PONG("unsolicited pong payload")}, "pong[unsolicited pong payload]"},
    {"2.9 pong then ping", 0, 0, {PONG("unsolicited pong payload"), PING("ping payload")},
     "pong[unsolicited pong payload]ping[ping payload]"},
    {"2.10 ten pings", 0, 0,
     {PING("payload-0"), PING("payload-1"), PING("payload-2"), PING("payload-3"), PING("payload-4"),
      PING("payload-5"), PING("payload-6"), PING("payload-7"), PING("payload-8"), PING("payload-9")},
     "ping[payload-0]ping[payload-1]ping[payload-2]ping[payload-3]ping[payload-4]ping[payload-5]"
     "ping[payload-6]ping[payload-7]ping[payload-8]ping[payload-9]"},
    /* 3: reserved bits */
    {"3.1 RSV1 without deflate", 0, 0, {FR(0xc1, HELLO)}, "!1002"},
    {"3.2 RSV2 after a message", 0, 0, {TEXT(HELLO), FR(0xa1, HELLO), PING("")}, "T[" HELLO "]!1002"},
    {"3.3 RSV1+2 after a message", 0, 0, {TEXT(HELLO), FR(0xe1, HELLO), PING("")}, "T[" HELLO "]!1002"},
    {"3.4 RSV3 after a message", 0, 0, {TEXT(HELLO), FR(0x91, HELLO), PING("")}, "T[" HELLO "]!1002"},
    {"3.5 binary with RSV1+3", 0, 0, {FR(0xd2, "\x00\xff")}, "!1002"},
    {"3.6 ping with RSV2+3", 0, 0, {FR(0xb9, HELLO)}, "!1002"},
    {"3.7 close with all RSV", 0, 0, {FR(0xf8, "")}, "!1002"},
    {"RSV2 with deflate on", UP_WS_READER_DEFLATE, 0, {FR(0xa1, HELLO)}, "!1002"},
    {"deflate: RSV1 marks a compressed message", UP_WS_READER_DEFLATE, 0, {FR(0xc1, "zz")}, "T*[zz]"},
    {"deflate: compressed binary", UP_WS_READER_DEFLATE, 0, {FR(0xc2, "zz")}, "B*[zz]"},
    {"deflate: uncompressed message", UP_WS_READER_DEFLATE, 0, {TEXT("plain")}, "T[plain]"},
    {"deflate: fragments of a compressed message", UP_WS_READER_DEFLATE, 0,
     {FR(0x41, "ab"), PING("x"), CONT_MORE("cd"), CONT("ef")}, "ping[x]T*[abcdef]"},
    {"deflate: RSV1 on a continuation", UP_WS_READER_DEFLATE, 0, {FR(0x41, "ab"), FR(0xc0, "cd")},
     "T*[ab!1002"},
    {"deflate: RSV1 on a continuation of a plain message", UP_WS_READER_DEFLATE, 0,
     {TEXT_MORE("ab"), FR(0xc0, "cd")}, "T[ab!1002"},
    {"deflate: RSV1 on a ping", UP_WS_READER_DEFLATE, 0, {FR(0xc9, "")}, "!1002"},
    {"deflate: RSV1 on a close", UP_WS_READER_DEFLATE, 0, {FR(0xc8, "\x03\xe8")}, "!1002"},
    /* 4: opcodes */
    {"4.1.1 opcode 3", 0, 0, {FR(0x83, "")}, "!1002"},
    {"4.1.2 opcode 4 with payload", 0, 0, {FR(0x84, "reserved opcode payload")}, "!1002"},
    {"4.1.3 opcode 5 after a message", 0, 0, {TEXT(HELLO), FR(0x85, ""), PING("")}, "T[" HELLO "]!1002"},
    {"4.1.4 opcode 6 after a message", 0, 0, {TEXT(HELLO), FR(0x86, HELLO), PING("")}, "T[" HELLO "]!1002"},
    {"4.1.5 opcode 7 after a message", 0, 0, {TEXT(HELLO), FR(0x87, HELLO), PING("")}, "T[" HELLO "]!1002"},
    {"4.2.1 opcode 11", 0, 0, {FR(0x8b, "")}, "!1002"},
    {"4.2.2 opcode 12 with payload", 0, 0, {FR(0x8c, "reserved opcode payload")}, "!1002"},
    {"4.2.3 opcode 13 after a message", 0, 0, {TEXT(HELLO), FR(0x8d, ""), PING("")}, "T[" HELLO "]!1002"},
    {"4.2.4 opcode 14 after a message", 0, 0, {TEXT(HELLO), FR(0x8e, HELLO), PING("")}, "T[" HELLO "]!1002"},
    {"4.2.5 opcode 15 after a message", 0, 0, {TEXT(HELLO), FR(0x8f, HELLO), PING("")}, "T[" HELLO "]!1002"},
    {"reserved opcode inside a fragmented message", 0, 0, {TEXT_MORE("a"), FR(0x83, "")}, "T[a!1002"},
    /* 5: fragmentation */
    {"5.1 fragmented ping", 0, 0, {FR(0x09, "fragment1"), CONT("fragment2")}, "!1002"},
    {"5.2 fragmented pong", 0, 0, {FR(0x0a, "fragment1"), CONT("fragment2")}, "!1002"},
    {"fragmented close", 0, 0, {FR(0x08, "\x03\xe8")}, "!1002"},
    {"5.3 text in two fragments", 0, 0, {TEXT_MORE("fragment1"), CONT("fragment2")}, "T[fragment1fragment2]"},
    {"binary in three fragments", 0, 0, {BIN_MORE("a"), CONT_MORE("\x00"), CONT("c")}, "B[a\\x00c]"},
    {"5.6 ping between fragments", 0, 0, {TEXT_MORE("fragment1"), PING("ping payload"), CONT("fragment2")},
     "ping[ping payload]T[fragment1fragment2]"},
    {"5.9 continuation with nothing to continue", 0, 0,
     {CONT("non-continuation payload"), TEXT(HELLO)}, "!1002"},
    {"5.12 unfinished continuation with nothing to continue", 0, 0,
     {CONT_MORE("non-continuation payload"), TEXT(HELLO)}, "!1002"},
    {"5.15 continuation after the message ended", 0, 0,
     {TEXT_MORE("fragment1"), CONT("fragment2"), CONT_MORE("fragment3"), TEXT("fragment4")},
     "T[fragment1fragment2]!1002"},
    {"5.16 continuation first, twice", 0, 0,
     {CONT_MORE("fragment1"), TEXT_MORE("fragment2"), CONT("fragment3")}, "!1002"},
    {"5.17 finished continuation first", 0, 0,
     {CONT("fragment1"), TEXT_MORE("fragment2"), CONT("fragment3")}, "!1002"},
    {"5.18 text while a text is open", 0, 0, {TEXT_MORE("fragment1"), TEXT("fragment2")}, "T[fragment1!1002"},
    {"binary while a text is open", 0, 0, {TEXT_MORE("fragment1"), BIN("x")}, "T[fragment1!1002"},
    {"5.19 pings between five fragments", 0, 0,
     {TEXT_MORE("fragment1"), CONT_MORE("fragment2"), PING("pongme 1!"), CONT_MORE("fragment3"),
      CONT_MORE("fragment4"), PING("pongme 2!"), CONT("fragment5")},
     "ping[pongme 1!]ping[pongme 2!]T[fragment1fragment2fragment3fragment4fragment5]"},
    {"6.1.2 three empty fragments", 0, 0, {TEXT_MORE(""), CONT_MORE(""), CONT("")}, "T[]"},
    {"6.1.3 empty fragments around one", 0, 0, {TEXT_MORE(""), CONT_MORE("middle frame payload"), CONT("")},
     "T[middle frame payload]"},
    {"a message open at the end", 0, 0, {TEXT_MORE("abc"), PING("p")}, "ping[p]T[abc"},
    /* 7: close */
    {"7.1.1 message then close", 0, 0, {TEXT("Hello World!"), CLOSE("\x03\xe8")},
     "T[Hello World!]close[\\x03\\xe8]"},
    {"7.1.2 two closes", 0, 0, {CLOSE("\x03\xe8"), CLOSE("")}, "close[\\x03\\xe8]~6"},
    {"7.1.3 ping after close", 0, 0, {CLOSE("\x03\xe8"), PING("")}, "close[\\x03\\xe8]~6"},
    {"7.1.4 text after close", 0, 0, {CLOSE("\x03\xe8"), TEXT("Hello World!")}, "close[\\x03\\xe8]~18"},
    {"7.1.5 close between fragments", 0, 0, {TEXT_MORE("fragment1"), CLOSE("\x03\xe8"), CONT("fragment2")},
     "close[\\x03\\xe8]T[fragment1~15"},
    {"garbage after close is not read", 0, 0, {CLOSE(""), RAW("\xff\xff\xff")}, "close[]~3"},
    {"7.3.1 close without payload", 0, 0, {CLOSE("")}, "close[]"},
    {"7.3.2 close of one byte (up_ws_parse_close refuses it)", 0, 0, {CLOSE("a")}, "close[a]"},
    {"7.3.4 close with reason", 0, 0, {CLOSE("\x03\xe8Hello World!")}, "close[\\x03\\xe8Hello World!]"},
    {"7.3.5 close with a reason of 123", 0, 0, {CLOSE("\x03\xe8" S123)}, "close[\\x03\\xe8" S123 "]"},
    {"7.3.6 close with a reason of 124", 0, 0, {CLOSE("\x03\xe8" S123 "*")}, "!1002"},
    /* 9: the size limit (declared payload of a message) */
    {"limit: message at the limit", 0, 10, {TEXT("0123456789")}, "T[0123456789]"},
    {"limit: message over it", 0, 10, {TEXT("0123456789a")}, "!1009"},
    {"limit: fails from the header alone", 0, 10, {RAW("\x82\x8b")}, "!1009"},
    {"limit: 64-bit length fails before the payload", 0, 1 << 20,
     {RAW("\x82\xff\x00\x00\x00\x00\x00\x10\x00\x01")}, "!1009"},
    {"limit: top bit is a protocol error first", 0, 10, {RAW("\x82\xff\x80\x00\x00\x00\x00\x00\x00\x00")},
     "!1002"},
    {"limit: fragments add up", 0, 10, {TEXT_MORE("01234"), CONT_MORE("56789"), CONT("a")},
     "T[0123456789!1009"},
    {"limit: fragments at the limit", 0, 10, {TEXT_MORE("01234"), CONT_MORE("56789"), CONT("")},
     "T[0123456789]"},
    {"limit: per message", 0, 10, {TEXT("0123456789"), BIN("0123456789")}, "T[0123456789]B[0123456789]"},
    {"limit: control frames do not count", 0, 10, {TEXT_MORE("0123456789"), PING(S25), CONT("")},
     "ping[" S25 "]T[0123456789]"},
    {"limit: bounds compressed bytes", UP_WS_READER_DEFLATE, 4, {FR(0x41, "abc"), CONT("de")}, "T*[abc!1009"},
    /* a client reading a server's frames */
    {"from server: unmasked text", UP_WS_READER_FROM_SERVER, 0, {TEXT("hi")}, "T[hi]"},
    {"from server: fragments and ping", UP_WS_READER_FROM_SERVER, 0,
     {BIN_MORE("a"), PING("p"), CONT("b")}, "ping[p]B[ab]"},
    {"from server: empty frames", UP_WS_READER_FROM_SERVER, 0, {TEXT_MORE(""), CONT(""), PONG("")},
     "T[]pong[]"},
    {"from server: close", UP_WS_READER_FROM_SERVER, 0, {CLOSE("\x03\xe8"), TEXT("x")}, "close[\\x03\\xe8]~3"},
    {"from server: masked frame", UP_WS_READER_FROM_SERVER, 0, {MASKED(0x81, "hi")}, "!1002"},
    {"from server: 64-bit length", UP_WS_READER_FROM_SERVER, 0,
     {RAW("\x82\x7f\x00\x00\x00\x00\x00\x01\x00\x00" "ab")}, "B[ab"},
};

/* ---- Running a case ---- */

typedef struct recorder_t {
    bytes_t log;
    bytes_t message;   /* the open message: payload so far */
    int open, opcode, compressed;
    int digest;        /* log a message's length and hash instead of its bytes */
    uint64_t message_len;
    uint32_t hash;
    int pause;         /* ask the reader to stop after every event */
    int events;
    int broken;        /* the reader broke its contract: how, in the log */
} recorder_t;

static uint32_t fnv(uint32_t h, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 16777619u;
    return h;
}

static void flush_message(recorder_t *rec, int ended)
{
    if (!rec->open)
        return;
    bytes_str(&rec->log, rec->opcode == UP_WS_OP_TEXT ? "T" : "B");
    if (rec->compressed)
        bytes_str(&rec->log, "*");
    bytes_str(&rec->log, "[");
    if (rec->digest) {
        char d[48];
        snprintf(d, sizeof(d), "%llu bytes, %08x", (unsigned long long)rec->message_len, rec->hash);
        bytes_str(&rec->log, d);
    } else {
        bytes_escaped(&rec->log, rec->message.p, rec->message.len);
    }
    if (ended)
        bytes_str(&rec->log, "]");
}

static int rec_on_data(void *user, int opcode, int compressed, const char *data, size_t len, int fin)
{
    recorder_t *rec = user;
    rec->events++;
    if (opcode != UP_WS_OP_TEXT && opcode != UP_WS_OP_BINARY)
        rec->broken = 1;
    if (!rec->open) {
        rec->open = 1;
        rec->opcode = opcode;
        rec->compressed = compressed;
        rec->message.len = 0;
        rec->message_len = 0;
        rec->hash = 2166136261u;
    } else if (opcode != rec->opcode || compressed != rec->compressed) {
        rec->broken = 1;
    }
    if (rec->digest)
        rec->hash = fnv(rec->hash, data, len);
    else
        bytes_add(&rec->message, data, len);
    rec->message_len += len;
    if (fin) {
        flush_message(rec, 1);
        rec->open = 0;
    }
    return rec->pause;
}

static int rec_on_control(void *user, int opcode, const char *payload, size_t len)
{
    recorder_t *rec = user;
    rec->events++;
    if (len > UP_WS_MAX_CONTROL_PAYLOAD)
        rec->broken = 1;
    bytes_str(&rec->log, opcode == UP_WS_OP_PING ? "ping[" : opcode == UP_WS_OP_PONG ? "pong[" : "close[");
    if (opcode != UP_WS_OP_PING && opcode != UP_WS_OP_PONG && opcode != UP_WS_OP_CLOSE)
        rec->broken = 1;
    bytes_escaped(&rec->log, payload, len);
    bytes_str(&rec->log, "]");
    return rec->pause;
}

static const up_ws_reader_callbacks_t rec_callbacks = {rec_on_data, rec_on_control};

/* Feeds input cut at cuts (sorted offsets), each piece in its own guarded block, and returns
 * the log (caller frees). With pause, every event stops the reader and the rest is fed again. */
static char *feed(const char *input, size_t len, const size_t *cuts, size_t ncuts, unsigned flags,
                  uint64_t max_message, int pause, int digest)
{
    recorder_t rec = {0};
    up_ws_reader_t r;
    size_t from = 0, consumed = 0;
    int stopped = 0;

    rec.pause = pause;
    rec.digest = digest;
    up_ws_reader_init(&r, &rec_callbacks, &rec, max_message, flags);
    for (size_t i = 0; i <= ncuts && !stopped; i++) {
        size_t to = i < ncuts ? cuts[i] : len, n = to - from, at = 0;
        char *piece = guarded_copy(input + from, n);
        while (at < n || (n == 0 && at == 0)) {
            ssize_t got = up_ws_read(&r, piece + at, n - at);
            if (got == UP_WS_ERROR) {
                char e[16];
                flush_message(&rec, 0);
                rec.open = 0;
                snprintf(e, sizeof(e), "!%u", r.error.code);
                bytes_str(&rec.log, e);
                if (r.error.reason == NULL || r.error.reason[0] == '\0' || r.state != UP_WS_READ_FAILED)
                    rec.broken = 1;
                stopped = 1;
                break;
            }
            if (got < 0 || (size_t)got > n - at) {
                rec.broken = 1;
                stopped = 1;
                break;
            }
            at += (size_t)got;
            consumed += (size_t)got;
            if (r.state == UP_WS_READ_CLOSED) {
                stopped = 1;
                break;
            }
            if (at < n && !(pause && got > 0)) {
                rec.broken = 1; /* stopped short with no reason */
                stopped = 1;
                break;
            }
            if (n == 0)
                break;
        }
        guarded_free(piece, n);
        from = to;
    }
    flush_message(&rec, 0);
    if (r.state == UP_WS_READ_CLOSED && consumed < len) {
        char e[32];
        snprintf(e, sizeof(e), "~%zu", len - consumed);
        bytes_str(&rec.log, e);
    }
    if (r.state == UP_WS_READ_FAILED || r.state == UP_WS_READ_CLOSED) {
        /* both stick */
        char more[2] = {0, 0};
        ssize_t again = up_ws_read(&r, more, sizeof(more));
        if ((r.state == UP_WS_READ_FAILED) != (again == UP_WS_ERROR) ||
            (r.state == UP_WS_READ_CLOSED && again != 0))
            rec.broken = 1;
    }
    if (rec.broken)
        bytes_str(&rec.log, " <reader broke its contract>");
    bytes_free(&rec.message);
    return rec.log.p != NULL ? rec.log.p : strdup("");
}

static void build_input(const frame_case_t *c, bytes_t *in)
{
    for (size_t i = 0; i < MAX_PIECES && c->pieces[i].kind != 0; i++) {
        const piece_t *p = &c->pieces[i];
        if (p->kind == P_RAW)
            bytes_add(in, p->data, p->len);
        else
            encode_frame(in, p->b0, p->data, p->len,
                         p->kind == P_MASKED || (p->kind == P_FRAME && !(c->flags & UP_WS_READER_FROM_SERVER)),
                         i);
    }
    if (in->p == NULL)
        bytes_add(in, "", 0);
}

static void expect_log(const char *name, const char *how, char *got, const char *want)
{
    CHECK(strcmp(got, want) == 0, "%s (%s):\n  got  %s\n  want %s", name, how, got, want);
    free(got);
}

static void test_cases(void)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const frame_case_t *c = &cases[i];
        bytes_t in = {0};
        build_input(c, &in);

        expect_log(c->name, "whole", feed(in.p, in.len, NULL, 0, c->flags, c->max_message, 0, 0), c->expect);
        expect_log(c->name, "pause after every event",
                   feed(in.p, in.len, NULL, 0, c->flags, c->max_message, 1, 0), c->expect);

        size_t *cuts = malloc((in.len + 1) * sizeof(size_t));
        for (size_t k = 1; k < in.len; k++)
            cuts[k - 1] = k;
        expect_log(c->name, "byte at a time",
                   feed(in.p, in.len, cuts, in.len > 0 ? in.len - 1 : 0, c->flags, c->max_message, 0, 0),
                   c->expect);
        expect_log(c->name, "byte at a time, pausing",
                   feed(in.p, in.len, cuts, in.len > 0 ? in.len - 1 : 0, c->flags, c->max_message, 1, 0),
                   c->expect);
        for (size_t k = 1; k < in.len; k++) {
            char how[32];
            snprintf(how, sizeof(how), "split at %zu", k);
            expect_log(c->name, how, feed(in.p, in.len, &k, 1, c->flags, c->max_message, 0, 0), c->expect);
        }
        free(cuts);
        bytes_free(&in);
    }
}

/* ---- Large messages (Autobahn 1.1.x, 1.2.x, 9.x) ---- */

static void fill_payload(char *p, size_t n, int text)
{
    /* Autobahn's patterns: repeated ASCII for text, bytes with the high bit set for binary */
    static const char text_pattern[] = "BAsd7&jh23";
    static const char binary_pattern[] = "\x00\xfe\x23\xfa\xf0";
    const char *pat = text ? text_pattern : binary_pattern;
    size_t plen = text ? sizeof(text_pattern) - 1 : sizeof(binary_pattern) - 1;
    for (size_t i = 0; i < n; i++)
        p[i] = pat[i % plen];
}

/* The message in `fragment`-sized frames (0: one frame), fed in chops of `chop` bytes (0: whole),
 * and byte at a time when small. */
static void run_large(const char *name, size_t size, size_t fragment, size_t chop, int text, uint64_t max)
{
    char *payload = malloc(size > 0 ? size : 1);
    bytes_t in = {0}, want = {0};
    size_t frames = 0;
    fill_payload(payload, size, text);
    if (fragment == 0)
        fragment = size > 0 ? size : 1;
    for (size_t at = 0; at < size || frames == 0; at += fragment) {
        size_t n = size - at < fragment ? size - at : fragment;
        uint8_t b0 = (uint8_t)((at + n == size ? 0x80 : 0) | (at == 0 ? (text ? 1 : 2) : 0));
        encode_frame(&in, b0, payload + at, n, 1, frames++);
    }
    char d[64];
    snprintf(d, sizeof(d), "%s[%zu bytes, %08x]", text ? "T" : "B", size, fnv(2166136261u, payload, size));
    bytes_str(&want, d);

    size_t ncuts = 0, *cuts = NULL;
    if (chop > 0) {
        cuts = malloc((in.len / chop + 1) * sizeof(size_t));
        for (size_t k = chop; k < in.len; k += chop)
            cuts[ncuts++] = k;
    }
    expect_log(name, "in chops", feed(in.p, in.len, cuts, ncuts, 0, max, 0, 1), want.p);
    free(cuts);
    if (in.len <= 1000) {
        cuts = malloc(in.len * sizeof(size_t));
        for (size_t k = 1; k < in.len; k++)
            cuts[k - 1] = k;
        expect_log(name, "byte at a time", feed(in.p, in.len, cuts, in.len - 1, 0, max, 0, 1), want.p);
        free(cuts);
    }
    free(payload);
    bytes_free(&in);
    bytes_free(&want);
}

static void test_large(void)
{
    static const size_t sizes[] = {125, 126, 127, 128, 65535, 65536};
    char name[96];
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        snprintf(name, sizeof(name), "1.1.x text of %zu", sizes[i]);
        run_large(name, sizes[i], 0, 997, 1, 0);
        snprintf(name, sizeof(name), "1.2.x binary of %zu", sizes[i]);
        run_large(name, sizes[i], 0, 997, 0, 0);
    }
    const uint64_t max = 16 << 20;
    run_large("9.1.6 text of 16 MiB in chops of 64 KiB", 16 << 20, 0, 65536, 1, max);
    run_large("9.2.6 binary of 16 MiB in chops of 997", 16 << 20, 0, 997, 0, max);
    run_large("9.3.1 4 MiB in fragments of 64", 4 << 20, 64, 65536, 1, max);
    run_large("9.3.6 4 MiB in fragments of 64 KiB", 4 << 20, 65536, 4096, 1, max);
    run_large("9.4.9 4 MiB binary in fragments of 1 MiB", 4 << 20, 1 << 20, 100000, 0, max);
    run_large("9.5.1 1 MiB text in chops of 64", 1 << 20, 0, 64, 1, max);
    run_large("9.6.6 1 MiB binary in chops of 2048", 1 << 20, 0, 2048, 0, max);
    run_large("16 MiB in fragments of 1 MiB at the limit", 16 << 20, 1 << 20, 65536, 0, max);

    /* One byte over the limit fails at the header of the frame that crosses it, before any of
     * its payload is handed out: the log shows the first 16 MiB, then 1009. */
    bytes_t in = {0};
    char *payload = calloc(1, 16 << 20);
    encode_frame(&in, 0x02, payload, 16 << 20, 1, 0);
    encode_frame(&in, 0x80, "x", 1, 1, 1);
    char want[64];
    snprintf(want, sizeof(want), "B[%d bytes, %08x!1009", 16 << 20, fnv(2166136261u, payload, 16 << 20));
    expect_log("16 MiB + 1 in two frames", "in chops", feed(in.p, in.len, NULL, 0, 0, max, 0, 1), want);
    free(payload);
    bytes_free(&in);
}

/* ---- Streaming: payload is handed out as it arrives ---- */

typedef struct chunks_t {
    size_t calls, bytes;
    char last[64];
} chunks_t;

static int count_on_data(void *user, int opcode, int compressed, const char *data, size_t len, int fin)
{
    chunks_t *c = user;
    (void)opcode, (void)compressed, (void)fin;
    c->calls++;
    c->bytes += len;
    if (len < sizeof(c->last)) {
        memcpy(c->last, data, len);
        c->last[len] = '\0';
    }
    return 0;
}

static void test_streaming(void)
{
    static const up_ws_reader_callbacks_t cb = {count_on_data, NULL};
    chunks_t c = {0};
    up_ws_reader_t r;
    bytes_t in = {0};
    encode_frame(&in, 0x81, "first second", 12, 1, 0);
    up_ws_reader_init(&r, &cb, &c, 0, 0);

    /* header, key and "first " */
    char *p = guarded_copy(in.p, 12);
    CHECK(up_ws_read(&r, p, 12) == 12, "first piece consumed");
    CHECK(c.calls == 1 && strcmp(c.last, "first ") == 0, "the first piece of payload is out at once: %s", c.last);
    CHECK(r.state == UP_WS_READ_PAYLOAD, "reader waits for more payload");
    guarded_free(p, 12);
    p = guarded_copy(in.p + 12, in.len - 12);
    CHECK(up_ws_read(&r, p, in.len - 12) == (ssize_t)(in.len - 12), "rest consumed");
    CHECK(c.calls == 2 && strcmp(c.last, "second") == 0, "second piece: %s", c.last);
    CHECK(r.state == UP_WS_READ_HEADER && !up_ws_reader_in_message(&r), "message over");
    guarded_free(p, in.len - 12);
    bytes_free(&in);

    /* no callbacks at all: everything is read and dropped */
    up_ws_reader_init(&r, NULL, NULL, 0, 0);
    encode_frame(&in, 0x01, "a", 1, 1, 0);
    encode_frame(&in, 0x89, "b", 1, 1, 1);
    encode_frame(&in, 0x80, "c", 1, 1, 2);
    CHECK(up_ws_read(&r, in.p, in.len) == (ssize_t)in.len && r.state == UP_WS_READ_HEADER,
          "read without callbacks");
    bytes_free(&in);
}

/* ---- Autobahn 6.4.x: text checked while it streams fails at the bad byte ---- */

typedef struct text_check_t {
    up_ws_reader_t *reader;
    up_utf8_state_t utf8;
} text_check_t;

static int utf8_on_data(void *user, int opcode, int compressed, const char *data, size_t len, int fin)
{
    text_check_t *t = user;
    (void)compressed;
    if (opcode != UP_WS_OP_TEXT)
        return 0;
    if (up_utf8_validate(&t->utf8, data, len) != len || (fin && !up_utf8_complete(t->utf8))) {
        up_ws_reader_fail(t->reader, UP_WS_CLOSE_INVALID_PAYLOAD, "invalid UTF-8");
        return 1;
    }
    if (fin)
        t->utf8 = UP_UTF8_ACCEPT;
    return 0;
}

/* Feeds the parts one call each; returns the index of the part whose call failed, or -1. */
static int fail_fast_part(bytes_t *parts, size_t nparts)
{
    static const up_ws_reader_callbacks_t cb = {utf8_on_data, NULL};
    up_ws_reader_t r;
    text_check_t t = {&r, UP_UTF8_ACCEPT};
    up_ws_reader_init(&r, &cb, &t, 0, 0);
    for (size_t i = 0; i < nparts; i++) {
        char *p = guarded_copy(parts[i].p, parts[i].len);
        ssize_t got = up_ws_read(&r, p, parts[i].len);
        guarded_free(p, parts[i].len);
        if (got == UP_WS_ERROR) {
            CHECK(r.error.code == UP_WS_CLOSE_INVALID_PAYLOAD, "1007, got %u", r.error.code);
            return (int)i;
        }
    }
    return -1;
}

static void test_utf8_fail_fast(void)
{
    const char *payload = "\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5\xf4\x90\x80\x80" "edited";
    const size_t len = 21;
    bytes_t parts[3] = {{0}};

    /* 6.4.1: three frames, the second holds F4 90 80 80 */
    encode_frame(&parts[0], 0x01, payload, 11, 1, 0);
    encode_frame(&parts[1], 0x00, payload + 11, 4, 1, 1);
    encode_frame(&parts[2], 0x80, payload + 15, 6, 1, 2);
    CHECK(fail_fast_part(parts, 3) == 1, "6.4.1 fails on the second frame");
    for (int i = 0; i < 3; i++)
        bytes_free(&parts[i]);

    /* 6.4.2: the first frame ends with F4, the second is the one byte 90 */
    encode_frame(&parts[0], 0x01, payload, 12, 1, 0);
    encode_frame(&parts[1], 0x00, payload + 12, 1, 1, 1);
    encode_frame(&parts[2], 0x80, payload + 13, 8, 1, 2);
    CHECK(fail_fast_part(parts, 3) == 1, "6.4.2 fails on the one-byte frame");
    for (int i = 0; i < 3; i++)
        bytes_free(&parts[i]);

    /* 6.4.3 and 6.4.4: one frame sent in three chops */
    bytes_t frame = {0};
    encode_frame(&frame, 0x81, payload, len, 1, 0);
    const size_t head = 6;
    const size_t chops[2][2] = {{11, 4}, {12, 1}};
    for (int k = 0; k < 2; k++) {
        bytes_add(&parts[0], frame.p, head + chops[k][0]);
        bytes_add(&parts[1], frame.p + head + chops[k][0], chops[k][1]);
        bytes_add(&parts[2], frame.p + head + chops[k][0] + chops[k][1], len - chops[k][0] - chops[k][1]);
        CHECK(fail_fast_part(parts, 3) == 1, "6.4.%d fails on the second chop", 3 + k);
        for (int i = 0; i < 3; i++)
            bytes_free(&parts[i]);
    }
    bytes_free(&frame);

    /* a valid message fragmented inside characters passes (6.2.3, 6.2.4) */
    const char *kosme = "\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5";
    bytes_t one = {0};
    for (size_t i = 0; i < 11; i++)
        encode_frame(&one, (uint8_t)((i == 10 ? 0x80 : 0) | (i == 0 ? 1 : 0)), kosme + i, 1, 1, i);
    CHECK(fail_fast_part(&one, 1) == -1, "6.2.4 kosme in frames of one byte");
    bytes_free(&one);
    encode_frame(&one, 0x81, "\xce\xba\xe1", 3, 1, 0);
    CHECK(fail_fast_part(&one, 1) == 0, "a message that ends inside a character is refused");
    bytes_free(&one);
}

/* ---- The reader's other promises ---- */

typedef struct failer_t {
    up_ws_reader_t *reader;
    int calls;
} failer_t;

static int fail_on_data(void *user, int opcode, int compressed, const char *data, size_t len, int fin)
{
    failer_t *f = user;
    (void)opcode, (void)compressed, (void)data, (void)len, (void)fin;
    f->calls++;
    up_ws_reader_fail(f->reader, UP_WS_CLOSE_MESSAGE_TOO_BIG, "inflates too big");
    up_ws_reader_fail(f->reader, UP_WS_CLOSE_INTERNAL_ERROR, "a second error changes nothing");
    return 1;
}

static void test_fail_from_callback(void)
{
    static const up_ws_reader_callbacks_t cb = {fail_on_data, NULL};
    up_ws_reader_t r;
    failer_t f = {&r, 0};
    bytes_t in = {0};
    encode_frame(&in, 0x81, "abc", 3, 1, 0);
    encode_frame(&in, 0x81, "def", 3, 1, 1);
    up_ws_reader_init(&r, &cb, &f, 0, 0);
    CHECK(up_ws_read(&r, in.p, in.len) == UP_WS_ERROR, "a callback's failure ends the read");
    CHECK(f.calls == 1, "no event after the failure: %d", f.calls);
    CHECK(r.error.code == UP_WS_CLOSE_MESSAGE_TOO_BIG && strcmp(r.error.reason, "inflates too big") == 0,
          "the first error stays: %u", r.error.code);
    CHECK(up_ws_read(&r, in.p, in.len) == UP_WS_ERROR, "still failed");
    CHECK(up_ws_read(&r, in.p, 0) == UP_WS_ERROR, "failed even with nothing to read");
    bytes_free(&in);
}

static void test_pause_offsets(void)
{
    recorder_t rec = {0};
    up_ws_reader_t r;
    bytes_t in = {0};
    rec.pause = 1;
    encode_frame(&in, 0x89, "p", 1, 1, 0);   /* 7 bytes */
    encode_frame(&in, 0x01, "", 0, 1, 1);    /* 6 */
    encode_frame(&in, 0x80, "abc", 3, 1, 2); /* 9 */
    up_ws_reader_init(&r, &rec_callbacks, &rec, 0, 0);
    CHECK(up_ws_read(&r, in.p, in.len) == 7, "stops right after the ping");
    CHECK(up_ws_read(&r, in.p + 7, in.len - 7) == 6, "then after the empty fragment");
    CHECK(up_ws_read(&r, in.p + 13, in.len - 13) == 9, "then after the last fragment");
    CHECK(strcmp(rec.log.p, "ping[p]T[abc]") == 0, "log %s", rec.log.p);
    bytes_free(&in);
    bytes_free(&rec.log);
    bytes_free(&rec.message);
}

/* ---- Writer ---- */

typedef struct header_case_t {
    int fin, rsv1, opcode;
    uint64_t len;
    const char *want;
    size_t want_len;
} header_case_t;

#define HC(fin, rsv1, op, len, s) {fin, rsv1, op, len, s, sizeof(s) - 1}

static void test_writer(void)
{
    static const header_case_t hc[] = {
        HC(1, 0, UP_WS_OP_TEXT, 0, "\x81\x00"),
        HC(1, 0, UP_WS_OP_TEXT, 125, "\x81\x7d"),
        HC(1, 0, UP_WS_OP_BINARY, 126, "\x82\x7e\x00\x7e"),
        HC(0, 0, UP_WS_OP_BINARY, 65535, "\x02\x7e\xff\xff"),
        HC(1, 0, UP_WS_OP_CONTINUATION, 65536, "\x80\x7f\x00\x00\x00\x00\x00\x01\x00\x00"),
        HC(1, 1, UP_WS_OP_TEXT, 5, "\xc1\x05"),
        HC(1, 0, UP_WS_OP_CLOSE, 2, "\x88\x02"),
        HC(1, 0, UP_WS_OP_PONG, 0, "\x8a\x00"),
        HC(7, 9, UP_WS_OP_PING, 0, "\xc9\x00"),
        HC(1, 0, UP_WS_OP_BINARY, (UINT64_C(1) << 63) - 1, "\x82\x7f\x7f\xff\xff\xff\xff\xff\xff\xff"),
    };
    uint8_t out[UP_WS_MAX_HEADER];
    for (size_t i = 0; i < sizeof(hc) / sizeof(hc[0]); i++) {
        size_t n = up_ws_frame_header(out, hc[i].fin, hc[i].rsv1, hc[i].opcode, hc[i].len);
        CHECK(n == hc[i].want_len && memcmp(out, hc[i].want, n) == 0, "header %zu: %zu bytes", i, n);
        static const uint8_t key[4] = {0xa1, 0xb2, 0xc3, 0xd4};
        n = up_ws_frame_header_masked(out, hc[i].fin, hc[i].rsv1, hc[i].opcode, hc[i].len, key);
        CHECK(n == hc[i].want_len + 4 && out[0] == (uint8_t)hc[i].want[0] &&
                  out[1] == ((uint8_t)hc[i].want[1] | 0x80) &&
                  memcmp(out + 2, hc[i].want + 2, hc[i].want_len - 2) == 0 && memcmp(out + n - 4, key, 4) == 0,
              "masked header %zu", i);
    }
    CHECK(up_ws_frame_header(out, 1, 0, UP_WS_OP_TEXT, UINT64_C(1) << 63) == 0, "length past 2^63-1");
    CHECK(up_ws_frame_header(out, 1, 0, 16, 0) == 0, "opcode past 15");
    CHECK(up_ws_frame_header(out, 1, 0, -1, 0) == 0, "negative opcode");

    /* up_ws_mask: word at a time, any offset and length, the same as byte by byte */
    static const uint8_t key[4] = {0x12, 0x34, 0x56, 0x78};
    char a[80], b[80];
    for (size_t off = 0; off < 8; off++)
        for (size_t len = 0; len <= 40; len++) {
            for (size_t i = 0; i < sizeof(a); i++)
                a[i] = b[i] = (char)(i * 31 + 7);
            up_ws_mask(a + 3, len, key, off);
            for (size_t i = 0; i < len; i++)
                b[3 + i] = (char)(b[3 + i] ^ key[(off + i) & 3]);
            CHECK(memcmp(a + 3, b + 3, len) == 0, "mask offset %zu length %zu", off, len);
        }

    /* round trip: what the writer and up_ws_mask make, the reader reads */
    for (uint64_t len = 0; len < 100000; len = len * 3 + 1) {
        bytes_t in = {0};
        static const uint8_t k[4] = {0xde, 0xad, 0xbe, 0xef};
        size_t n = up_ws_frame_header_masked(out, 1, 0, UP_WS_OP_BINARY, len, k);
        bytes_add(&in, out, n);
        char *payload = malloc(len + 1);
        for (size_t i = 0; i < len; i++)
            payload[i] = (char)(i ^ (i >> 8));
        size_t at = in.len;
        bytes_add(&in, payload, len);
        up_ws_mask(in.p + at, len, k, 0);
        char want[48];
        snprintf(want, sizeof(want), "B[%llu bytes, %08x]", (unsigned long long)len, fnv(2166136261u, payload, len));
        expect_log("writer round trip", "whole", feed(in.p, in.len, NULL, 0, 0, 0, 0, 1), want);
        /* and a server frame, read by a client */
        in.len = 0;
        n = up_ws_frame_header(out, 1, 0, UP_WS_OP_BINARY, len);
        bytes_add(&in, out, n);
        bytes_add(&in, payload, len);
        expect_log("server frame round trip", "whole",
                   feed(in.p, in.len, NULL, 0, UP_WS_READER_FROM_SERVER, 0, 0, 1), want);
        free(payload);
        bytes_free(&in);
    }
}

/* ---- Close frames ---- */

typedef struct close_case_t {
    const char *name;
    const char *payload;
    size_t len;
    unsigned error; /* 0: valid */
    unsigned code;
    const char *reason;
} close_case_t;

#define CC(name, s, err, code, reason) {name, s, sizeof(s) - 1, err, code, reason}

static void test_close(void)
{
    static const close_case_t cc[] = {
        CC("7.3.1 empty: no code", "", 0, UP_WS_CLOSE_NO_STATUS, ""),
        CC("7.3.2 one byte", "a", 1002, 0, NULL),
        CC("7.3.3 code only", "\x03\xe8", 0, 1000, ""),
        CC("7.3.4 code and reason", "\x03\xe8Hello World!", 0, 1000, "Hello World!"),
        CC("7.5.1 reason not UTF-8", "\x03\xe8\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5\xed\xa0\x80" "edited",
           1007, 0, NULL),
        CC("reason cut inside a character", "\x03\xe8\xe2\x82", 1007, 0, NULL),
        CC("7.7.1 1000", "\x03\xe8", 0, 1000, ""),
        CC("7.7.2 1001", "\x03\xe9", 0, 1001, ""),
        CC("7.7.3 1002", "\x03\xea", 0, 1002, ""),
        CC("7.7.4 1003", "\x03\xeb", 0, 1003, ""),
        CC("7.7.5 1007", "\x03\xef", 0, 1007, ""),
        CC("7.7.6 1008", "\x03\xf0", 0, 1008, ""),
        CC("7.7.7 1009", "\x03\xf1", 0, 1009, ""),
        CC("7.7.8 1010", "\x03\xf2", 0, 1010, ""),
        CC("7.7.9 1011", "\x03\xf3", 0, 1011, ""),
        CC("1012 service restart", "\x03\xf4", 0, 1012, ""),
        CC("1013 try again later", "\x03\xf5", 0, 1013, ""),
        CC("1014 bad gateway", "\x03\xf6", 0, 1014, ""),
        CC("7.7.10 3000", "\x0b\xb8", 0, 3000, ""),
        CC("7.7.11 3999", "\x0f\x9f", 0, 3999, ""),
        CC("7.7.12 4000", "\x0f\xa0", 0, 4000, ""),
        CC("7.7.13 4999 with reason", "\x13\x87" "bye", 0, 4999, "bye"),
        CC("7.9.1 0", "\x00\x00", 1002, 0, NULL),
        CC("7.9.2 999", "\x03\xe7", 1002, 0, NULL),
        CC("7.9.3 1004", "\x03\xec", 1002, 0, NULL),
        CC("7.9.4 1005", "\x03\xed", 1002, 0, NULL),
        CC("7.9.5 1006", "\x03\xee", 1002, 0, NULL),
        CC("1015 TLS failure", "\x03\xf7", 1002, 0, NULL),
        CC("7.9.6 1016", "\x03\xf8", 1002, 0, NULL),
        CC("7.9.7 1100", "\x04\x4c", 1002, 0, NULL),
        CC("7.9.8 2000", "\x07\xd0", 1002, 0, NULL),
        CC("7.9.9 2999", "\x0b\xb7", 1002, 0, NULL),
        CC("7.13.1 5000", "\x13\x88", 1002, 0, NULL),
        CC("7.13.2 65535", "\xff\xff", 1002, 0, NULL),
    };
    for (size_t i = 0; i < sizeof(cc) / sizeof(cc[0]); i++) {
        const close_case_t *c = &cc[i];
        uint16_t code = 0;
        const char *reason = NULL;
        size_t reason_len = 99;
        char *p = guarded_copy(c->payload, c->len);
        up_ws_error_t e = up_ws_parse_close(p, c->len, &code, &reason, &reason_len);
        CHECK(e.code == c->error && (e.code == 0) == (e.reason == NULL), "%s: error %u", c->name, e.code);
        if (c->error == 0)
            CHECK(code == c->code && reason_len == strlen(c->reason) && memcmp(reason, c->reason, reason_len) == 0,
                  "%s: code %u, reason %.*s", c->name, code, (int)reason_len, reason);
        guarded_free(p, c->len);
    }
    static char long_payload[130];
    memset(long_payload, 'x', sizeof(long_payload));
    long_payload[0] = 0x03, long_payload[1] = (char)0xe8;
    uint16_t code;
    const char *reason;
    size_t reason_len;
    CHECK(up_ws_parse_close(long_payload, 126, &code, &reason, &reason_len).code == 1002, "126 bytes");
    CHECK(up_ws_parse_close(long_payload, 125, &code, &reason, &reason_len).code == 0 && reason_len == 123,
          "125 bytes");

    /* building */
    uint8_t out[UP_WS_MAX_CONTROL_PAYLOAD];
    CHECK(up_ws_close_payload(out, 1000, NULL, 0) == 2 && out[0] == 0x03 && out[1] == 0xe8, "code only");
    size_t n = up_ws_close_payload(out, 1001, "going away", 10);
    CHECK(n == 12 && out[0] == 0x03 && out[1] == 0xe9 && memcmp(out + 2, "going away", 10) == 0, "code and reason");
    CHECK(up_ws_close_payload(out, 0, "x", 1) == 0, "no code: empty payload");
    CHECK(up_ws_close_payload(out, 1005, "x", 1) == 0, "1005 is never sent");
    CHECK(up_ws_close_payload(out, 1006, NULL, 0) == 0, "1006 is never sent");
    CHECK(up_ws_close_payload(out, 70000, NULL, 0) == 0, "past 16 bits");
    CHECK(up_ws_close_payload(out, 1000, "\xff", 1) == 2, "a reason that is not UTF-8 is dropped");

    char reason_buf[200];
    memset(reason_buf, 'a', sizeof(reason_buf));
    n = up_ws_close_payload(out, 1000, reason_buf, sizeof(reason_buf));
    CHECK(n == UP_WS_MAX_CONTROL_PAYLOAD, "a long reason is cut to 123 bytes: %zu", n);
    for (size_t at = 118; at < 126; at++) {
        memset(reason_buf, 'a', sizeof(reason_buf));
        memcpy(reason_buf + at, "\xf0\x9f\x98\x80", 4); /* U+1F600 across the limit */
        n = up_ws_close_payload(out, 1000, reason_buf, sizeof(reason_buf));
        /* the limit cuts the emoji only when it starts before byte 123 and ends after it */
        size_t want = at < UP_WS_MAX_CLOSE_REASON && at + 4 > UP_WS_MAX_CLOSE_REASON ? at : UP_WS_MAX_CLOSE_REASON;
        CHECK(n == 2 + want, "emoji at %zu: reason of %zu, want %zu", at, n - 2, want);
        CHECK(up_ws_parse_close((const char *)out, n, &code, &reason, &reason_len).code == 0,
              "emoji at %zu: the cut reason is valid", at);
    }
    CHECK(up_ws_close_code_valid(1000) && up_ws_close_code_valid(4999) && !up_ws_close_code_valid(1004) &&
              !up_ws_close_code_valid(2999),
          "code ranges");
}

int main(void)
{
    test_cases();
    test_streaming();
    test_utf8_fail_fast();
    test_fail_from_callback();
    test_pause_offsets();
    test_writer();
    test_close();
    test_large();
    return test_report("websocket_frame");
}
