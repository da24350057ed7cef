/*  test/unit/test_wire_pg_codec.c - PostgreSQL binary send/recv formats:
    golden bytes for every parameter type, arrays (empty, with NULLs, the
    typed-array builder), result values of every type, wrong lengths
    refused, UUID text
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <msgpack.h>
#include <string.h>

#include "wire/pg_codec.h"

static msgpack_object
s_int (int64_t v)
{
    msgpack_object o;
    if (v >= 0) {
        o.type = MSGPACK_OBJECT_POSITIVE_INTEGER;
        o.via.u64 = (uint64_t) v;
    }
    else {
        o.type = MSGPACK_OBJECT_NEGATIVE_INTEGER;
        o.via.i64 = v;
    }
    return o;
}

static msgpack_object
s_str (const char *s)
{
    msgpack_object o;
    o.type = MSGPACK_OBJECT_STR;
    o.via.str.ptr = s;
    o.via.str.size = (uint32_t) strlen (s);
    return o;
}

//  Encodes v as oid and compares with the expected bytes.
static void
s_enc (uint32_t oid, msgpack_object v, const char *want, size_t want_len)
{
    qn_buf_t out = QN_BUF_INIT;
    char err [128] = "";
    assert_int_equal (qn_pg_encode_param (oid, &v, &out, err, sizeof err), 0);
    assert_int_equal (out.len, want_len);
    if (want_len)
        assert_memory_equal (out.data, want, want_len);
    qn_buf_free (&out);
}

static void
s_enc_fails (uint32_t oid, msgpack_object v)
{
    qn_buf_t out = QN_BUF_INIT;
    char err [128] = "";
    assert_int_equal (qn_pg_encode_param (oid, &v, &out, err, sizeof err), -1);
    assert_true (err [0] != 0);
    qn_buf_free (&out);
}

static void
test_encode_scalars (void **state)
{
    (void) state;
    msgpack_object t = { .type = MSGPACK_OBJECT_BOOLEAN, .via.boolean = true };
    s_enc (QN_OID_BOOL, t, "\x01", 1);
    s_enc (QN_OID_INT2, s_int (-2), "\xff\xfe", 2);
    s_enc (QN_OID_INT4, s_int (0x01020304), "\x01\x02\x03\x04", 4);
    s_enc (QN_OID_INT8, s_int (-1), "\xff\xff\xff\xff\xff\xff\xff\xff", 8);
    s_enc (QN_OID_INT8, s_int (INT64_MAX), "\x7f\xff\xff\xff\xff\xff\xff\xff", 8);
    s_enc (QN_OID_FLOAT8, s_int (1), "\x3f\xf0\x00\x00\x00\x00\x00\x00", 8);
    msgpack_object d = { .type = MSGPACK_OBJECT_FLOAT64, .via.f64 = -2.5 };
    s_enc (QN_OID_FLOAT8, d, "\xc0\x04\x00\x00\x00\x00\x00\x00", 8);
    s_enc (QN_OID_UUID, s_str ("00010203-0405-0607-0809-0A0B0C0D0E0F"),
           "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f", 16);
    s_enc (QN_OID_TEXT, s_str ("héllo"), "h\xc3\xa9llo", 6);
    s_enc (QN_OID_TEXT, s_int (-42), "-42", 3);
    s_enc (QN_OID_TEXT, t, "true", 4);
    s_enc (QN_OID_TIMESTAMPTZ, s_str ("2026-01-01T00:00:00Z"), "2026-01-01T00:00:00Z", 20);
    s_enc (QN_OID_JSONB, s_str ("{\"a\":1}"), "{\"a\":1}", 7);
    msgpack_object bin = { .type = MSGPACK_OBJECT_BIN, .via.bin = { 3, "\x00\xff\x01" } };
    s_enc (QN_OID_BYTEA, bin, "\x00\xff\x01", 3);
    //  NULL: 1, nothing appended.
    msgpack_object nil = { .type = MSGPACK_OBJECT_NIL };
    qn_buf_t out = QN_BUF_INIT;
    char err [128];
    assert_int_equal (qn_pg_encode_param (QN_OID_INT8, &nil, &out, err, sizeof err), 1);
    assert_int_equal (out.len, 0);
    qn_buf_free (&out);
}

static void
test_encode_mismatches (void **state)
{
    (void) state;
    s_enc_fails (QN_OID_BOOL, s_int (1));
    s_enc_fails (QN_OID_INT2, s_int (40000));
    s_enc_fails (QN_OID_INT4, s_int (-2147483649LL));
    s_enc_fails (QN_OID_INT8, s_str ("1"));
    msgpack_object big = { .type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = UINT64_MAX };
    s_enc_fails (QN_OID_INT8, big);
    s_enc_fails (QN_OID_UUID, s_str ("00010203-0405-0607-0809-0A0B0C0D0E0"));
    s_enc_fails (QN_OID_UUID, s_str ("00010203x0405-0607-0809-0A0B0C0D0E0F"));
    s_enc_fails (QN_OID_BYTEA, s_int (1));
    s_enc_fails (QN_OID_JSONB, s_int (1));
    s_enc_fails (QN_OID_INT8_ARR, s_int (1));
    s_enc_fails (9999, s_int (1));
    assert_int_equal (qn_pg_param_format (QN_OID_TIMESTAMPTZ), 0);
    assert_int_equal (qn_pg_param_format (QN_OID_JSONB), 0);
    assert_int_equal (qn_pg_param_format (QN_OID_INT8), 1);
}

static void
test_encode_arrays (void **state)
{
    (void) state;
    msgpack_object elems [3] = { s_int (1), { .type = MSGPACK_OBJECT_NIL }, s_int (-1) };
    msgpack_object arr = { .type = MSGPACK_OBJECT_ARRAY, .via.array = { 3, elems } };
    const char want [] =
        "\x00\x00\x00\x01" "\x00\x00\x00\x01" "\x00\x00\x00\x14"     //  ndim, has_null, int8
        "\x00\x00\x00\x03" "\x00\x00\x00\x01"                        //  size, lower bound
        "\x00\x00\x00\x08" "\x00\x00\x00\x00\x00\x00\x00\x01"
        "\xff\xff\xff\xff"
        "\x00\x00\x00\x08" "\xff\xff\xff\xff\xff\xff\xff\xff";
    s_enc (QN_OID_INT8_ARR, arr, want, sizeof want - 1);
    //  Empty: no dimensions.
    msgpack_object empty = { .type = MSGPACK_OBJECT_ARRAY, .via.array = { 0, NULL } };
    s_enc (QN_OID_TEXT_ARR, empty, "\x00\x00\x00\x00" "\x00\x00\x00\x00" "\x00\x00\x00\x19", 12);
    //  An element that does not fit fails the whole array.
    msgpack_object bad [1] = { s_str ("x") };
    msgpack_object bad_arr = { .type = MSGPACK_OBJECT_ARRAY, .via.array = { 1, bad } };
    s_enc_fails (QN_OID_INT4_ARR, bad_arr);
}

static void
test_array_builder (void **state)
{
    (void) state;
    qn_buf_t out = QN_BUF_INIT;
    qn_buf_puts (&out, "pre");
    qn_pg_array_t a;
    char err [128];
    qn_pg_array_begin (&a, &out, QN_OID_TEXT);
    msgpack_object s = s_str ("ab");
    assert_int_equal (qn_pg_array_add (&a, &s, err, sizeof err), 0);
    assert_int_equal (qn_pg_array_add (&a, NULL, err, sizeof err), 0);
    qn_pg_array_end (&a);
    const char want [] =
        "pre"
        "\x00\x00\x00\x01" "\x00\x00\x00\x01" "\x00\x00\x00\x19"
        "\x00\x00\x00\x02" "\x00\x00\x00\x01"
        "\x00\x00\x00\x02" "ab"
        "\xff\xff\xff\xff";
    assert_int_equal (out.len, sizeof want - 1);
    assert_memory_equal (out.data, want, sizeof want - 1);
    //  A value that does not fit the element type.
    qn_buf_reset (&out);
    qn_pg_array_begin (&a, &out, QN_OID_INT4);
    assert_int_equal (qn_pg_array_add (&a, &s, err, sizeof err), -1);
    qn_buf_free (&out);
}

//  Decodes and unpacks one value.
static msgpack_object
s_dec (uint32_t oid, const char *data, int len, msgpack_sbuffer *sb, msgpack_unpacked *u)
{
    msgpack_sbuffer_clear (sb);
    msgpack_packer pk;
    msgpack_packer_init (&pk, sb, msgpack_sbuffer_write);
    assert_int_equal (qn_pg_decode_value (oid, data, len, &pk), 0);
    size_t off = 0;
    assert_int_equal (msgpack_unpack_next (u, sb->data, sb->size, &off), MSGPACK_UNPACK_SUCCESS);
    assert_int_equal (off, sb->size);
    return u->data;
}

static void
test_decode_values (void **state)
{
    (void) state;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    msgpack_unpacked u;
    msgpack_unpacked_init (&u);
    msgpack_object o = s_dec (QN_OID_BOOL, "\x01", 1, &sb, &u);
    assert_true (o.type == MSGPACK_OBJECT_BOOLEAN && o.via.boolean);
    o = s_dec (QN_OID_INT2, "\xff\xfe", 2, &sb, &u);
    assert_true (o.type == MSGPACK_OBJECT_NEGATIVE_INTEGER && o.via.i64 == -2);
    o = s_dec (QN_OID_INT4, "\x80\x00\x00\x00", 4, &sb, &u);
    assert_true (o.via.i64 == INT32_MIN);
    o = s_dec (QN_OID_OID, "\x00\x00\x00\x19", 4, &sb, &u);
    assert_true (o.via.u64 == 25);
    o = s_dec (QN_OID_INT8, "\x00\x00\x00\x00\x00\x00\x01\x00", 8, &sb, &u);
    assert_true (o.via.u64 == 256);
    o = s_dec (QN_OID_FLOAT8, "\x3f\xf8\x00\x00\x00\x00\x00\x00", 8, &sb, &u);
    assert_true (o.type == MSGPACK_OBJECT_FLOAT64 && o.via.f64 == 1.5);
    o = s_dec (QN_OID_FLOAT4, "\x3f\xc0\x00\x00", 4, &sb, &u);
    assert_true (o.via.f64 == 1.5);
    //  Timestamps: PostgreSQL's 2000 epoch becomes the Unix epoch.
    o = s_dec (QN_OID_TIMESTAMPTZ, "\x00\x00\x00\x00\x00\x00\x00\x01", 8, &sb, &u);
    assert_true (o.via.u64 == (uint64_t) QN_PG_EPOCH_US + 1);
    o = s_dec (QN_OID_UUID, "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f",
               16, &sb, &u);
    assert_int_equal (o.type, MSGPACK_OBJECT_STR);
    assert_memory_equal (o.via.str.ptr, "00010203-0405-0607-0809-0a0b0c0d0e0f", 36);
    o = s_dec (QN_OID_BYTEA, "\x00\x01", 2, &sb, &u);
    assert_true (o.type == MSGPACK_OBJECT_BIN && o.via.bin.size == 2);
    o = s_dec (QN_OID_JSONB, "\x01{}", 3, &sb, &u);
    assert_true (o.type == MSGPACK_OBJECT_STR && o.via.str.size == 2);
    o = s_dec (QN_OID_JSON, "{ }", 3, &sb, &u);
    assert_true (o.type == MSGPACK_OBJECT_STR && o.via.str.size == 3);
    o = s_dec (QN_OID_TEXT, "", 0, &sb, &u);
    assert_true (o.type == MSGPACK_OBJECT_STR && o.via.str.size == 0);
    //  SQL NULL and types we do not read: nil.
    o = s_dec (QN_OID_INT8, NULL, -1, &sb, &u);
    assert_int_equal (o.type, MSGPACK_OBJECT_NIL);
    o = s_dec (9999, "abc", 3, &sb, &u);
    assert_int_equal (o.type, MSGPACK_OBJECT_NIL);
    msgpack_unpacked_destroy (&u);
    msgpack_sbuffer_destroy (&sb);
}

static void
test_decode_wrong_lengths (void **state)
{
    (void) state;
    const struct { uint32_t oid; int len; } fixed [] = {
        { QN_OID_BOOL, 1 }, { QN_OID_INT2, 2 }, { QN_OID_INT4, 4 }, { QN_OID_OID, 4 },
        { QN_OID_INT8, 8 }, { QN_OID_FLOAT4, 4 }, { QN_OID_FLOAT8, 8 },
        { QN_OID_TIMESTAMPTZ, 8 }, { QN_OID_UUID, 16 }
    };
    const char bytes [32] = { 0 };
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
    for (size_t i = 0; i < sizeof fixed / sizeof fixed [0]; i++)
        for (int len = 0; len <= 17; len++) {
            msgpack_sbuffer_clear (&sb);
            int rc = qn_pg_decode_value (fixed [i].oid, bytes, len, &pk);
            assert_int_equal (rc, len == fixed [i].len ? 0 : -1);
            if (rc)
                assert_int_equal (sb.size, 0);      //  Nothing half-written
        }
    //  jsonb needs its version byte.
    assert_int_equal (qn_pg_decode_value (QN_OID_JSONB, "", 0, &pk), -1);
    assert_int_equal (qn_pg_decode_value (QN_OID_JSONB, "\x02{}", 3, &pk), -1);
    msgpack_sbuffer_destroy (&sb);
}

static void
test_uuid_text (void **state)
{
    (void) state;
    uint8_t u [16];
    assert_int_equal (qn_uuid_parse ("AbCdEf01-2345-6789-abcd-ef0123456789", 36, u), 0);
    char s [37];
    qn_uuid_format (u, s);
    assert_string_equal (s, "abcdef01-2345-6789-abcd-ef0123456789");
    assert_int_equal (qn_uuid_parse ("abcdef01-2345-6789-abcd-ef012345678", 35, u), -1);
    assert_int_equal (qn_uuid_parse ("abcdef0102345-6789-abcd-ef0123456789", 36, u), -1);
    assert_int_equal (qn_uuid_parse ("abcdef01-2345-6789-abcd-ef012345678g", 36, u), -1);
    assert_int_equal (qn_uuid_parse ("abcdef01-2345-6789-abcd-ef0123456789x", 37, u), -1);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_encode_scalars),
        cmocka_unit_test (test_encode_mismatches),
        cmocka_unit_test (test_encode_arrays),
        cmocka_unit_test (test_array_builder),
        cmocka_unit_test (test_decode_values),
        cmocka_unit_test (test_decode_wrong_lengths),
        cmocka_unit_test (test_uuid_text),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
