/* The one entry point of the MRI binding: defines the whole Ruby surface of the extension. */

#include "binding.h"

void Init_up_ext(void)
{
    VALUE mUp = rb_define_module("Up");
    up_rb_init_env(mUp);
    up_rb_init_input(mUp);
    up_rb_init_early_hints(mUp);
    up_rb_init_stream(mUp);
    up_rb_init_body(mUp);
    up_rb_init_hijack(mUp); /* after body: it uses Up::ClientDisconnected */
    up_rb_init_request_handler(mUp);
    up_rb_init_turn();
    up_rb_init_server(mUp);
    up_rb_init_client(mUp);
    up_rb_init_tls(mUp);
}
