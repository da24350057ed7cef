/*  wire/msg_spool.c - spool messages and the append body. Pure. */
#include "wire/msg_spool.h"
#include "wire/mp.h"
#include "wire/mpack_guard.h"
#include "wire/msg_push.h"

#include <string.h>

void
qn_msg_spool_append_encode (msgpack_sbuffer *out, const char *tenant, size_t tenant_len,
                            const qn_msg_push_item_t *items, uint32_t count, char (*minted) [37])
{
    msgpack_packer pk;
    msgpack_packer_init (&pk, out, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 2);
    msgpack_pack_str (&pk, tenant_len);
    msgpack_pack_str_body (&pk, tenant, tenant_len);
    msgpack_pack_array (&pk, count);
    for (uint32_t i = 0; i < count; i++) {
        qn_msg_push_item_t it = items [i];
        if (minted && minted [i][0]) {
            it.txn = minted [i];
            it.txn_len = strlen (minted [i]);
        }
        qn_msg_push_item (&pk, &it);
    }
}

int
qn_msg_spool_append_decode (const char *buf, size_t len, msgpack_unpacked *holder,
                            qn_msg_spool_append_t *out)
{
    size_t off = 0;
    const msgpack_object *o = &holder->data;
    memset (out, 0, sizeof *out);
    //  Bytes read back from disk: bounded pre-check before msgpack-c
    //  allocates what the headers claim.
    if (qn_msgpack_check (buf, len) != (int64_t) len
    ||  msgpack_unpack_next (holder, buf, len, &off) != MSGPACK_UNPACK_SUCCESS || off != len
    ||  o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 2
    ||  o->via.array.ptr [0].type != MSGPACK_OBJECT_STR
    ||  o->via.array.ptr [1].type != MSGPACK_OBJECT_ARRAY
    ||  o->via.array.ptr [1].via.array.size == 0)
        return -1;
    const msgpack_object *items = &o->via.array.ptr [1];
    qn_msg_push_item_t it;
    for (uint32_t i = 0; i < items->via.array.size; i++)
        if (qn_msg_push_item_decode (&items->via.array.ptr [i], &it))
            return -1;
    out->tenant = o->via.array.ptr [0].via.str.ptr;
    out->tenant_len = o->via.array.ptr [0].via.str.size;
    out->items = items->via.array.ptr;
    out->count = items->via.array.size;
    return 0;
}

void
qn_msg_spool_stats_encode (msgpack_sbuffer *out, const qn_msg_spool_stats_t *m)
{
    msgpack_packer pk;
    msgpack_packer_init (&pk, out, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 5);
    msgpack_pack_uint64 (&pk, m->pending);
    msgpack_pack_uint64 (&pk, m->failed);
    m->db_healthy ? msgpack_pack_true (&pk) : msgpack_pack_false (&pk);
    m->buffer_healthy ? msgpack_pack_true (&pk) : msgpack_pack_false (&pk);
    msgpack_pack_uint64 (&pk, m->failed_bytes);
}

int
qn_msg_spool_stats_decode (const char *buf, size_t len, qn_msg_spool_stats_t *out)
{
    memset (out, 0, sizeof *out);
    return qn_mp_scan (buf, len, "uubbu", &out->pending, &out->failed, &out->db_healthy,
                       &out->buffer_healthy, &out->failed_bytes);
}

void
qn_msg_spool_drained_encode (msgpack_sbuffer *out, uint64_t appends)
{
    msgpack_packer pk;
    msgpack_packer_init (&pk, out, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 1);
    msgpack_pack_uint64 (&pk, appends);
}

int
qn_msg_spool_drained_decode (const char *buf, size_t len, uint64_t *appends)
{
    return qn_mp_scan (buf, len, "u", appends);
}
