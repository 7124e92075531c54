/* ws_load: a WebSocket load client for UP!'s benchmarks (bench/README.md). One thread, epoll,
 * its own handshake and framing; talks to 127.0.0.1 or ::1 only, and every run ends by itself
 * within its bounds. Prints one JSON line on stdout (report.h); says what went wrong on
 * stderr. Exit status: 0 with a report, 1 when the run could not start, 2 for a bad command
 * line. */

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "modes.h"
#include "options.h"

/* Descriptors besides the connections: stdio, epoll, what libc opens. */
#define SPARE_FILES 32

static const char USAGE[] =
    "Usage: ws_load echo|broadcast|idle --port N [options]\n"
    "\n"
    "  --host ADDR          127.0.0.1 (default) or ::1; no other host is accepted\n"
    "  --port N             the server's port\n"
    "  --path PATH          where to connect (/); broadcast: the subscribers\n"
    "  --publish-path PATH  broadcast: the publisher (/publish)\n"
    "  -c, --connections N  echo: clients (100); broadcast: subscribers (1000);\n"
    "                       idle: connections (10000); at most 100000\n"
    "  -s, --size BYTES     per message, 34 to 1048576 (echo 512, broadcast and idle 64)\n"
    "  -d, --duration S     echo, broadcast: seconds measured (5), at most 600\n"
    "  -w, --window N       broadcast: messages in flight at most, 1 to 64 (8)\n"
    "      --hold S         idle: seconds held without traffic (5), at most 600\n"
    "      --sample N       idle: connections that must still echo after the hold (100)\n"
    "      --sync           idle: after the hold, print a line and wait for one on stdin\n"
    "      --open-timeout S seconds for every handshake to complete (60)\n";

static int usage_error(const char *fmt, const char *arg)
{
    fputs("ws_load: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs("\nTry 'ws_load --help'.\n", stderr);
    return 2;
}

/* Reads a number within [min, max]; false if arg is anything else. */
static bool number(const char *arg, double min, double max, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(arg, &end);
    if (errno || end == arg || *end || v < min || v > max)
        return false;
    *out = v;
    return true;
}

static bool loopback(const char *host, unsigned port, wsl_options_t *opt)
{
    struct sockaddr_in *v4 = (struct sockaddr_in *)&opt->addr;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&opt->addr;
    memset(&opt->addr, 0, sizeof opt->addr);
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1 &&
        v4->sin_addr.s_addr == htonl(INADDR_LOOPBACK)) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        opt->addr_len = sizeof *v4;
        snprintf(opt->host, sizeof opt->host, "127.0.0.1:%u", port);
        return true;
    }
    if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1 &&
        memcmp(&v6->sin6_addr, &in6addr_loopback, sizeof in6addr_loopback) == 0) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        opt->addr_len = sizeof *v6;
        snprintf(opt->host, sizeof opt->host, "[::1]:%u", port);
        return true;
    }
    return false;
}

/* Raises the descriptor limit to what the connections need, the hard limit too when this
 * process may; cuts opt->connections to what the hard limit allows, and says so. */
static void fit_file_limit(wsl_options_t *opt)
{
    rlim_t need = (rlim_t)opt->connections + 1 + SPARE_FILES;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= need)
        return;
    if (rl.rlim_max < need) {
        struct rlimit raised = {need, need};
        if (setrlimit(RLIMIT_NOFILE, &raised) == 0)
            return;
    } else {
        rl.rlim_cur = need;
        if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
            return;
    }
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
    unsigned fit = rl.rlim_cur > 1 + SPARE_FILES ? (unsigned)(rl.rlim_cur - 1 - SPARE_FILES) : 0;
    if (fit < opt->connections) {
        fprintf(stderr,
                "ws_load: the file limit (%llu, hard) allows %u connections, not %u: "
                "running with %u (raise it with ulimit -Hn as root)\n",
                (unsigned long long)rl.rlim_cur, fit, opt->connections, fit);
        opt->connections = fit;
    }
}

int main(int argc, char **argv)
{
    static const struct option longs[] = {
        {"host", required_argument, NULL, 'H'},
        {"port", required_argument, NULL, 'p'},
        {"path", required_argument, NULL, 'P'},
        {"publish-path", required_argument, NULL, 'B'},
        {"connections", required_argument, NULL, 'c'},
        {"size", required_argument, NULL, 's'},
        {"duration", required_argument, NULL, 'd'},
        {"window", required_argument, NULL, 'w'},
        {"hold", required_argument, NULL, 'o'},
        {"sample", required_argument, NULL, 'm'},
        {"sync", no_argument, NULL, 'y'},
        {"open-timeout", required_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    wsl_options_t opt = {.path = "/",
                         .publish_path = "/publish",
                         .duration = 5,
                         .hold = 5,
                         .window = 8,
                         .sample = 100,
                         .open_timeout = 60};
    const char *host = "127.0.0.1";
    double port = 0, v;
    int ch;
    while ((ch = getopt_long(argc, argv, "c:s:d:w:h", longs, NULL)) != -1) {
        switch (ch) {
        case 'H': host = optarg; break;
        case 'p':
            if (!number(optarg, 1, 65535, &port))
                return usage_error("--port %s: not a port", optarg);
            break;
        case 'P': opt.path = optarg; break;
        case 'B': opt.publish_path = optarg; break;
        case 'c':
            if (!number(optarg, 1, WSL_MAX_CONNECTIONS, &v))
                return usage_error("--connections %s: want 1 to 100000", optarg);
            opt.connections = (unsigned)v;
            break;
        case 's':
            if (!number(optarg, WSL_MIN_SIZE, WSL_MAX_SIZE, &v))
                return usage_error("--size %s: want 34 to 1048576", optarg);
            opt.size = (uint32_t)v;
            break;
        case 'd':
            if (!number(optarg, 0.1, WSL_MAX_SECONDS, &opt.duration))
                return usage_error("--duration %s: want 0.1 to 600 seconds", optarg);
            break;
        case 'w':
            if (!number(optarg, 1, WSL_MAX_WINDOW, &v))
                return usage_error("--window %s: want 1 to 64", optarg);
            opt.window = (unsigned)v;
            break;
        case 'o':
            if (!number(optarg, 0, WSL_MAX_SECONDS, &opt.hold))
                return usage_error("--hold %s: want 0 to 600 seconds", optarg);
            break;
        case 'm':
            if (!number(optarg, 0, WSL_MAX_CONNECTIONS, &v))
                return usage_error("--sample %s: want 0 to 100000", optarg);
            opt.sample = (unsigned)v;
            break;
        case 'y': opt.sync = true; break;
        case 't':
            if (!number(optarg, 0.1, WSL_MAX_SECONDS, &opt.open_timeout))
                return usage_error("--open-timeout %s: want 0.1 to 600 seconds", optarg);
            break;
        case 'h': fputs(USAGE, stdout); return 0;
        default: return usage_error("%s", "bad option");
        }
    }
    if (optind != argc - 1)
        return usage_error("%s", "want one mode: echo, broadcast or idle");
    const char *mode = argv[optind];
    if (strcmp(mode, "echo") == 0)
        opt.mode = WSL_MODE_ECHO;
    else if (strcmp(mode, "broadcast") == 0)
        opt.mode = WSL_MODE_BROADCAST;
    else if (strcmp(mode, "idle") == 0)
        opt.mode = WSL_MODE_IDLE;
    else
        return usage_error("unknown mode %s: want echo, broadcast or idle", mode);
    if (port == 0)
        return usage_error("%s", "--port is required");
    if (!loopback(host, (unsigned)port, &opt))
        return usage_error("refusing host %s: only 127.0.0.1 and ::1", host);
    if (opt.path[0] != '/' || opt.publish_path[0] != '/')
        return usage_error("%s", "paths start with /");
    if (opt.connections == 0)
        opt.connections = opt.mode == WSL_MODE_ECHO        ? 100
                          : opt.mode == WSL_MODE_BROADCAST ? 1000
                                                           : 10000;
    if (opt.size == 0)
        opt.size = opt.mode == WSL_MODE_ECHO ? 512 : 64;
    opt.requested = opt.connections;
    fit_file_limit(&opt);
    if (opt.connections == 0)
        return 1;

    switch (opt.mode) {
    case WSL_MODE_ECHO: return wsl_echo(&opt, stdout);
    case WSL_MODE_BROADCAST: return wsl_broadcast(&opt, stdout);
    case WSL_MODE_IDLE: return wsl_idle(&opt, stdout);
    }
    return 1;
}
