/* What `up`'s restarts need of the process that Node has no call for (node/up/restart.js):
 * exec in place (Node 20 has no process.execve), keeping chosen descriptors open across it,
 * and reaping children node:cluster did not fork (the workers a re-executed primary inherits
 * from its previous image: libuv waits only for the children it spawned). The JavaScript
 * thread; none of these touch the engine. */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "addon.h"
#include "base/memory.h"

/* Words of a command line or entries of an environment one exec takes, and the bytes of one. */
#define MAX_EXEC_STRINGS 65536
#define MAX_EXEC_STRING (128 * 1024)

static napi_value throw_errno(napi_env env, const char *what)
{
    char message[256];
    snprintf(message, sizeof(message), "%s: %s", what, strerror(errno));
    napi_throw_error(env, NULL, message);
    return NULL;
}

static void free_strings(char **strings)
{
    for (size_t i = 0; strings != NULL && strings[i] != NULL; i++)
        free(strings[i]);
    free(strings);
}

/* A JavaScript Array of strings as a NULL-terminated C array, or NULL when it is not one
 * (or is too large). */
static char **strings_of(napi_env env, napi_value list)
{
    bool is_array = false;
    uint32_t n = 0;
    if (napi_is_array(env, list, &is_array) != napi_ok || !is_array ||
        napi_get_array_length(env, list, &n) != napi_ok || n >= MAX_EXEC_STRINGS)
        return NULL;
    char **out = up_calloc((size_t)n + 1, sizeof(*out));
    for (uint32_t i = 0; i < n; i++) {
        napi_value v;
        size_t len;
        if (napi_get_element(env, list, i, &v) != napi_ok ||
            napi_get_value_string_utf8(env, v, NULL, 0, &len) != napi_ok ||
            len >= MAX_EXEC_STRING) {
            free_strings(out);
            return NULL;
        }
        out[i] = up_malloc(len + 1);
        napi_get_value_string_utf8(env, v, out[i], len + 1, &len);
    }
    return out;
}

static int set_cloexec(int fd, int on)
{
    int flags = fcntl(fd, F_GETFD);
    if (flags < 0)
        return -1;
    return fcntl(fd, F_SETFD, on ? flags | FD_CLOEXEC : flags & ~FD_CLOEXEC);
}

/* The standard descriptors as a process started afresh gets them: Node's streams made them
 * close-on-exec and non-blocking, and the new image must write its log to the same place.
 * saved keeps what was there, for restore_stdio when exec fails. */
typedef struct stdio_state_t {
    int fd_flags[3];
    int fl_flags[3];
} stdio_state_t;

static void reset_stdio(stdio_state_t *saved)
{
    for (int fd = 0; fd < 3; fd++) {
        saved->fd_flags[fd] = fcntl(fd, F_GETFD);
        saved->fl_flags[fd] = fcntl(fd, F_GETFL);
        if (saved->fd_flags[fd] >= 0)
            fcntl(fd, F_SETFD, saved->fd_flags[fd] & ~FD_CLOEXEC);
        if (saved->fl_flags[fd] >= 0)
            fcntl(fd, F_SETFL, saved->fl_flags[fd] & ~O_NONBLOCK);
    }
}

static void restore_stdio(const stdio_state_t *saved)
{
    for (int fd = 0; fd < 3; fd++) {
        if (saved->fd_flags[fd] >= 0)
            fcntl(fd, F_SETFD, saved->fd_flags[fd]);
        if (saved->fl_flags[fd] >= 0)
            fcntl(fd, F_SETFL, saved->fl_flags[fd]);
    }
}

/* execvpe(argv, env, keepFds): replaces this process's image with argv[0] (searched on PATH)
 * run with argv and env ("NAME=value" each), the same pid; the standard descriptors and
 * keepFds stay open across it, every other descriptor Node opened closes (they are
 * close-on-exec). Signals Node ignores or blocks, and the standard descriptors, are set back
 * to what a process started afresh has first. Returns only when exec fails: it throws, with
 * the descriptors and signals as they were. */
static napi_value exec_in_place(napi_env env, napi_callback_info info)
{
    size_t argc = 3;
    napi_value argv[3];
    bool is_array = false;
    uint32_t num_keep = 0;
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 3 ||
        napi_is_array(env, argv[2], &is_array) != napi_ok || !is_array ||
        napi_get_array_length(env, argv[2], &num_keep) != napi_ok || num_keep >= MAX_EXEC_STRINGS) {
        napi_throw_error(env, NULL, "execvpe(argv, env, keepFds)");
        return NULL;
    }
    char **args = strings_of(env, argv[0]);
    char **envp = strings_of(env, argv[1]);
    int *keep = up_calloc(num_keep ? num_keep : 1, sizeof(*keep));
    int bad = args == NULL || args[0] == NULL || envp == NULL;
    for (uint32_t i = 0; i < num_keep && !bad; i++) {
        napi_value v;
        if (napi_get_element(env, argv[2], i, &v) != napi_ok ||
            napi_get_value_int32(env, v, &keep[i]) != napi_ok || keep[i] < 0)
            bad = 1;
    }
    napi_value result = NULL;
    if (bad) {
        napi_throw_error(env, NULL, "execvpe(argv, env, keepFds): strings and descriptors");
    } else {
        uint32_t kept = 0;
        while (kept < num_keep && set_cloexec(keep[kept], 0) == 0)
            kept++;
        if (kept < num_keep) {
            result = throw_errno(env, "cannot keep a descriptor open across exec");
        } else {
            sigset_t none, old;
            sigemptyset(&none);
            pthread_sigmask(SIG_SETMASK, &none, &old);
            struct sigaction dfl, old_pipe;
            memset(&dfl, 0, sizeof(dfl));
            dfl.sa_handler = SIG_DFL;
            sigaction(SIGPIPE, &dfl, &old_pipe);
            stdio_state_t stdio;
            reset_stdio(&stdio);
            execvpe(args[0], args, envp);
            int saved = errno;
            restore_stdio(&stdio);
            sigaction(SIGPIPE, &old_pipe, NULL);
            pthread_sigmask(SIG_SETMASK, &old, NULL);
            errno = saved;
            result = throw_errno(env, args[0]);
        }
        for (uint32_t i = 0; i < kept; i++)
            set_cloexec(keep[i], 1);
    }
    free_strings(args);
    free_strings(envp);
    free(keep);
    return result;
}

/* closeOnExec(fd): a descriptor a previous image kept open for this one is closed again by the
 * next exec (so the workers this process forks do not inherit it). Throws when fd is not open. */
static napi_value close_on_exec(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value arg;
    int32_t fd;
    if (napi_get_cb_info(env, info, &argc, &arg, NULL, NULL) != napi_ok || argc < 1 ||
        napi_get_value_int32(env, arg, &fd) != napi_ok) {
        napi_throw_error(env, NULL, "closeOnExec(fd)");
        return NULL;
    }
    if (set_cloexec(fd, 1) != 0)
        return throw_errno(env, "closeOnExec");
    return NULL;
}

/* reap(pid): null while the child pid runs; once it has exited, { code, signal } (one of them
 * null), or { code: null, signal: null } when pid is no child of this process (any more).
 * Never blocks. */
static napi_value reap(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value arg, result, code, sig, null;
    int32_t pid;
    int status = 0;
    if (napi_get_cb_info(env, info, &argc, &arg, NULL, NULL) != napi_ok || argc < 1 ||
        napi_get_value_int32(env, arg, &pid) != napi_ok || pid <= 0) {
        napi_throw_error(env, NULL, "reap(pid)");
        return NULL;
    }
    pid_t got;
    do
        got = waitpid(pid, &status, WNOHANG);
    while (got < 0 && errno == EINTR);
    napi_get_null(env, &null);
    if (got == 0)
        return null;
    napi_create_object(env, &result);
    code = sig = null;
    if (got > 0 && WIFEXITED(status))
        napi_create_int32(env, WEXITSTATUS(status), &code);
    if (got > 0 && WIFSIGNALED(status))
        napi_create_string_utf8(env, strsignal(WTERMSIG(status)), NAPI_AUTO_LENGTH, &sig);
    napi_set_named_property(env, result, "code", code);
    napi_set_named_property(env, result, "signal", sig);
    return result;
}

napi_status up_node_define_restart(napi_env env, napi_value exports)
{
    napi_property_descriptor props[] = {
        {"execvpe", NULL, exec_in_place, NULL, NULL, NULL, napi_default_jsproperty, NULL},
        {"closeOnExec", NULL, close_on_exec, NULL, NULL, NULL, napi_default_jsproperty, NULL},
        {"reap", NULL, reap, NULL, NULL, NULL, napi_default_jsproperty, NULL},
    };
    return napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
}
