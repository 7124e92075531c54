#ifndef WSL_OPTIONS_H
#define WSL_OPTIONS_H

/* What one run of ws_load was asked to do, parsed once by main.c and read by everything else.
 * The limits are where the command line is checked: every run is bounded in time, connections
 * and memory, and goes to the loopback address only. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#define WSL_MAX_CONNECTIONS 100000
#define WSL_MAX_SECONDS 600.0
/* Messages carry a 34-byte head (message.h); a megabyte is far above what the tables use. */
#define WSL_MIN_SIZE 34
#define WSL_MAX_SIZE (1u << 20)
/* Each subscriber tracks the window's messages in one 64-bit mask (broadcast.c). */
#define WSL_MAX_WINDOW 64
/* Room for a Host header: "[::1]:65535". */
#define WSL_HOST_MAX 64

typedef enum { WSL_MODE_ECHO, WSL_MODE_BROADCAST, WSL_MODE_IDLE } wsl_mode_t;

typedef struct {
    wsl_mode_t mode;
    struct sockaddr_storage addr; /* 127.0.0.1 or ::1, with the port */
    socklen_t addr_len;
    char host[WSL_HOST_MAX];  /* the Host header */
    const char *path;         /* echo, idle, and the broadcast subscribers */
    const char *publish_path; /* the broadcast publisher */
    unsigned connections;     /* echo: clients; broadcast: subscribers; idle: held */
    unsigned requested;       /* connections asked for, above when the file limit cut them */
    uint32_t size;            /* bytes per message */
    double duration;          /* echo and broadcast: seconds measured */
    double hold;              /* idle: seconds held without traffic */
    double open_timeout;      /* seconds for every handshake to complete */
    unsigned window;          /* broadcast: messages in flight at most */
    unsigned sample;          /* idle: connections that must still echo after the hold */
    bool sync;                /* idle: wait for a line on stdin after the hold */
} wsl_options_t;

#endif
