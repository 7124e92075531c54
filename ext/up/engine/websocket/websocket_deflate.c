#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "base/memory.h"
#include "base/token.h"
#include "websocket/websocket_deflate.h"

#define EXTENSION_NAME "permessage-deflate"
/* zlib's raw deflate needs 9 bits at least (see up_ws_deflate_params_t). */
#define ZLIB_MIN_WINDOW_BITS 9
#define MAX_WINDOW_BITS 15
/* How much the output of an inflate grows at a time, at least (capped by what max allows). */
#define INFLATE_STEP UP_BUFFER_CHUNK
/* Room a Z_SYNC_FLUSH needs to finish in one call (zlib.h, deflate(): "greater than six"). */
#define FLUSH_ROOM 16

/* RFC 7692 §7.2.1: the empty stored block a sync flush ends with, dropped by the sender and put
 * back by the receiver. */
static const unsigned char sync_tail[4] = {0x00, 0x00, 0xff, 0xff};

/* ================================================================ zlib allocation */

/* Through the engine's allocator, so that running out of memory aborts loudly in one place
 * instead of surfacing as a zlib error in the middle of a message. */
static voidpf zlib_alloc(voidpf opaque, uInt items, uInt size)
{
    (void)opaque;
    return up_malloc((size_t)items * size);
}

static void zlib_free(voidpf opaque, voidpf ptr)
{
    (void)opaque;
    free(ptr);
}

static z_stream *stream_new(void)
{
    z_stream *z = up_calloc(1, sizeof(*z));
    z->zalloc = zlib_alloc;
    z->zfree = zlib_free;
    return z;
}

static unsigned zlib_window_bits(unsigned bits)
{
    return bits < ZLIB_MIN_WINDOW_BITS ? ZLIB_MIN_WINDOW_BITS : bits;
}

/* ================================================================ negotiation */

/* One permessage-deflate offer, as parsed. A window of 0 means the parameter came without a
 * value (only client_max_window_bits may). */
typedef struct offer_t {
    unsigned char seen_server_nct, seen_client_nct, seen_server_bits, seen_client_bits;
    unsigned char server_bits, client_bits;
    int bad; /* declined: §7, "MUST decline" */
} offer_t;

typedef struct cursor_t {
    const char *p, *end;
} cursor_t;

static void skip_ows(cursor_t *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
        c->p++;
}

static int take_token(cursor_t *c, up_slice_t *tok)
{
    const char *start = c->p;
    while (c->p < c->end && up_is_tchar((unsigned char)*c->p))
        c->p++;
    *tok = up_slice(start, (size_t)(c->p - start));
    return tok->len > 0;
}

/* RFC 9110 §5.6.4: qdtext and the second byte of a quoted-pair. */
static int is_qdtext(unsigned char ch)
{
    return ch == '\t' || ch == ' ' || ch == 0x21 || (ch >= 0x23 && ch <= 0x5b) ||
           (ch >= 0x5d && ch <= 0x7e) || ch >= 0x80;
}

static int is_quoted_pair_char(unsigned char ch)
{
    return ch == '\t' || (ch >= 0x20 && ch <= 0x7e) || ch >= 0x80;
}

/* A parameter value: a token, or a quoted-string whose unescaped content must be a token
 * (RFC 6455 §9.1). Its first sizeof(val->buf) unescaped bytes land in val->buf; val->len is
 * the whole length. Returns 0 on a syntax error (including a quoted value that is no token). */
typedef struct value_t {
    char buf[4];
    size_t len;
} value_t;

static void value_push(value_t *val, char ch)
{
    if (val->len < sizeof(val->buf))
        val->buf[val->len] = ch;
    val->len++;
}

static int take_value(cursor_t *c, value_t *val)
{
    val->len = 0;
    if (c->p < c->end && *c->p == '"') {
        int token = 1;
        for (c->p++; c->p < c->end; c->p++) {
            unsigned char ch = (unsigned char)*c->p;
            if (ch == '"') {
                c->p++;
                return token && val->len > 0;
            }
            if (ch == '\\') {
                if (++c->p == c->end || !is_quoted_pair_char((unsigned char)*c->p))
                    return 0;
                ch = (unsigned char)*c->p;
            } else if (!is_qdtext(ch)) {
                return 0;
            }
            token &= up_is_tchar(ch);
            value_push(val, (char)ch);
        }
        return 0; /* no closing quote */
    }
    up_slice_t tok;
    if (!take_token(c, &tok))
        return 0;
    for (size_t i = 0; i < tok.len; i++)
        value_push(val, tok.base[i]);
    return 1;
}

/* §7.1.2.1, §7.1.2.2: 1*DIGIT without leading zeros, 8 to 15. Returns the bits or 0. */
static unsigned char window_bits_value(const value_t *val)
{
    if (val->len == 1 && (val->buf[0] == '8' || val->buf[0] == '9'))
        return (unsigned char)(val->buf[0] - '0');
    if (val->len == 2 && val->buf[0] == '1' && val->buf[1] >= '0' && val->buf[1] <= '5')
        return (unsigned char)(10 + val->buf[1] - '0');
    return 0;
}

static void offer_param(offer_t *o, up_slice_t name, const value_t *val /* NULL: no value */)
{
    unsigned char *seen;
    if (up_slice_eq(name, "server_no_context_takeover", 26)) {
        seen = &o->seen_server_nct;
        o->bad |= val != NULL;
    } else if (up_slice_eq(name, "client_no_context_takeover", 26)) {
        seen = &o->seen_client_nct;
        o->bad |= val != NULL;
    } else if (up_slice_eq(name, "server_max_window_bits", 22)) {
        seen = &o->seen_server_bits;
        o->server_bits = val != NULL ? window_bits_value(val) : 0;
        o->bad |= o->server_bits == 0;
    } else if (up_slice_eq(name, "client_max_window_bits", 22)) {
        seen = &o->seen_client_bits;
        o->client_bits = val != NULL ? window_bits_value(val) : 0;
        o->bad |= val != NULL && o->client_bits == 0;
    } else {
        o->bad = 1;
        return;
    }
    o->bad |= *seen;
    *seen = 1;
}

/* Parses one list element: extension-token *( OWS ";" OWS extension-param ) OWS, up to the next
 * ',' or the end. Returns 1 with *is_ours and *o filled, 0 for an empty element, -1 on a syntax
 * error (the cursor is then somewhere inside the element). */
static int parse_element(cursor_t *c, int *is_ours, offer_t *o)
{
    up_slice_t name;
    memset(o, 0, sizeof(*o));
    skip_ows(c);
    if (c->p == c->end || *c->p == ',')
        return 0;
    if (!take_token(c, &name))
        return -1;
    *is_ours = up_slice_eq(name, EXTENSION_NAME, sizeof(EXTENSION_NAME) - 1);
    for (;;) {
        skip_ows(c);
        if (c->p == c->end || *c->p == ',')
            return 1;
        if (*c->p != ';')
            return -1;
        c->p++;
        skip_ows(c);
        up_slice_t param;
        if (!take_token(c, &param))
            return -1;
        if (c->p < c->end && *c->p == '=') {
            value_t val;
            c->p++;
            if (!take_value(c, &val))
                return -1;
            offer_param(o, param, &val);
        } else {
            offer_param(o, param, NULL);
        }
    }
}

/* After a syntax error: moves the cursor from the element's start to its ending ',' (or the
 * end of the line), stepping over quoted strings so that a comma inside one does not count. */
static void skip_element(cursor_t *c, const char *start)
{
    int quoted = 0;
    for (c->p = start; c->p < c->end; c->p++) {
        if (quoted && *c->p == '\\') {
            if (c->p + 1 < c->end)
                c->p++;
        } else if (*c->p == '"') {
            quoted = !quoted;
        } else if (!quoted && *c->p == ',') {
            return;
        }
    }
}

/* Finds the first valid offer in the lines. Returns 1 with *o filled. */
static int first_valid_offer(const up_slice_t *values, size_t nvalues, offer_t *o)
{
    for (size_t i = 0; i < nvalues; i++) {
        cursor_t c = {values[i].base, values[i].base + values[i].len};
        while (c.p < c.end) {
            const char *start = c.p;
            int ours = 0;
            int r = parse_element(&c, &ours, o);
            if (r < 0)
                skip_element(&c, start);
            else if (r > 0 && ours && !o->bad)
                return 1;
            if (c.p < c.end)
                c.p++; /* the ',' */
        }
    }
    return 0;
}

/* Appends s to out[*len..size); returns 0 when it does not fit with its NUL. */
static int append(char *out, size_t size, size_t *len, const char *s)
{
    size_t n = strlen(s);
    if (size - *len <= n)
        return 0;
    memcpy(out + *len, s, n + 1);
    *len += n;
    return 1;
}

static int append_bits(char *out, size_t size, size_t *len, const char *name, unsigned bits)
{
    char num[4] = {0};
    if (bits >= 10) {
        num[0] = '1';
        num[1] = (char)('0' + bits - 10);
    } else {
        num[0] = (char)('0' + bits);
    }
    return append(out, size, len, "; ") && append(out, size, len, name) &&
           append(out, size, len, "=") && append(out, size, len, num);
}

size_t up_ws_deflate_negotiate(const up_ws_deflate_policy_t *policy, const up_slice_t *values,
                               size_t nvalues, up_ws_deflate_params_t *params, char *out,
                               size_t out_size)
{
    offer_t o;
    memset(params, 0, sizeof(*params));
    if (out_size > 0)
        out[0] = '\0';
    if (!policy->enabled || out_size < UP_WS_DEFLATE_RESPONSE_MAX ||
        !first_valid_offer(values, nvalues, &o))
        return 0;

    params->enabled = 1;
    /* §7.1.1.1: accepting a client's server_no_context_takeover means echoing it; the server may
     * also send it unasked. §7.1.1.2: the server may send client_no_context_takeover in any
     * case; a client that offered it promised it already, and hearing it back costs nothing. */
    params->server_no_context_takeover = o.seen_server_nct || policy->server_no_context_takeover;
    params->client_no_context_takeover = o.seen_client_nct || policy->client_no_context_takeover;
    /* §7.1.2.1: accepted by echoing the same (or a smaller) value. Without it the client can
     * take any window up to 15, which is what zlib compresses with. */
    params->server_max_window_bits = o.seen_server_bits ? o.server_bits : MAX_WINDOW_BITS;
    /* §7.1.2.2: only a client that offered client_max_window_bits may be sent one, no larger
     * than its value. Unsent, the client keeps within its offered value (or 15). */
    unsigned client_bits = o.seen_client_bits && o.client_bits ? o.client_bits : MAX_WINDOW_BITS;
    int send_client_bits = 0;
    if (o.seen_client_bits && policy->client_max_window_bits >= 8 &&
        (unsigned)policy->client_max_window_bits < client_bits) {
        client_bits = (unsigned)policy->client_max_window_bits;
        send_client_bits = 1;
    }
    params->client_max_window_bits = (unsigned char)client_bits;

    size_t len = 0;
    int ok = append(out, out_size, &len, EXTENSION_NAME);
    if (params->server_no_context_takeover)
        ok = ok && append(out, out_size, &len, "; server_no_context_takeover");
    if (params->client_no_context_takeover)
        ok = ok && append(out, out_size, &len, "; client_no_context_takeover");
    if (o.seen_server_bits)
        ok = ok && append_bits(out, out_size, &len, "server_max_window_bits",
                               params->server_max_window_bits);
    if (send_client_bits)
        ok = ok && append_bits(out, out_size, &len, "client_max_window_bits", client_bits);
    if (!ok) {
        memset(params, 0, sizeof(*params));
        out[0] = '\0';
        return 0;
    }
    return len;
}

/* ================================================================ inflating */

void up_ws_inflater_init(up_ws_inflater_t *inf, const up_ws_deflate_params_t *params, size_t max)
{
    memset(inf, 0, sizeof(*inf));
    inf->max = max;
    /* The largest window, whatever client_max_window_bits was agreed: zlib checks a distance
     * against its window only for output of earlier calls, not of the current one, so with the
     * agreed window a client that reaches back further than it agreed would be refused or not
     * depending on how its message arrived in pieces. With 15 bits every distance DEFLATE can
     * express is checked the same way, however the message is cut. */
    inf->_window_bits = MAX_WINDOW_BITS;
    inf->_takeover = !params->client_no_context_takeover;
}

static void inflater_drop_stream(up_ws_inflater_t *inf)
{
    if (inf->_z != NULL) {
        inflateEnd(inf->_z);
        free(inf->_z);
        inf->_z = NULL;
    }
}

void up_ws_inflater_dispose(up_ws_inflater_t *inf)
{
    inflater_drop_stream(inf);
}

int up_ws_inflate_close_code(up_ws_inflate_result_t result)
{
    switch (result) {
    case UP_WS_INFLATE_OK: return 0;
    case UP_WS_INFLATE_TOO_BIG: return 1009;
    case UP_WS_INFLATE_BAD_DATA: return 1007;
    }
    return 1007;
}

/* Room for output at out's end: at least 1 byte and at most `allowed`, growing the buffer (a
 * pool chunk first, then doubling) by no more than `allowed`, so that a message that inflates
 * past max never makes the buffer much larger than max. */
static size_t output_room(up_buffer_t *out, up_buffer_pool_t *pool, size_t allowed)
{
    if (out->base == NULL) {
        up_buffer_reserve(out, pool, allowed < INFLATE_STEP ? allowed : INFLATE_STEP);
    } else if (out->cap == out->len) {
        size_t grow = out->cap > INFLATE_STEP ? out->cap : INFLATE_STEP;
        if (grow > allowed)
            grow = allowed;
        out->base = up_realloc(out->base, out->len + grow);
        out->cap = out->len + grow;
    }
    size_t room = out->cap - out->len;
    return room < allowed ? room : allowed;
}

/* Bytes of the message after its final block: RFC 7692 §7.2.1 lets a sender end with a final
 * block followed by the start of an empty stored block whose last 4 bytes it dropped, which
 * leaves at most one byte, 00 (BFINAL 0, BTYPE 00 and zero padding). Anything else is not
 * something a sender makes. */
static up_ws_inflate_result_t after_end(up_ws_inflater_t *inf, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (inf->_after_end++ > 0 || p[i] != 0x00)
            return UP_WS_INFLATE_BAD_DATA;
    return UP_WS_INFLATE_OK;
}

/* Runs n bytes through the stream (is_tail: they are the appended sync tail). */
static up_ws_inflate_result_t inflate_bytes(up_ws_inflater_t *inf, const unsigned char *p, size_t n,
                                            int is_tail, up_buffer_t *out, up_buffer_pool_t *pool)
{
    z_stream *z = inf->_z;
    if (inf->_ended)
        return is_tail ? UP_WS_INFLATE_OK : after_end(inf, p, n);
    while (n > 0) {
        uInt piece = n > UINT_MAX ? UINT_MAX : (uInt)n;
        z->next_in = (Bytef *)p;
        z->avail_in = piece;
        for (;;) {
            size_t allowed = inf->max - inf->message_len;
            unsigned char probe;
            size_t room;
            if (allowed > 0) {
                room = output_room(out, pool, allowed);
                if (room > UINT_MAX)
                    room = UINT_MAX;
                z->next_out = (Bytef *)out->base + out->len;
            } else {
                /* max reached: one byte more would be one too many, so inflate into a probe to
                 * learn whether the message goes on (blocks that end, padding) or not. */
                room = 1;
                z->next_out = &probe;
            }
            z->avail_out = (uInt)room;
            int ret = inflate(z, Z_SYNC_FLUSH);
            size_t made = room - z->avail_out;
            if (allowed == 0 && made > 0)
                return UP_WS_INFLATE_TOO_BIG;
            out->len += made;
            inf->message_len += made;
            if (ret == Z_STREAM_END) {
                inf->_ended = 1;
                size_t used = piece - z->avail_in;
                return is_tail ? UP_WS_INFLATE_OK : after_end(inf, p + used, n - used);
            }
            if (ret != Z_OK && ret != Z_BUF_ERROR)
                return UP_WS_INFLATE_BAD_DATA;
            if (z->avail_in == 0 && z->avail_out > 0)
                break; /* everything in and out */
            if (ret == Z_BUF_ERROR && z->avail_in > 0 && z->avail_out > 0)
                return UP_WS_INFLATE_BAD_DATA; /* no progress with room both ways: never */
        }
        p += piece;
        n -= piece;
    }
    return UP_WS_INFLATE_OK;
}

/* A message ended with a final block and the client may keep its window: the next message
 * starts a new DEFLATE stream over the same window. zlib ends a stream for good at its final
 * block, so carry the window over by hand. */
static void restart_keeping_window(up_ws_inflater_t *inf)
{
    uInt len = 0;
    unsigned char *window = up_malloc((size_t)1 << inf->_window_bits);
    if (inflateGetDictionary(inf->_z, window, &len) != Z_OK || inflateReset(inf->_z) != Z_OK ||
        (len > 0 && inflateSetDictionary(inf->_z, window, len) != Z_OK))
        up_fatal("websocket_deflate: carrying the window over a final block");
    free(window);
}

up_ws_inflate_result_t up_ws_inflate(up_ws_inflater_t *inf, const void *chunk, size_t len, int fin,
                                     up_buffer_t *out, up_buffer_pool_t *pool)
{
    if (inf->_failed != UP_WS_INFLATE_OK)
        return inf->_failed;
    if (inf->_z == NULL) {
        inf->_z = stream_new();
        if (inflateInit2(inf->_z, -(int)inf->_window_bits) != Z_OK)
            up_fatal("websocket_deflate: inflateInit2");
    }
    up_ws_inflate_result_t r = inflate_bytes(inf, chunk, len, 0, out, pool);
    if (r == UP_WS_INFLATE_OK && fin) {
        r = inflate_bytes(inf, sync_tail, sizeof(sync_tail), 1, out, pool);
        /* zlib marks "between blocks" with 128 in data_type: ending anywhere else means the
         * message was cut inside a block (an empty payload included, §7.2.3.6: a sender sends
         * at least the byte 00). */
        if (r == UP_WS_INFLATE_OK && !inf->_ended && !(inf->_z->data_type & 128))
            r = UP_WS_INFLATE_BAD_DATA;
    }
    if (r != UP_WS_INFLATE_OK) {
        inf->_failed = r;
        inflater_drop_stream(inf);
        return r;
    }
    if (fin) {
        if (!inf->_takeover)
            inflater_drop_stream(inf);
        else if (inf->_ended)
            restart_keeping_window(inf);
        inf->message_len = 0;
        inf->_ended = 0;
        inf->_after_end = 0;
    }
    return UP_WS_INFLATE_OK;
}

/* ================================================================ deflating */

static z_stream *deflate_stream_new(unsigned zlib_bits, int mem_level)
{
    z_stream *z = stream_new();
    if (deflateInit2(z, UP_WS_DEFLATE_LEVEL, Z_DEFLATED, -(int)zlib_bits, mem_level,
                     Z_DEFAULT_STRATEGY) != Z_OK)
        up_fatal("websocket_deflate: deflateInit2");
    return z;
}

static void deflate_stream_free(z_stream *z)
{
    if (z != NULL) {
        deflateEnd(z);
        free(z);
    }
}

/* Compresses msg through z with a sync flush and appends the payload: the output without its
 * trailing 00 00 ff ff (§7.2.1), or 00 when that leaves nothing (§7.2.3.6; a flush with no new
 * input after another flush produces no bytes at all). Returns the bytes appended. */
static size_t deflate_message(z_stream *z, const unsigned char *msg, size_t len, up_buffer_t *out,
                              up_buffer_pool_t *pool)
{
    size_t start = out->len;
    up_buffer_reserve(out, pool,
                      deflateBound(z, len > UINT_MAX ? UINT_MAX : (uLong)len) + FLUSH_ROOM);
    do {
        uInt piece = len > UINT_MAX ? UINT_MAX : (uInt)len;
        int flush = piece == len ? Z_SYNC_FLUSH : Z_NO_FLUSH;
        z->next_in = (Bytef *)msg;
        z->avail_in = piece;
        do {
            if (out->cap - out->len < FLUSH_ROOM)
                up_buffer_reserve(out, pool, FLUSH_ROOM + (out->len - start));
            size_t room = out->cap - out->len;
            z->next_out = (Bytef *)out->base + out->len;
            z->avail_out = room > UINT_MAX ? UINT_MAX : (uInt)room;
            int ret = deflate(z, flush);
            if (ret != Z_OK && ret != Z_BUF_ERROR)
                up_fatal("websocket_deflate: deflate");
            out->len += (size_t)(z->next_out - ((Bytef *)out->base + out->len));
        } while (z->avail_in > 0 || z->avail_out == 0);
        msg += piece;
        len -= piece;
    } while (len > 0);

    size_t n = out->len - start;
    if (n >= sizeof(sync_tail)) {
        if (memcmp(out->base + out->len - sizeof(sync_tail), sync_tail, sizeof(sync_tail)) != 0)
            up_fatal("websocket_deflate: a sync flush without its empty block");
        out->len -= sizeof(sync_tail);
    } else if (n > 0) {
        up_fatal("websocket_deflate: a sync flush without its empty block");
    }
    if (out->len == start)
        out->base[out->len++] = 0x00;
    return out->len - start;
}

void up_ws_compressor_init(up_ws_compressor_t *c)
{
    memset(c, 0, sizeof(*c));
}

void up_ws_compressor_dispose(up_ws_compressor_t *c)
{
    for (size_t i = 0; i < sizeof(c->_z) / sizeof(c->_z[0]); i++) {
        deflate_stream_free(c->_z[i]);
        c->_z[i] = NULL;
    }
}

size_t up_ws_compress(up_ws_compressor_t *c, unsigned window_bits, const void *msg, size_t len,
                      up_buffer_t *out, up_buffer_pool_t *pool)
{
    if (window_bits > MAX_WINDOW_BITS)
        window_bits = MAX_WINDOW_BITS;
    unsigned bits = zlib_window_bits(window_bits);
    z_stream **z = &c->_z[bits - ZLIB_MIN_WINDOW_BITS];
    if (*z == NULL)
        *z = deflate_stream_new(bits, UP_WS_DEFLATE_MEM_LEVEL);
    else if (deflateReset(*z) != Z_OK)
        up_fatal("websocket_deflate: deflateReset");
    return deflate_message(*z, msg, len, out, pool);
}

int up_ws_deflate_accepts_shared(const up_ws_deflate_params_t *params, unsigned window_bits)
{
    return params->enabled &&
           zlib_window_bits(window_bits) <= zlib_window_bits(params->server_max_window_bits);
}

void up_ws_deflater_init(up_ws_deflater_t *d, const up_ws_deflate_params_t *params)
{
    memset(d, 0, sizeof(*d));
    d->min_size = UP_WS_DEFLATE_MIN_SIZE;
    d->_window_bits = (unsigned char)zlib_window_bits(params->server_max_window_bits);
    d->_takeover = !params->server_no_context_takeover;
}

int up_ws_deflate(up_ws_deflater_t *d, up_ws_compressor_t *c, const void *msg, size_t len,
                  up_buffer_t *out, up_buffer_pool_t *pool)
{
    if (len < d->min_size)
        return 0;
    if (!d->_takeover) {
        size_t start = out->len;
        if (up_ws_compress(c, d->_window_bits, msg, len, out, pool) < len)
            return 1;
        out->len = start;
        return 0;
    }
    /* With context takeover the message goes out compressed even when it grew by a few bytes:
     * sending it plain would leave it in our window and not in the client's. */
    if (d->_z == NULL) {
        d->_z = deflate_stream_new(d->_window_bits, UP_WS_DEFLATE_CONTEXT_MEM_LEVEL);
    } else if (d->_restart && deflateReset(d->_z) != Z_OK) {
        up_fatal("websocket_deflate: deflateReset");
    }
    d->_restart = 0;
    deflate_message(d->_z, msg, len, out, pool);
    return 1;
}

void up_ws_deflater_note_shared(up_ws_deflater_t *d)
{
    d->_restart = d->_takeover;
}

void up_ws_deflater_dispose(up_ws_deflater_t *d)
{
    deflate_stream_free(d->_z);
    d->_z = NULL;
}
