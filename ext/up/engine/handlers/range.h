#ifndef UP_RANGE_H
#define UP_RANGE_H

/* The Range request header (RFC 9110 §14.1.1, §14.2) against a representation of a known size:
 * which bytes to send. A pure function: the field value in, byte ranges out; no allocation.
 *
 *   bytes=0-499        the first 500 bytes            bytes=500-     from byte 500 to the end
 *   bytes=-500         the last 500 bytes (a suffix)  bytes=0-0,-1   two ranges (multipart)
 *
 * A range whose first byte lies past the end is unsatisfiable and dropped; a last byte past the
 * end is cut to the end. What the server may ignore, it ignores (the whole representation is
 * sent, 200): another unit than bytes (which it MUST ignore), a syntax error, more than
 * UP_RANGE_MAX ranges, or ranges that overlap (§14.2 names both as signs of a broken client or
 * a denial-of-service attempt). When every range is unsatisfiable, the answer is 416. */

#include <stddef.h>
#include <stdint.h>

/* Most ranges one request may ask for; more are ignored. */
#define UP_RANGE_MAX 16

typedef enum up_range_result_t {
    UP_RANGE_IGNORE = 0,   /* send the whole representation (200) */
    UP_RANGE_SATISFIABLE,  /* send ranges[0..count) (206) */
    UP_RANGE_UNSATISFIABLE /* 416, content-range: bytes *\/size */
} up_range_result_t;

typedef struct up_range_t {
    uint64_t first, last; /* inclusive, last < size */
} up_range_t;

typedef struct up_range_set_t {
    up_range_t ranges[UP_RANGE_MAX]; /* in the order asked */
    int count;
} up_range_set_t;

/* Reads the Range field value value[0..len) for a representation of size bytes; set->count is
 * 0 unless the result is UP_RANGE_SATISFIABLE. Any thread. */
up_range_result_t up_range_parse(const char *value, size_t len, uint64_t size,
                                 up_range_set_t *set);

#endif
