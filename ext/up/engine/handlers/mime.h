#ifndef UP_MIME_H
#define UP_MIME_H

/* File extensions to media types, for the content-type of static files. The binding fills the
 * table at start from its runtime's own table (the MRI binding from Rack::Mime::MIME_TYPES), so
 * that a file has the same type whether the engine or the app serves it; then it is read-only,
 * and any thread may look up. Text types get "; charset=utf-8". */

#include <stddef.h>
#include "base/slice.h"

/* Longest extension kept, without its dot; longer ones are refused by up_mime_add. */
#define UP_MIME_MAX_EXT 32
/* Longest media type, its charset parameter included. */
#define UP_MIME_MAX_TYPE 255
/* What a file of an unknown extension is sent as (Rack::Files' default too). */
#define UP_MIME_DEFAULT "application/octet-stream"

typedef struct up_mime_t up_mime_t;

up_mime_t *up_mime_new(void);
void up_mime_free(up_mime_t *m);
/* Maps ext (".css" or "css", matched without regard to ASCII case) to type; a later add of the
 * same extension replaces the earlier one. Returns 0, or -1 when ext is empty or too long, or
 * type is empty, too long or not a valid field value. Before the table is shared. */
int up_mime_add(up_mime_t *m, const char *ext, const char *type);
/* The content-type for the file name name[0..len) (a path: its last segment's last
 * extension), or UP_MIME_DEFAULT. The slice stays valid as long as the table. */
up_slice_t up_mime_lookup(const up_mime_t *m, const char *name, size_t len);

#endif
