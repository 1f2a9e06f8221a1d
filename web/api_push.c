/*
 * api_push.c - POST /push.v1.PusherService/Push (Connect): not implemented yet.
 */
#include "connect.h"

int ps_connect_push(ps_connect_call_t *c)
{
    ps_connect_error(c, PS_CONNECT_UNIMPLEMENTED, "push.v1.PusherService/Push is not implemented yet");
    return 0;
}
