#ifndef UP_STATIC_FILE_H
#define UP_STATIC_FILE_H

/* Static files, answered by the engine before the app is asked: on the loop thread, from the
 * open-file cache (file_cache.h), with no runtime object made. It is a link of the server's
 * handler chain (core/context.h), which a protocol hands every complete request to: a GET or
 * HEAD for a file under one of the directories is answered here, and anything else (a miss,
 * another method, an upgrade) goes on to the app.
 *
 * Where files come from: mounts, each a URL prefix and one or more directories (--public DIR is
 * the mount "/", --static /assets=DIR:DIR another); a path is looked for under the mounts whose
 * prefix it starts with, longest prefix first, and in each mount's directories in order: the
 * first that holds the file wins.
 *
 * What a response says (RFC 9110): the body by sendfile (or from memory for a small file);
 * content-type from the runtime's table (mime.h); a strong etag and last-modified; 304 and 412
 * for conditional requests and If-Range honoured the right way round (precondition.h); Range:
 * single, suffix, open and multiple ranges (multipart/byteranges), 416 with
 * "content-range: bytes * /SIZE" (range.h); accept-ranges; HEAD without a body; a precompressed
 * variant (.br, .zst, .gz) chosen by Accept-Encoding, with "vary: accept-encoding" on every
 * response for a file that has variants, whichever is sent (content_coding.h); a directory
 * answered by its index.html, and a 301 to the slash form when asked without the slash; one
 * year of cache-control, immutable, for fingerprinted assets (/assets/NAME-HEX.EXT).
 *
 * Safety: the path is decoded once and refused (static_path.h) before the disk is asked, and
 * opened beneath its root by the kernel (file_cache.h), so no request reads a byte outside the
 * directories; dotfiles only with UP_STATIC_DOTFILES, a directory listing only with
 * UP_STATIC_DIR_LISTING (names escaped).
 *
 * A site config (the static buildpack's static.json): clean URLs (/about serves about.html),
 * an error page for the 404s the engine answers itself, fields by path glob, redirects, and
 * https_only (a plain-HTTP request is redirected, X-Forwarded-Proto counting only from trusted
 * proxies). Without an app behind it (UP_STATIC_ONLY: up_ruby --static-only) the engine answers
 * every request itself: 404 for a miss, 405 for another method. */

#include <stddef.h>
#include "core/conn.h"
#include "core/exchange.h"
#include "handlers/file_cache.h"
#include "handlers/mime.h"

/* Mounts (URL prefixes), directories per mount, header rules, redirects and trusted proxies one
 * handler takes; more are refused when configured. */
#define UP_STATIC_MAX_MOUNTS 16
#define UP_STATIC_MAX_DIRS 8
#define UP_STATIC_MAX_RULES 64
#define UP_STATIC_MAX_PROXIES 32
/* Names a directory listing shows at most (the rest is left out, and the page says so), so a
 * huge directory cannot hold the loop. */
#define UP_STATIC_MAX_LISTING 1000

#define UP_STATIC_DOTFILES 1u    /* serve names that start with '.' */
#define UP_STATIC_DIR_LISTING 2u /* an HTML index for a directory without index.html */
#define UP_STATIC_CLEAN_URLS 4u  /* /about serves about.html */
#define UP_STATIC_HTTPS_ONLY 8u  /* redirect plain HTTP to https:// */
#define UP_STATIC_ONLY 16u       /* no app behind: answer every request here */

typedef struct up_static_t up_static_t;

/* flags: UP_STATIC_*; cache: the open-file cache's options (NULL for the defaults). */
up_static_t *up_static_new(unsigned flags, const up_file_cache_options_t *cache);
/* After the server that used it is freed. Representations still queued live on. */
void up_static_free(up_static_t *st);

/* ---- configuration: before the server runs; each returns 0, or -1 with *err (a static
 * string) ---------------------------------------------------------------------------------- */

/* Serves dir under url_prefix ("/" or "/assets": a path of segments, no trailing '/'); a
 * prefix given again adds a directory after the earlier ones. */
int up_static_add_dir(up_static_t *st, const char *url_prefix, const char *dir, const char **err);
/* The media type of an extension (mime.h). */
int up_static_add_mime(up_static_t *st, const char *ext, const char *type, const char **err);
/* The field name: value on every file response whose path matches glob (path_glob.h). */
int up_static_add_header(up_static_t *st, const char *glob, const char *name, const char *value,
                         const char **err);
/* Requests whose path matches glob get status (301, 302, 303, 307 or 308) to location. */
int up_static_add_redirect(up_static_t *st, const char *glob, const char *location, int status,
                           const char **err);
/* A proxy (an address, or ADDRESS/BITS) whose X-Forwarded-Proto is believed. */
int up_static_add_trusted_proxy(up_static_t *st, const char *cidr, const char **err);
/* The file under "/" that a 404 answered here shows (a path like "/404.html"). */
int up_static_set_error_page(up_static_t *st, const char *path, const char **err);

/* ---- serving ----------------------------------------------------------------------------- */

/* Puts st in server's handler chain (context.h), to be asked before the app. Returns 0, or -1
 * when the chain is full. Before the server runs; st outlives the server. */
int up_static_install(up_static_t *st, up_context_t *server);

/* Answers ex->req if it is the handler's (never a request that may become another protocol:
 * the app's to accept): returns 1 when a whole response was staged
 * (up_response_* calls), 0 when the request goes to the app (nothing staged).
 * The response writer's state must be fresh (up_response_reset). Loop thread, the exchange not
 * lent. */
int up_static_loop_serve(up_static_t *st, up_exchange_t *ex);

/* The open-file cache, for stats and tests. Loop thread. */
up_file_cache_t *up_static_cache(up_static_t *st);

#endif
