/* Choosing a precompressed variant; see content_coding.h for the contract. */

#include "base/token.h"
#include "handlers/content_coding.h"

/* Weights in thousandths, as qvalue has at most three decimals; -1 for "not listed". */
#define Q_UNSET (-1)
#define Q_MAX 1000

/* The slots of the weight table: the codings, then "*". */
enum { SLOT_STAR = UP_CODING__COUNT, SLOTS };

const char *up_coding_name(up_coding_t c)
{
    switch (c) {
    case UP_CODING_BR: return "br";
    case UP_CODING_ZSTD: return "zstd";
    case UP_CODING_GZIP: return "gzip";
    default: return "";
    }
}

const char *up_coding_suffix(up_coding_t c)
{
    switch (c) {
    case UP_CODING_BR: return ".br";
    case UP_CODING_ZSTD: return ".zst";
    case UP_CODING_GZIP: return ".gz";
    default: return "";
    }
}

static size_t skip_ows(const char *s, size_t len, size_t i)
{
    while (i < len && (s[i] == ' ' || s[i] == '\t'))
        i++;
    return i;
}

/* The slot a coding name s[0..len) fills, or -1 for a coding no variant has. */
static int slot_of(const char *s, size_t len)
{
    if (UP_LOWER_EQ(s, len, "br"))
        return UP_CODING_BR;
    if (UP_LOWER_EQ(s, len, "zstd"))
        return UP_CODING_ZSTD;
    if (UP_LOWER_EQ(s, len, "gzip") || UP_LOWER_EQ(s, len, "x-gzip"))
        return UP_CODING_GZIP;
    if (UP_LOWER_EQ(s, len, "identity"))
        return UP_CODING_IDENTITY;
    if (len == 1 && s[0] == '*')
        return SLOT_STAR;
    return -1;
}

/* qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ) (RFC 9110 §12.4.2) at s[0..len),
 * in thousandths, or -1. */
static int parse_qvalue(const char *s, size_t len)
{
    if (len == 0 || (s[0] != '0' && s[0] != '1'))
        return -1;
    int q = (s[0] - '0') * Q_MAX;
    if (len == 1)
        return q;
    if (s[1] != '.' || len > 5)
        return -1;
    int scale = 100;
    for (size_t i = 2; i < len; i++, scale /= 10) {
        if (s[i] < '0' || s[i] > '9' || (q == Q_MAX && s[i] != '0'))
            return -1;
        q += (s[i] - '0') * scale;
    }
    return q;
}

/* Reads one line of the field into q[]. */
static void read_line(const char *s, size_t len, int q[SLOTS])
{
    size_t i = 0;
    while (i < len) {
        i = skip_ows(s, len, i);
        size_t start = i;
        while (i < len && up_is_tchar((unsigned char)s[i]))
            i++;
        int slot = slot_of(s + start, i - start);
        int weight = Q_MAX, ok = i > start;
        i = skip_ows(s, len, i);
        if (ok && i < len && s[i] == ';') {
            i = skip_ows(s, len, i + 1);
            if (len - i >= 2 && (s[i] == 'q' || s[i] == 'Q') && s[i + 1] == '=') {
                size_t v = i + 2;
                i = v;
                while (i < len && s[i] != ',' && s[i] != ' ' && s[i] != '\t')
                    i++;
                weight = parse_qvalue(s + v, i - v);
                ok = weight >= 0;
                i = skip_ows(s, len, i);
            } else {
                ok = 0;
            }
        }
        if (i < len && s[i] != ',')
            ok = 0;
        /* Whatever did not parse is skipped up to the next comma. */
        while (i < len && s[i] != ',')
            i++;
        if (i < len)
            i++;
        if (ok && slot >= 0)
            q[slot] = weight;
    }
}

up_coding_t up_coding_choose(const up_field_lines_t *accept_encoding, unsigned available)
{
    const up_field_lines_t *f = accept_encoding;
    if (f->count == 0 || f->count > UP_PRECONDITION_MAX_LINES)
        return UP_CODING_IDENTITY;
    int q[SLOTS];
    for (int k = 0; k < SLOTS; k++)
        q[k] = Q_UNSET;
    for (int k = 0; k < f->count; k++)
        read_line(f->lines[k].base, f->lines[k].len, q);
    up_coding_t best = UP_CODING_IDENTITY;
    int best_q = 0;
    /* In order of preference: a later coding must weigh more to win. */
    for (int c = UP_CODING_BR; c < UP_CODING__COUNT; c++) {
        if (!(available & UP_CODING_BIT(c)))
            continue;
        int w = q[c] != Q_UNSET ? q[c] : q[SLOT_STAR] != Q_UNSET ? q[SLOT_STAR] : 0;
        if (w > best_q) {
            best = (up_coding_t)c;
            best_q = w;
        }
    }
    if (best != UP_CODING_IDENTITY && q[UP_CODING_IDENTITY] > best_q)
        return UP_CODING_IDENTITY;
    return best;
}
