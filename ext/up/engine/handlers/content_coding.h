#ifndef UP_CONTENT_CODING_H
#define UP_CONTENT_CODING_H

/* Which precompressed variant of a file to send for a request's Accept-Encoding (RFC 9110
 * §12.5.3): a pure function of the field lines and the variants that exist on disk; any thread.
 *
 * Codings are weighed by their q-values; one not listed counts with the weight of "*" if that
 * is listed, else not at all (q=0 refuses a coding). The compressed variant of highest weight
 * wins, br before zstd before gzip at equal weights (smallest first); identity is sent when no
 * variant is acceptable, or when the client listed identity with a weight above the best one.
 * With no Accept-Encoding at all, identity: the field's absence allows any coding, but no
 * client that leaves it out is known to decode one. */

#include "handlers/precondition.h"

typedef enum up_coding_t {
    UP_CODING_IDENTITY = 0,
    UP_CODING_BR,
    UP_CODING_ZSTD,
    UP_CODING_GZIP,
    UP_CODING__COUNT
} up_coding_t;

#define UP_CODING_BIT(c) (1u << (c))

/* The coding to send; available has UP_CODING_BIT set for each variant there is (identity is
 * always there). A malformed element of the list is skipped; a field on more lines than
 * UP_PRECONDITION_MAX_LINES counts as absent. */
up_coding_t up_coding_choose(const up_field_lines_t *accept_encoding, unsigned available);

/* "br", "zstd", "gzip" (content-encoding values); "" for identity. */
const char *up_coding_name(up_coding_t c);
/* The file name suffix of a variant: ".br", ".zst", ".gz"; "" for identity. */
const char *up_coding_suffix(up_coding_t c);

#endif
