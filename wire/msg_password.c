/*  wire/msg_password.c - queen-proxy's password work (see msg_password.h) */
#include "wire/msg_password.h"
#include "wire/mpack_guard.h"

#include <string.h>

void
qn_msg_pw_work_encode (msgpack_packer *pk, const qn_msg_pw_work_t *m)
{
    msgpack_pack_array (pk, 3);
    msgpack_pack_int (pk, m->op);
    msgpack_pack_bin (pk, m->password_len);
    msgpack_pack_bin_body (pk, m->password, m->password_len);
    msgpack_pack_str (pk, m->hash_len);
    msgpack_pack_str_body (pk, m->hash, m->hash_len);
}

int
qn_msg_pw_work_decode (const char *buf, size_t len, qn_msg_pw_work_t *out)
{
    memset (out, 0, sizeof *out);
    if (qn_msgpack_check (buf, len) < 0)
        return -1;
    msgpack_unpacked msg;
    msgpack_unpacked_init (&msg);
    int rc = -1;
    const msgpack_object *o = &msg.data;
    if (msgpack_unpack_next (&msg, buf, len, NULL) == MSGPACK_UNPACK_SUCCESS
    &&  o->type == MSGPACK_OBJECT_ARRAY && o->via.array.size >= 3
    &&  o->via.array.ptr [0].type == MSGPACK_OBJECT_POSITIVE_INTEGER
    &&  o->via.array.ptr [0].via.u64 <= QN_PW_HASH
    &&  o->via.array.ptr [1].type == MSGPACK_OBJECT_BIN
    &&  o->via.array.ptr [1].via.bin.size <= QN_PW_MAX_LEN
    &&  o->via.array.ptr [2].type == MSGPACK_OBJECT_STR) {
        out->op = (int) o->via.array.ptr [0].via.u64;
        out->password = o->via.array.ptr [1].via.bin.ptr;
        out->password_len = o->via.array.ptr [1].via.bin.size;
        out->hash = o->via.array.ptr [2].via.str.ptr;
        out->hash_len = o->via.array.ptr [2].via.str.size;
        rc = 0;
    }
    msgpack_unpacked_destroy (&msg);
    return rc;
}

void
qn_msg_pw_done_encode (msgpack_packer *pk, const qn_msg_pw_done_t *m)
{
    msgpack_pack_array (pk, 2);
    if (m->ok)
        msgpack_pack_true (pk);
    else
        msgpack_pack_false (pk);
    msgpack_pack_str (pk, m->hash_len);
    msgpack_pack_str_body (pk, m->hash, m->hash_len);
}

int
qn_msg_pw_done_decode (const char *buf, size_t len, qn_msg_pw_done_t *out)
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
    &&  o->via.array.ptr [0].type == MSGPACK_OBJECT_BOOLEAN
    &&  o->via.array.ptr [1].type == MSGPACK_OBJECT_STR) {
        out->ok = o->via.array.ptr [0].via.boolean;
        out->hash = o->via.array.ptr [1].via.str.ptr;
        out->hash_len = o->via.array.ptr [1].via.str.size;
        rc = 0;
    }
    msgpack_unpacked_destroy (&msg);
    return rc;
}
