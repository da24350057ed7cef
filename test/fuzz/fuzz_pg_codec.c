/*  test/fuzz/fuzz_pg_codec.c - PostgreSQL binary values (wire/pg_codec.c)
    Input: one selector byte, then bytes. Even selectors decode the bytes
    as a binary result column of a type and check the msgpack written is
    one whole value and, for types whose send format is the inverse,
    that encoding it again gives the same bytes. Odd selectors read the
    bytes as a msgpack value (after the allocation guard) and encode it as
    a parameter of a type, scalar and array, and through the typed-array
    builder. UUID text is parsed and formatted back.
*/
#include <msgpack.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/mpack_guard.h"
#include "wire/pg_codec.h"

static const uint32_t s_oids [] = {
    QN_OID_BOOL, QN_OID_BYTEA, QN_OID_NAME, QN_OID_INT8, QN_OID_INT2, QN_OID_INT4,
    QN_OID_TEXT, QN_OID_OID, QN_OID_JSON, QN_OID_FLOAT4, QN_OID_FLOAT8,
    QN_OID_BOOL_ARR, QN_OID_BYTEA_ARR, QN_OID_INT4_ARR, QN_OID_TEXT_ARR, QN_OID_INT8_ARR,
    QN_OID_VARCHAR, QN_OID_TIMESTAMPTZ, QN_OID_UUID, QN_OID_UUID_ARR, QN_OID_JSONB, 0, 9999
};
#define S_NOIDS (sizeof s_oids / sizeof s_oids [0])

static bool
s_inverse (uint32_t oid)
{
    return oid == QN_OID_BYTEA || oid == QN_OID_INT2 || oid == QN_OID_INT4 || oid == QN_OID_INT8
        || oid == QN_OID_TEXT || oid == QN_OID_FLOAT8 || oid == QN_OID_UUID;
}

static void
s_decode (uint32_t oid, const char *data, size_t size)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
    int len = size > INT32_MAX ? INT32_MAX : (int) size;
    if (qn_pg_decode_value (oid, data, len, &pk) == 0) {
        msgpack_unpacked u;
        msgpack_unpacked_init (&u);
        size_t off = 0;
        if (msgpack_unpack_next (&u, sb.data, sb.size, &off) != MSGPACK_UNPACK_SUCCESS
        ||  off != sb.size)
            abort ();
        if (s_inverse (oid)) {
            qn_buf_t back = QN_BUF_INIT;
            char err [128];
            if (qn_pg_encode_param (oid, &u.data, &back, err, sizeof err) != 0
            ||  back.len != size || (size && memcmp (back.data, data, size)))
                abort ();
            qn_buf_free (&back);
        }
        msgpack_unpacked_destroy (&u);
    }
    msgpack_sbuffer_destroy (&sb);
}

static void
s_encode (uint32_t oid, const char *data, size_t size)
{
    if (qn_msgpack_check (data, size) < 0)
        return;
    msgpack_unpacked u;
    msgpack_unpacked_init (&u);
    if (msgpack_unpack_next (&u, data, size, NULL) == MSGPACK_UNPACK_SUCCESS) {
        qn_buf_t out = QN_BUF_INIT;
        char err [128];
        int rc = qn_pg_encode_param (oid, &u.data, &out, err, sizeof err);
        if (rc == 1 && out.len)
            abort ();                   //  NULL appends nothing
        if (rc < 0 && !err [0])
            abort ();                   //  A refusal says why
        (void) qn_pg_param_format (oid);
        if (u.data.type == MSGPACK_OBJECT_ARRAY) {
            qn_buf_t arr = QN_BUF_INIT;
            qn_pg_array_t a;
            qn_pg_array_begin (&a, &arr, oid);
            for (uint32_t i = 0; i < u.data.via.array.size; i++)
                if (qn_pg_array_add (&a, &u.data.via.array.ptr [i], err, sizeof err))
                    break;
            qn_pg_array_end (&a);
            if (arr.len < 20)
                abort ();
            qn_buf_free (&arr);
        }
        qn_buf_free (&out);
    }
    msgpack_unpacked_destroy (&u);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint32_t oid = s_oids [(data [0] >> 1) % S_NOIDS];
    const char *rest = (const char *) data + 1;
    size_t len = size - 1;
    if (data [0] & 1)
        s_encode (oid, rest, len);
    else
        s_decode (oid, rest, len);
    uint8_t u [16];
    if (qn_uuid_parse (rest, len, u) == 0) {
        char s [37];
        qn_uuid_format (u, s);
        uint8_t again [16];
        if (qn_uuid_parse (s, 36, again) || memcmp (u, again, 16))
            abort ();
    }
    return 0;
}
