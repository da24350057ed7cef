/*  wire/msg_kafka.c - kafka_acceptor <-> kafka bodies (see msg_kafka.h)
*/
#include "wire/msg_kafka.h"

#include <string.h>

static void
s_pack (msgpack_sbuffer *out, uint32_t n, uint64_t conn_id, uint32_t seq, bool close)
{
    msgpack_packer pk;
    msgpack_packer_init (&pk, out, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, n);
    msgpack_pack_uint64 (&pk, conn_id);
    if (n >= 2)
        msgpack_pack_uint32 (&pk, seq);
    if (n >= 3) {
        if (close)
            msgpack_pack_true (&pk);
        else
            msgpack_pack_false (&pk);
    }
}

static int
s_unpack (const char *buf, size_t len, uint32_t n, qn_msg_kafka_t *out)
{
    memset (out, 0, sizeof *out);
    msgpack_unpacked h;
    msgpack_unpacked_init (&h);
    int rc = -1;
    size_t off = 0;
    if (msgpack_unpack_next (&h, buf, len, &off) == MSGPACK_UNPACK_SUCCESS && off == len) {
        const msgpack_object *o = &h.data;
        if (o->type == MSGPACK_OBJECT_ARRAY && o->via.array.size == n
         && o->via.array.ptr [0].type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
            const msgpack_object *a = o->via.array.ptr;
            out->conn_id = a [0].via.u64;
            rc = 0;
            if (n >= 2) {
                if (a [1].type == MSGPACK_OBJECT_POSITIVE_INTEGER && a [1].via.u64 <= UINT32_MAX)
                    out->seq = (uint32_t) a [1].via.u64;
                else
                    rc = -1;
            }
            if (n >= 3) {
                if (a [2].type == MSGPACK_OBJECT_BOOLEAN)
                    out->close = a [2].via.boolean;
                else
                    rc = -1;
            }
        }
    }
    msgpack_unpacked_destroy (&h);
    return rc;
}

void qn_msg_kafka_request_encode (msgpack_sbuffer *out, uint64_t c, uint32_t s) { s_pack (out, 2, c, s, false); }
int qn_msg_kafka_request_decode (const char *b, size_t l, qn_msg_kafka_t *o) { return s_unpack (b, l, 2, o); }
void qn_msg_kafka_response_encode (msgpack_sbuffer *out, uint64_t c, uint32_t s, bool cl) { s_pack (out, 3, c, s, cl); }
int qn_msg_kafka_response_decode (const char *b, size_t l, qn_msg_kafka_t *o) { return s_unpack (b, l, 3, o); }
void qn_msg_kafka_closed_encode (msgpack_sbuffer *out, uint64_t c) { s_pack (out, 1, c, 0, false); }
int qn_msg_kafka_closed_decode (const char *b, size_t l, qn_msg_kafka_t *o) { return s_unpack (b, l, 1, o); }
