/*  wire/msg_committed.c - the "committed" event body. Pure. */
#include "wire/msg_committed.h"
#include "wire/mp.h"

#include <string.h>

static void
s_pack_strn (msgpack_packer *pk, const char *s, size_t len)
{
    msgpack_pack_str (pk, len);
    msgpack_pack_str_body (pk, s ? s : "", len);
}

void
qn_msg_committed_encode (msgpack_sbuffer *out, const qn_msg_committed_t *m)
{
    msgpack_packer pk;
    msgpack_packer_init (&pk, out, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, m->partition ? 3 : 2);
    s_pack_strn (&pk, m->tenant, m->tenant_len);
    s_pack_strn (&pk, m->queue, m->queue_len);
    if (m->partition)
        s_pack_strn (&pk, m->partition, m->partition_len);
}

int
qn_msg_committed_decode (const char *buf, size_t len, qn_msg_committed_t *out)
{
    memset (out, 0, sizeof *out);
    if (qn_mp_scan (buf, len, "ss", &out->tenant, &out->tenant_len, &out->queue, &out->queue_len))
        return -1;
    const char *t, *q;
    size_t tl, ql;
    //  The optional third element: a partition name.
    if (qn_mp_scan (buf, len, "sss", &t, &tl, &q, &ql, &out->partition, &out->partition_len))
        out->partition = NULL, out->partition_len = 0;
    return 0;
}
