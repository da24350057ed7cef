/*  wire/msg_timer_arm.c - body of QN_MSG_TIMER_ARM (see msg_timer_arm.h) */
#include "wire/msg_timer_arm.h"
#include "wire/mp.h"

#include <msgpack.h>

static int
s_write (void *data, const char *buf, size_t len)
{
    qn_buf_append (data, buf, len);
    return 0;
}

void
qn_msg_timer_arm_encode (const qn_msg_timer_arm_t *msg, qn_buf_t *out)
{
    msgpack_packer pk;
    msgpack_packer_init (&pk, out, s_write);
    msgpack_pack_array (&pk, 2);
    msgpack_pack_int64 (&pk, msg->id);
    msgpack_pack_int64 (&pk, msg->due_us);
}

int
qn_msg_timer_arm_decode (const void *buf, size_t len, qn_msg_timer_arm_t *msg)
{
    return qn_mp_scan (buf, len, "ii", &msg->id, &msg->due_us) ? -1 : 0;
}
