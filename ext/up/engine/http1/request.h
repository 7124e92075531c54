#ifndef UP_REQUEST_H
#define UP_REQUEST_H

/* The request of an exchange as the binding and the handlers see it (ex->req): its parsed
 * head, its body, and what it may become. HTTP/2 (http2/http2.c) fills the same head from a
 * stream's fields: minor_version 1, the :authority as host, and http2 set. */

#include "base/slice.h"
#include "core/conn.h"
#include "http1/http1_parser.h"
#include "http1/request_body.h"
#include "http1/upgrade.h"

typedef struct up_request_t {
    up_http1_request_t head;
    up_request_body_t body;
    up_upgrade_kind_t upgrade; /* what it may become (upgrade.h), set before it is handed out */
    up_slice_t ws_key;         /* Sec-WebSocket-Key of a valid WebSocket handshake */
    unsigned http2 : 1;        /* came on an HTTP/2 stream */
} up_request_t;

#endif
