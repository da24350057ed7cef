/*  wire/msg_jwks.c - the JWKS fetcher's messages (see msg_jwks.h) */
#include "wire/msg_jwks.h"
#include "wire/mp.h"
#include "wire/mpack_guard.h"

#include <string.h>

void
qn_msg_jwks_keys_encode (msgpack_packer *pk, const qn_msg_jwks_keys_t *m)
{
    msgpack_pack_array (pk, 2);
    msgpack_pack_uint64 (pk, m->generation);
    msgpack_pack_bin (pk, m->json_len);
    msgpack_pack_bin_body (pk, m->json, m->json_len);
}

int
qn_msg_jwks_keys_decode (const char *buf, size_t len, qn_msg_jwks_keys_t *out)
{
    memset (out, 0, sizeof *out);
    if (qn_msgpack_check (buf, len) < 0)
        return -1;
    msgpack_unpacked msg;
    msgpack_unpacked_init (&msg);
    int rc = -1;
    const msgpack_object *o = &msg.data;
    if (msgpack_unpack_next (&msg, buf, len, NULL) == MSGPACK_UNPACK_SUCCESS
    &&  o->type == MSGPACK_OBJECT_ARRAY && o->via.array.size >= 2
    &&  o->via.array.ptr [0].type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
        const msgpack_object *doc = &o->via.array.ptr [1];
        //  Strings and bins point into buf, not into the zone.
        if (doc->type == MSGPACK_OBJECT_BIN) {
            out->json = doc->via.bin.ptr;
            out->json_len = doc->via.bin.size;
            rc = 0;
        }
        else
        if (doc->type == MSGPACK_OBJECT_STR) {
            out->json = doc->via.str.ptr;
            out->json_len = doc->via.str.size;
            rc = 0;
        }
        out->generation = o->via.array.ptr [0].via.u64;
    }
    msgpack_unpacked_destroy (&msg);
    return rc;
}

void
qn_msg_jwks_refresh_encode (msgpack_packer *pk)
{
    msgpack_pack_array (pk, 0);
}

int
qn_msg_jwks_refresh_decode (const char *buf, size_t len)
{
    return qn_mp_scan (buf, len, "");
}
