/* The chunked transfer-coding decoder; see chunked.h for the contract.
 *
 * A byte-at-a-time state machine for the framing (size lines, extensions, CRLFs, trailers) and
 * one memmove per run of chunk data. Framing bytes are never kept: the state says all that is
 * needed to go on, so a caller may drop every byte it handed in once a call returns. */

#include <string.h>
#include "base/token.h"
#include "http1/chunked.h"

/* A size line holds at most 16 hex digits: 2^64 - 1 bytes. */
#define MAX_SIZE_DIGITS 16

enum {
    S_SIZE_START = 0, /* first hex digit of a chunk size */
    S_SIZE,           /* more hex digits, or what ends them */
    S_EXT,            /* chunk extensions, in _ext_state */
    S_SIZE_LF,        /* the LF of the size line */
    S_DATA,           /* chunk data, _left_in_chunk to go */
    S_DATA_CR,        /* the CRLF after chunk data */
    S_DATA_LF,
    S_TRAILER_START,  /* a trailer field or the final CRLF */
    S_TRAILER_NAME,
    S_TRAILER_VALUE,
    S_TRAILER_LF,
    S_END_LF,         /* the LF of the final empty line */
    S_DONE
};

/* chunk-ext = *( BWS ";" BWS ext-name [ BWS "=" BWS ext-val ] ), RFC 9112 §7.1.1. */
enum {
    E_BEFORE_SEMI = 0, /* BWS, then ';' or the end of the line */
    E_BEFORE_NAME,     /* BWS after ';' */
    E_NAME,
    E_AFTER_NAME,      /* BWS, then '=', ';' or the end */
    E_BEFORE_VALUE,    /* BWS after '=' */
    E_TOKEN_VALUE,
    E_QUOTED_VALUE,
    E_QUOTED_PAIR
};

static int is_ws(unsigned char c)
{
    return c == ' ' || c == '\t';
}

static int hex_value(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static ssize_t fail(up_chunked_decoder_t *d, up_chunked_error_t err)
{
    d->error = err;
    return UP_CHUNKED_ERROR;
}

/* One byte of the extensions. Returns 0, or an error code for the caller to report. */
static up_chunked_error_t ext_step(up_chunked_decoder_t *d, unsigned char c)
{
    switch (d->_ext_state) {
    case E_BEFORE_SEMI:
        if (c == ';')
            d->_ext_state = E_BEFORE_NAME;
        else if (!is_ws(c))
            return UP_CHUNKED_E_BAD_EXTENSION;
        return UP_CHUNKED_E_NONE;
    case E_BEFORE_NAME:
        if (up_is_tchar(c))
            d->_ext_state = E_NAME;
        else if (!is_ws(c))
            return UP_CHUNKED_E_BAD_EXTENSION;
        return UP_CHUNKED_E_NONE;
    case E_NAME:
    case E_AFTER_NAME:
        if (c == '=')
            d->_ext_state = E_BEFORE_VALUE;
        else if (c == ';')
            d->_ext_state = E_BEFORE_NAME;
        else if (is_ws(c))
            d->_ext_state = E_AFTER_NAME;
        else if (!(d->_ext_state == E_NAME && up_is_tchar(c)))
            return UP_CHUNKED_E_BAD_EXTENSION;
        return UP_CHUNKED_E_NONE;
    case E_BEFORE_VALUE:
        if (c == '"')
            d->_ext_state = E_QUOTED_VALUE;
        else if (up_is_tchar(c))
            d->_ext_state = E_TOKEN_VALUE;
        else if (!is_ws(c))
            return UP_CHUNKED_E_BAD_EXTENSION;
        return UP_CHUNKED_E_NONE;
    case E_TOKEN_VALUE:
        if (c == ';')
            d->_ext_state = E_BEFORE_NAME;
        else if (is_ws(c))
            d->_ext_state = E_BEFORE_SEMI;
        else if (!up_is_tchar(c))
            return UP_CHUNKED_E_BAD_EXTENSION;
        return UP_CHUNKED_E_NONE;
    case E_QUOTED_VALUE:
        /* qdtext (RFC 9110 §5.6.4): HTAB, SP, VCHAR but '"' and '\', obs-text */
        if (c == '"')
            d->_ext_state = E_BEFORE_SEMI;
        else if (c == '\\')
            d->_ext_state = E_QUOTED_PAIR;
        else if (!(c == '\t' || (c >= 0x20 && c != 0x7f)))
            return UP_CHUNKED_E_BAD_EXTENSION;
        return UP_CHUNKED_E_NONE;
    case E_QUOTED_PAIR:
        if (!(c == '\t' || (c >= 0x20 && c != 0x7f)))
            return UP_CHUNKED_E_BAD_EXTENSION;
        d->_ext_state = E_QUOTED_VALUE;
        return UP_CHUNKED_E_NONE;
    }
    return UP_CHUNKED_E_BAD_EXTENSION;
}

/* The end of a size line: a size of 0 starts the trailers, anything else the data. */
static up_chunked_error_t size_line_done(up_chunked_decoder_t *d)
{
    if (d->_left_in_chunk == 0) {
        d->_state = S_TRAILER_START;
        return UP_CHUNKED_E_NONE;
    }
    if (d->max_body != 0 &&
        (d->total > d->max_body || d->_left_in_chunk > d->max_body - d->total))
        return UP_CHUNKED_E_BODY_TOO_LARGE;
    d->_state = S_DATA;
    return UP_CHUNKED_E_NONE;
}

/* One framing byte, in any state but S_DATA and S_DONE. */
static up_chunked_error_t framing_step(up_chunked_decoder_t *d, unsigned char c)
{
    if (d->_state <= S_SIZE_LF && ++d->_line_len > UP_CHUNKED_MAX_LINE)
        return UP_CHUNKED_E_LINE_TOO_LONG;
    if (d->_state >= S_TRAILER_START && ++d->_trailer_len > UP_CHUNKED_MAX_TRAILERS)
        return UP_CHUNKED_E_TRAILERS_TOO_LARGE;

    switch (d->_state) {
    case S_SIZE_START:
    case S_SIZE: {
        int v = hex_value(c);
        if (v >= 0) {
            if (d->_line_len > MAX_SIZE_DIGITS)
                return UP_CHUNKED_E_BAD_SIZE;
            d->_left_in_chunk = d->_left_in_chunk << 4 | (uint64_t)v;
            d->_state = S_SIZE;
        } else if (d->_state == S_SIZE_START) {
            return c == '\r' || c == '\n' ? UP_CHUNKED_E_BAD_LINE_ENDING : UP_CHUNKED_E_BAD_SIZE;
        } else if (c == '\r') {
            d->_state = S_SIZE_LF;
        } else if (c == ';' || is_ws(c)) {
            d->_state = S_EXT;
            d->_ext_state = E_BEFORE_SEMI;
            return ext_step(d, c);
        } else {
            return c == '\n' ? UP_CHUNKED_E_BAD_LINE_ENDING : UP_CHUNKED_E_BAD_SIZE;
        }
        return UP_CHUNKED_E_NONE;
    }
    case S_EXT:
        if (c == '\r') {
            /* the line may end after a name or a value, not after ';', '=' or in quotes */
            if (d->_ext_state == E_BEFORE_NAME || d->_ext_state == E_BEFORE_VALUE ||
                d->_ext_state == E_QUOTED_VALUE || d->_ext_state == E_QUOTED_PAIR)
                return UP_CHUNKED_E_BAD_EXTENSION;
            d->_state = S_SIZE_LF;
            return UP_CHUNKED_E_NONE;
        }
        if (c == '\n')
            return UP_CHUNKED_E_BAD_LINE_ENDING;
        return ext_step(d, c);
    case S_SIZE_LF:
        if (c != '\n')
            return UP_CHUNKED_E_BAD_LINE_ENDING;
        return size_line_done(d);
    case S_DATA_CR:
        if (c != '\r')
            return UP_CHUNKED_E_BAD_LINE_ENDING;
        d->_state = S_DATA_LF;
        return UP_CHUNKED_E_NONE;
    case S_DATA_LF:
        if (c != '\n')
            return UP_CHUNKED_E_BAD_LINE_ENDING;
        d->_state = S_SIZE_START;
        d->_line_len = 0;
        d->_left_in_chunk = 0;
        return UP_CHUNKED_E_NONE;
    case S_TRAILER_START:
        if (c == '\r')
            d->_state = S_END_LF;
        else if (up_is_tchar(c))
            d->_state = S_TRAILER_NAME;
        else
            return c == '\n' ? UP_CHUNKED_E_BAD_LINE_ENDING : UP_CHUNKED_E_BAD_TRAILER;
        return UP_CHUNKED_E_NONE;
    case S_TRAILER_NAME:
        if (c == ':')
            d->_state = S_TRAILER_VALUE;
        else if (!up_is_tchar(c))
            return UP_CHUNKED_E_BAD_TRAILER;
        return UP_CHUNKED_E_NONE;
    case S_TRAILER_VALUE:
        if (c == '\r')
            d->_state = S_TRAILER_LF;
        else if (c == '\n')
            return UP_CHUNKED_E_BAD_LINE_ENDING;
        else if (!(c == '\t' || (c >= 0x20 && c != 0x7f)))
            return UP_CHUNKED_E_BAD_TRAILER;
        return UP_CHUNKED_E_NONE;
    case S_TRAILER_LF:
        if (c != '\n')
            return UP_CHUNKED_E_BAD_LINE_ENDING;
        d->_state = S_TRAILER_START;
        return UP_CHUNKED_E_NONE;
    case S_END_LF:
        if (c != '\n')
            return UP_CHUNKED_E_BAD_LINE_ENDING;
        d->_state = S_DONE;
        return UP_CHUNKED_E_NONE;
    }
    return UP_CHUNKED_E_BAD_SIZE;
}

ssize_t up_chunked_decode(up_chunked_decoder_t *d, char *buf, size_t *len)
{
    size_t in = *len, r = 0, w = 0;
    if (d->error != UP_CHUNKED_E_NONE)
        return UP_CHUNKED_ERROR;
    while (r < in && d->_state != S_DONE) {
        if (d->_state == S_DATA) {
            size_t n = in - r;
            if (n > d->_left_in_chunk)
                n = (size_t)d->_left_in_chunk;
            if (w != r)
                memmove(buf + w, buf + r, n);
            w += n;
            r += n;
            d->total += n;
            d->_left_in_chunk -= n;
            if (d->_left_in_chunk == 0)
                d->_state = S_DATA_CR;
            continue;
        }
        up_chunked_error_t err = framing_step(d, (unsigned char)buf[r++]);
        if (err != UP_CHUNKED_E_NONE) {
            *len = w;
            return fail(d, err);
        }
    }
    *len = w;
    if (d->_state != S_DONE)
        return UP_CHUNKED_INCOMPLETE;
    if (w != r)
        memmove(buf + w, buf + r, in - r);
    return (ssize_t)(in - r);
}

int up_chunked_error_status(up_chunked_error_t err)
{
    return err == UP_CHUNKED_E_BODY_TOO_LARGE ? 413 : 400;
}

const char *up_chunked_error_reason(up_chunked_error_t err)
{
    switch (err) {
    case UP_CHUNKED_E_NONE: return "No error";
    case UP_CHUNKED_E_BAD_SIZE: return "Invalid chunk size";
    case UP_CHUNKED_E_BAD_EXTENSION: return "Invalid chunk extension";
    case UP_CHUNKED_E_LINE_TOO_LONG: return "Chunk size line too long";
    case UP_CHUNKED_E_BAD_LINE_ENDING: return "Chunk lines must end with CRLF";
    case UP_CHUNKED_E_BAD_TRAILER: return "Invalid trailer field";
    case UP_CHUNKED_E_TRAILERS_TOO_LARGE: return "Trailer fields too large";
    case UP_CHUNKED_E_BODY_TOO_LARGE: return "Request body is larger than the server accepts";
    }
    return "Invalid chunked body";
}
