/*  wire/msg_ephemeral.c - the ephemeral queues' messages (see msg_ephemeral.h). Pure. */
#include "wire/msg_ephemeral.h"
#include "wire/mp.h"
#include "wire/mpack_guard.h"

#include <string.h>

static void
s_str (msgpack_packer *pk, qn_eph_str_t s)
{
    msgpack_pack_str (pk, s.len);
    msgpack_pack_str_body (pk, s.ptr ? s.ptr : "", s.len);
}

void
qn_msg_eph_peer_encode (msgpack_sbuffer *out, const qn_msg_eph_peer_t *m)
{
    msgpack_packer pk;
    msgpack_packer_init (&pk, out, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 7);
    msgpack_pack_uint64 (&pk, m->kind);
    s_str (&pk, m->to);
    s_str (&pk, m->name);
    s_str (&pk, m->a);
    s_str (&pk, m->b);
    s_str (&pk, m->payload);
    msgpack_pack_int64 (&pk, m->n);
}

int
qn_msg_eph_peer_decode (const char *buf, size_t len, qn_msg_eph_peer_t *out)
{
    memset (out, 0, sizeof *out);
    if (qn_mp_scan (buf, len, "usssssi", &out->kind, &out->to.ptr, &out->to.len, &out->name.ptr,
                    &out->name.len, &out->a.ptr, &out->a.len, &out->b.ptr, &out->b.len,
                    &out->payload.ptr, &out->payload.len, &out->n))
        return -1;
    return out->kind >= QN_EPH_WANT && out->kind <= QN_EPH_PUBLISH ? 0 : -1;
}

int
qn_msg_eph_peer_next (const char *buf, size_t len, size_t *off, qn_msg_eph_peer_t *out,
                      qn_eph_str_t *raw)
{
    if (*off >= len)
        return 0;
    int64_t n = qn_msgpack_check (buf + *off, len - *off);
    if (n <= 0 || qn_msg_eph_peer_decode (buf + *off, (size_t) n, out))
        return -1;
    if (raw)
        *raw = (qn_eph_str_t) { buf + *off, (size_t) n };
    *off += (size_t) n;
    return 1;
}
