/* Runs an engine test inside Node, for the tests on the libuv backend (LOOP=uv in the
 * Makefile). There a test is a shared object, not a program: its libuv symbols (and OpenSSL's
 * and zlib's, as for the addon, ext/up/node/build) stay undefined until Node loads it, so they
 * resolve against the libuv that the running node binary carries, the one `up` runs on, and
 * no second copy of libuv is linked.
 *
 * This addon exports run(path): it dlopens the test's shared object and calls its main() on
 * Node's main thread, which is then the test's loop thread (the test makes its own uv loop).
 * It returns main's status; a test that exits (a failed setup, the harness's alarm) ends the
 * process with its own status. The object stays loaded, so that the leak check at exit can
 * name its frames. */

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <node_api.h>

typedef int (*test_main_t)(void);

/* Throws a JS Error with msg and returns NULL, what a callback returns after a throw. */
static napi_value fail(napi_env env, const char *msg)
{
    napi_throw_error(env, NULL, msg);
    return NULL;
}

static napi_value run(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value arg;
    if (napi_get_cb_info(env, info, &argc, &arg, NULL, NULL) != napi_ok || argc != 1)
        return fail(env, "run(path): one argument, the test's shared object");
    char path[PATH_MAX];
    size_t len;
    if (napi_get_value_string_utf8(env, arg, path, sizeof path, &len) != napi_ok)
        return fail(env, "run(path): path must be a string");
    if (len >= sizeof path - 1)
        return fail(env, "run(path): path too long");
    void *test = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (test == NULL)
        return fail(env, dlerror());
    /* dlsym on the object's own handle finds its main, not node's, which a plain reference
     * from inside the object would bind to. The cast from void * is what POSIX dlsym needs. */
    test_main_t test_main;
    *(void **)&test_main = dlsym(test, "main");
    if (test_main == NULL)
        return fail(env, "run(path): the object has no main");
    int status = test_main();
    /* Node writes its own output past stdio: what the test printed goes out before it. */
    fflush(stdout);
    fflush(stderr);
    napi_value result;
    if (napi_create_int32(env, status, &result) != napi_ok)
        return fail(env, "run(path): cannot return the status");
    return result;
}

NAPI_MODULE_INIT()
{
    napi_value fn;
    if (napi_create_function(env, "run", NAPI_AUTO_LENGTH, run, NULL, &fn) != napi_ok ||
        napi_set_named_property(env, exports, "run", fn) != napi_ok)
        return NULL;
    return exports;
}
