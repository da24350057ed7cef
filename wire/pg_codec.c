/*  wire/pg_codec.c - PostgreSQL binary send/recv formats (see pg_codec.h)
    Every read is bounds-checked; anything unexpected is an error.
*/
#include "wire/pg_codec.h"

#include <stdio.h>
#include <string.h>

static void
s_be32 (qn_buf_t *out, uint32_t v)
{
    char b [4] = { (char) (v >> 24), (char) (v >> 16), (char) (v >> 8), (char) v };
    qn_buf_append (out, b, 4);
}

static void
s_be64 (qn_buf_t *out, uint64_t v)
{
    s_be32 (out, (uint32_t) (v >> 32));
    s_be32 (out, (uint32_t) v);
}

static uint32_t
s_rd32 (const char *p)
{
    const uint8_t *u = (const uint8_t *) p;
    return (uint32_t) u [0] << 24 | (uint32_t) u [1] << 16 | (uint32_t) u [2] << 8 | u [3];
}

static uint64_t
s_rd64 (const char *p)
{
    return (uint64_t) s_rd32 (p) << 32 | s_rd32 (p + 4);
}

static int
s_hexval (char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

int
qn_uuid_parse (const char *s, size_t len, uint8_t out [16])
{
    if (len != 36)
        return -1;
    int j = 0;
    for (size_t i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s [i] != '-')
                return -1;
            continue;
        }
        int hi = s_hexval (s [i]), lo = s_hexval (s [i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out [j++] = (uint8_t) (hi << 4 | lo);
        i++;
    }
    return 0;
}

void
qn_uuid_format (const uint8_t in [16], char out [37])
{
    static const char hex [] = "0123456789abcdef";
    int j = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out [j++] = '-';
        out [j++] = hex [in [i] >> 4];
        out [j++] = hex [in [i] & 15];
    }
    out [j] = 0;
}

int
qn_pg_param_format (uint32_t oid)
{
    switch (oid) {
        case QN_OID_TIMESTAMPTZ:
        case QN_OID_JSON:
        case QN_OID_JSONB:
        case 0:
            return 0;
        default:
            return 1;
    }
}

static uint32_t
s_elem_oid (uint32_t oid)
{
    switch (oid) {
        case QN_OID_BOOL_ARR: return QN_OID_BOOL;
        case QN_OID_BYTEA_ARR: return QN_OID_BYTEA;
        case QN_OID_INT4_ARR: return QN_OID_INT4;
        case QN_OID_TEXT_ARR: return QN_OID_TEXT;
        case QN_OID_INT8_ARR: return QN_OID_INT8;
        case QN_OID_UUID_ARR: return QN_OID_UUID;
        default: return 0;
    }
}

static bool
s_int (const msgpack_object *v, int64_t *out)
{
    if (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER && v->via.u64 <= INT64_MAX) {
        *out = (int64_t) v->via.u64;
        return true;
    }
    if (v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
        *out = v->via.i64;
        return true;
    }
    return false;
}

static int
s_scalar (uint32_t oid, const msgpack_object *v, qn_buf_t *out, char *err, size_t err_len)
{
    int64_t i;
    switch (oid) {
        case QN_OID_BOOL:
            if (v->type != MSGPACK_OBJECT_BOOLEAN)
                goto mismatch;
            qn_buf_putc (out, v->via.boolean ? 1 : 0);
            return 0;
        case QN_OID_INT2:
            if (!s_int (v, &i) || i < INT16_MIN || i > INT16_MAX)
                goto mismatch;
            qn_buf_putc (out, (char) (i >> 8));
            qn_buf_putc (out, (char) i);
            return 0;
        case QN_OID_INT4:
            if (!s_int (v, &i) || i < INT32_MIN || i > INT32_MAX)
                goto mismatch;
            s_be32 (out, (uint32_t) i);
            return 0;
        case QN_OID_INT8:
            if (!s_int (v, &i))
                goto mismatch;
            s_be64 (out, (uint64_t) i);
            return 0;
        case QN_OID_FLOAT8: {
            double d;
            if (v->type == MSGPACK_OBJECT_FLOAT64 || v->type == MSGPACK_OBJECT_FLOAT32)
                d = v->via.f64;
            else
            if (s_int (v, &i))
                d = (double) i;
            else
                goto mismatch;
            uint64_t bits;
            memcpy (&bits, &d, 8);
            s_be64 (out, bits);
            return 0;
        }
        case QN_OID_UUID: {
            uint8_t u [16];
            if (v->type == MSGPACK_OBJECT_BIN && v->via.bin.size == 16)
                memcpy (u, v->via.bin.ptr, 16);
            else
            if (v->type != MSGPACK_OBJECT_STR || qn_uuid_parse (v->via.str.ptr, v->via.str.size, u))
                goto mismatch;
            qn_buf_append (out, u, 16);
            return 0;
        }
        case QN_OID_TEXT:
        case QN_OID_VARCHAR:
        case QN_OID_NAME:
        case QN_OID_BYTEA:
        case QN_OID_JSON:
        case QN_OID_TIMESTAMPTZ:
        case 0:
            if (v->type == MSGPACK_OBJECT_STR)
                qn_buf_append (out, v->via.str.ptr, v->via.str.size);
            else
            if (v->type == MSGPACK_OBJECT_BIN)
                qn_buf_append (out, v->via.bin.ptr, v->via.bin.size);
            else
            if (s_int (v, &i) && oid != QN_OID_BYTEA)
                qn_buf_printf (out, "%lld", (long long) i);
            else
            if (v->type == MSGPACK_OBJECT_BOOLEAN && oid != QN_OID_BYTEA)
                qn_buf_puts (out, v->via.boolean ? "true" : "false");
            else
                goto mismatch;
            return 0;
        case QN_OID_JSONB:
            if (v->type != MSGPACK_OBJECT_STR)
                goto mismatch;
            qn_buf_append (out, v->via.str.ptr, v->via.str.size);
            return 0;
        default:
            snprintf (err, err_len, "unsupported parameter type %u", oid);
            return -1;
    }
mismatch:
    snprintf (err, err_len, "parameter does not fit type %u (msgpack type %d)", oid, (int) v->type);
    return -1;
}

int
qn_pg_encode_param (uint32_t oid, const msgpack_object *v, qn_buf_t *out, char *err, size_t err_len)
{
    if (v->type == MSGPACK_OBJECT_NIL)
        return 1;
    uint32_t elem = s_elem_oid (oid);
    if (!elem)
        return s_scalar (oid, v, out, err, err_len);
    if (v->type != MSGPACK_OBJECT_ARRAY) {
        snprintf (err, err_len, "array parameter of type %u expected", oid);
        return -1;
    }
    uint32_t n = v->via.array.size;
    bool has_null = false;
    for (uint32_t i = 0; i < n; i++)
        has_null = has_null || v->via.array.ptr [i].type == MSGPACK_OBJECT_NIL;
    s_be32 (out, n ? 1 : 0);            //  ndim
    s_be32 (out, has_null ? 1 : 0);
    s_be32 (out, elem);
    if (n) {
        s_be32 (out, n);                //  dimension size
        s_be32 (out, 1);                //  lower bound
    }
    for (uint32_t i = 0; i < n; i++) {
        const msgpack_object *e = &v->via.array.ptr [i];
        if (e->type == MSGPACK_OBJECT_NIL) {
            s_be32 (out, 0xffffffff);
            continue;
        }
        size_t at = out->len;
        s_be32 (out, 0);                //  length, patched below
        if (s_scalar (elem, e, out, err, err_len))
            return -1;
        uint32_t len = (uint32_t) (out->len - at - 4);
        out->data [at] = (char) (len >> 24);
        out->data [at + 1] = (char) (len >> 16);
        out->data [at + 2] = (char) (len >> 8);
        out->data [at + 3] = (char) len;
    }
    return 0;
}

int
qn_pg_decode_value (uint32_t oid, const char *data, int len, msgpack_packer *pk)
{
    if (len < 0)
        return msgpack_pack_nil (pk), 0;
    switch (oid) {
        case QN_OID_BOOL:
            if (len != 1)
                return -1;
            return data [0] ? msgpack_pack_true (pk) : msgpack_pack_false (pk), 0;
        case QN_OID_INT2:
            if (len != 2)
                return -1;
            return msgpack_pack_int64 (pk, (int16_t) ((uint8_t) data [0] << 8 | (uint8_t) data [1])), 0;
        case QN_OID_INT4:
        case QN_OID_OID:
            if (len != 4)
                return -1;
            return msgpack_pack_int64 (pk, (int32_t) s_rd32 (data)), 0;
        case QN_OID_INT8:
            if (len != 8)
                return -1;
            return msgpack_pack_int64 (pk, (int64_t) s_rd64 (data)), 0;
        case QN_OID_FLOAT4: {
            if (len != 4)
                return -1;
            uint32_t bits = s_rd32 (data);
            float f;
            memcpy (&f, &bits, 4);
            return msgpack_pack_double (pk, f), 0;
        }
        case QN_OID_FLOAT8: {
            if (len != 8)
                return -1;
            uint64_t bits = s_rd64 (data);
            double d;
            memcpy (&d, &bits, 8);
            return msgpack_pack_double (pk, d), 0;
        }
        case QN_OID_TIMESTAMPTZ:
            if (len != 8)
                return -1;
            return msgpack_pack_int64 (pk, (int64_t) s_rd64 (data) + QN_PG_EPOCH_US), 0;
        case QN_OID_UUID: {
            if (len != 16)
                return -1;
            char s [37];
            qn_uuid_format ((const uint8_t *) data, s);
            msgpack_pack_str (pk, 36);
            return msgpack_pack_str_body (pk, s, 36), 0;
        }
        case QN_OID_BYTEA:
            msgpack_pack_bin (pk, (size_t) len);
            return msgpack_pack_bin_body (pk, data, (size_t) len), 0;
        case QN_OID_JSONB:
            //  Binary jsonb is a version byte followed by the text.
            if (len < 1 || data [0] != 1)
                return -1;
            msgpack_pack_str (pk, (size_t) len - 1);
            return msgpack_pack_str_body (pk, data + 1, (size_t) len - 1), 0;
        case QN_OID_TEXT:
        case QN_OID_VARCHAR:
        case QN_OID_NAME:
        case QN_OID_JSON:
            msgpack_pack_str (pk, (size_t) len);
            return msgpack_pack_str_body (pk, data, (size_t) len), 0;
        default:
            return msgpack_pack_nil (pk), 0;
    }
}

void
qn_pg_array_begin (qn_pg_array_t *a, qn_buf_t *out, uint32_t elem_oid)
{
    a->out = out;
    a->at = out->len;
    a->n = 0;
    a->has_null = false;
    a->elem = elem_oid;
    s_be32 (out, 1);                    //  ndim: an empty array has dim 0
    s_be32 (out, 0);                    //  has_null, patched
    s_be32 (out, elem_oid);
    s_be32 (out, 0);                    //  dimension size, patched
    s_be32 (out, 1);                    //  lower bound
}

static void
s_patch32 (qn_buf_t *out, size_t at, uint32_t v)
{
    out->data [at] = (char) (v >> 24);
    out->data [at + 1] = (char) (v >> 16);
    out->data [at + 2] = (char) (v >> 8);
    out->data [at + 3] = (char) v;
}

int
qn_pg_array_add (qn_pg_array_t *a, const msgpack_object *v, char *err, size_t err_len)
{
    a->n++;
    if (!v || v->type == MSGPACK_OBJECT_NIL) {
        a->has_null = true;
        s_be32 (a->out, 0xffffffff);
        return 0;
    }
    size_t at = a->out->len;
    s_be32 (a->out, 0);
    if (s_scalar (a->elem, v, a->out, err, err_len))
        return -1;
    s_patch32 (a->out, at, (uint32_t) (a->out->len - at - 4));
    return 0;
}

void
qn_pg_array_end (qn_pg_array_t *a)
{
    s_patch32 (a->out, a->at + 4, a->has_null ? 1 : 0);
    s_patch32 (a->out, a->at + 12, a->n);
}
