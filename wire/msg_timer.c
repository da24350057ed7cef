/*  wire/msg_timer.c - QN_MSG_TIMER_ARM (see msg_timer.h) */
#include "wire/msg_timer.h"
#include "wire/mp.h"

void
qn_msg_timer_arm_encode (msgpack_packer *pk, const qn_msg_timer_arm_t *m)
{
    msgpack_pack_array (pk, 2);
    msgpack_pack_int64 (pk, m->id);
    msgpack_pack_int64 (pk, m->due_us);
}

int
qn_msg_timer_arm_decode (const char *buf, size_t len, qn_msg_timer_arm_t *out)
{
    return qn_mp_scan (buf, len, "ii", &out->id, &out->due_us);
}
