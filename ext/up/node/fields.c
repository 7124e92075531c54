/* The app's response header fields into the engine's response; see fields.h. */

#include "fields.h"

#include <stdio.h>
#include "http1/response.h"

/* Bytes of a name or value a message shows; a longer one is cut and marked. */
#define SHOWN_MAX 96

/* bytes as a quoted string in out, as Ruby's inspect shows a String's ASCII (up_ruby's messages
 * show the app's values that way): quotes and backslashes escaped, \n \r \t, other bytes that
 * are not printable ASCII as \xHH. At most SHOWN_MAX bytes of it, then "...". out holds at least
 * 4 * SHOWN_MAX + 6 bytes. */
static void quote(char *out, const char *bytes, size_t len)
{
    char *p = out;
    *p++ = '"';
    for (size_t i = 0; i < len && i < SHOWN_MAX; i++) {
        unsigned char c = (unsigned char)bytes[i];
        if (c == '"' || c == '\\') {
            *p++ = '\\';
            *p++ = (char)c;
        } else if (c == '\n' || c == '\r' || c == '\t') {
            *p++ = '\\';
            *p++ = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
        } else if (c < 0x20 || c >= 0x7f) {
            p += sprintf(p, "\\x%02X", c);
        } else {
            *p++ = (char)c;
        }
    }
    *p++ = '"';
    if (len > SHOWN_MAX)
        p += sprintf(p, "...");
    *p = '\0';
}

/* The message for e on the field name (and value), in s->message. */
static const char *refusal(up_node_scratch_t *s, up_response_error_t e, const char *name,
                           size_t name_len, const char *value, size_t value_len)
{
    char shown[4 * SHOWN_MAX + 6];
    if (e == UP_RESPONSE_E_BAD_CONTENT_LENGTH) {
        quote(shown, value, value_len);
        snprintf(s->message, sizeof(s->message), "invalid content-length %s", shown);
        return s->message;
    }
    quote(shown, name, name_len);
    if (e == UP_RESPONSE_E_BAD_HEADER_NAME)
        snprintf(s->message, sizeof(s->message), "invalid response header name %s", shown);
    else if (e == UP_RESPONSE_E_BAD_HEADER_VALUE)
        snprintf(s->message, sizeof(s->message),
                 "the value of response header %s has CR, LF or NUL", shown);
    else
        snprintf(s->message, sizeof(s->message), "response header %s cannot be added", shown);
    return s->message;
}

const char *up_node_fields_add(napi_env env, up_node_scratch_t *s, up_exchange_t *ex,
                               napi_value fields, uint32_t n, up_node_fields_skip_t skip,
                               void *arg)
{
    for (uint32_t i = 0; i + 1 < n; i += 2) {
        napi_value name_v, value_v;
        const char *name, *value;
        size_t name_len, value_len;
        napi_get_element(env, fields, i, &name_v);
        if (up_node_scratch_bytes(env, s, name_v, 0, 0, &name, &name_len) != 0)
            return "a response header name is not a String";
        if (skip != NULL && skip(name, name_len, arg))
            continue;
        int name_in_scratch = name == s->base; /* not a Buffer's own memory */
        napi_get_element(env, fields, i + 1, &value_v);
        /* The name stays in scratch below the value. */
        if (up_node_scratch_bytes(env, s, value_v, 0, name_len + 1, &value, &value_len) != 0) {
            char shown[4 * SHOWN_MAX + 6];
            quote(shown, name_in_scratch ? s->base : name, name_len);
            snprintf(s->message, sizeof(s->message),
                     "the value of response header %s is not a String", shown);
            return s->message;
        }
        if (name_in_scratch)
            name = s->base; /* scratch memory may have moved */
        up_response_error_t e = up_response_add_header(ex, name, name_len, value, value_len);
        if (e != UP_RESPONSE_OK)
            return refusal(s, e, name, name_len, value, value_len);
    }
    return NULL;
}
