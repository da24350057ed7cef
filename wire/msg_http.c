/*  wire/msg_http.c - the acceptor <-> codec conversation (see msg_http.h) */
#include "wire/msg_http.h"
#include "wire/mp.h"
#include "wire/mpack_guard.h"

#include <string.h>

static void
s_pack_str (msgpack_packer *pk, const char *s, size_t len)
{
    msgpack_pack_str (pk, len);
    msgpack_pack_str_body (pk, s, len);
}

static bool
s_is_str (const msgpack_object *o)
{
    return o->type == MSGPACK_OBJECT_STR;
}

void
qn_msg_http_request_encode (msgpack_packer *pk, const qn_msg_http_request_t *m)
{
    msgpack_pack_array (pk, 6);
    msgpack_pack_uint64 (pk, m->conn_id);
    msgpack_pack_uint32 (pk, m->seq);
    s_pack_str (pk, m->method, m->method_len);
    s_pack_str (pk, m->target, m->target_len);
    m->keep_alive ? msgpack_pack_true (pk) : msgpack_pack_false (pk);
    msgpack_pack_array (pk, m->header_count);
    for (uint32_t i = 0; i < m->header_count; i++) {
        msgpack_pack_array (pk, 2);
        s_pack_str (pk, m->headers [i].name, m->headers [i].name_len);
        s_pack_str (pk, m->headers [i].value, m->headers [i].value_len);
    }
}

int
qn_msg_http_request_decode (const char *buf, size_t len, msgpack_unpacked *holder,
                            qn_msg_http_request_t *out)
{
    memset (out, 0, sizeof *out);
    if (qn_msgpack_check (buf, len) < 0
    ||  msgpack_unpack_next (holder, buf, len, NULL) != MSGPACK_UNPACK_SUCCESS)
        return -1;
    const msgpack_object *o = &holder->data;
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size < 6)
        return -1;
    const msgpack_object *f = o->via.array.ptr;
    if (f [0].type != MSGPACK_OBJECT_POSITIVE_INTEGER
    ||  f [1].type != MSGPACK_OBJECT_POSITIVE_INTEGER || f [1].via.u64 > UINT32_MAX
    ||  !s_is_str (&f [2]) || !s_is_str (&f [3]) || f [4].type != MSGPACK_OBJECT_BOOLEAN
    ||  f [5].type != MSGPACK_OBJECT_ARRAY)
        return -1;
    for (uint32_t i = 0; i < f [5].via.array.size; i++) {
        const msgpack_object *h = &f [5].via.array.ptr [i];
        if (h->type != MSGPACK_OBJECT_ARRAY || h->via.array.size != 2
        ||  !s_is_str (&h->via.array.ptr [0]) || !s_is_str (&h->via.array.ptr [1]))
            return -1;
    }
    out->conn_id = f [0].via.u64;
    out->seq = (uint32_t) f [1].via.u64;
    out->method = f [2].via.str.ptr;
    out->method_len = f [2].via.str.size;
    out->target = f [3].via.str.ptr;
    out->target_len = f [3].via.str.size;
    out->keep_alive = f [4].via.boolean;
    out->header_objs = f [5].via.array.ptr;
    out->header_count = f [5].via.array.size;
    return 0;
}

void
qn_msg_http_request_header (const qn_msg_http_request_t *m, uint32_t i, qn_http_header_t *out)
{
    const msgpack_object *pair = m->header_objs [i].via.array.ptr;
    out->name = pair [0].via.str.ptr;
    out->name_len = pair [0].via.str.size;
    out->value = pair [1].via.str.ptr;
    out->value_len = pair [1].via.str.size;
}

void
qn_msg_http_response_encode (msgpack_packer *pk, const qn_msg_http_response_t *m)
{
    msgpack_pack_array (pk, 3);
    msgpack_pack_uint64 (pk, m->conn_id);
    msgpack_pack_uint32 (pk, m->seq);
    m->close ? msgpack_pack_true (pk) : msgpack_pack_false (pk);
}

int
qn_msg_http_response_decode (const char *buf, size_t len, qn_msg_http_response_t *out)
{
    uint64_t seq;
    if (qn_mp_scan (buf, len, "uub", &out->conn_id, &seq, &out->close) || seq > UINT32_MAX)
        return -1;
    out->seq = (uint32_t) seq;
    return 0;
}

void
qn_msg_http_closed_encode (msgpack_packer *pk, uint64_t conn_id)
{
    msgpack_pack_array (pk, 1);
    msgpack_pack_uint64 (pk, conn_id);
}

int
qn_msg_http_closed_decode (const char *buf, size_t len, uint64_t *conn_id)
{
    return qn_mp_scan (buf, len, "u", conn_id);
}

void
qn_msg_http_drained_encode (msgpack_packer *pk)
{
    msgpack_pack_array (pk, 0);
}

int
qn_msg_http_drained_decode (const char *buf, size_t len)
{
    return qn_mp_scan (buf, len, "");
}
