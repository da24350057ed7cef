/*  test/unit/test_wire_msg_pg.c - PG_EXEC (with the typed parameter
    builder) and PG_RESULT round trips; the one PG_RESULT decoder on
    timeouts and malformed replies
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <msgpack.h>
#include <string.h>

#include "wire/msg_pg.h"

static void
test_exec_round_trip (void **state)
{
    (void) state;
    qn_pg_args_t args;
    qn_pg_args_init (&args);
    qn_pg_args_cstr (&args, "orders");
    qn_pg_args_str (&args, NULL, 0);
    qn_pg_args_int (&args, -5000000000LL);
    qn_pg_args_bool (&args, true);
    qn_pg_args_double (&args, 1.5);
    qn_pg_args_bin (&args, "\x00\x01", 2);
    qn_pg_args_null (&args);
    msgpack_object nine = { .type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = 9 };
    qn_pg_args_obj (&args, &nine);
    assert_int_equal (args.count, 8);
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    qn_msg_pg_exec_encode (&b, 17, "SELECT 1", &args);
    msgpack_unpacked holder;
    msgpack_unpacked_init (&holder);
    qn_msg_pg_exec_t out;
    assert_int_equal (qn_msg_pg_exec_decode (b.data, b.size, &holder, &out), 0);
    assert_int_equal (out.stmt_id, 17);
    assert_int_equal (out.sql_len, 8);
    assert_memory_equal (out.sql, "SELECT 1", 8);
    assert_int_equal (out.param_count, 8);
    const msgpack_object *p = out.params;
    assert_int_equal (p [0].type, MSGPACK_OBJECT_STR);
    assert_memory_equal (p [0].via.str.ptr, "orders", 6);
    assert_int_equal (p [1].type, MSGPACK_OBJECT_NIL);
    assert_int_equal (p [2].type, MSGPACK_OBJECT_NEGATIVE_INTEGER);
    assert_true (p [2].via.i64 == -5000000000LL);
    assert_int_equal (p [3].type, MSGPACK_OBJECT_BOOLEAN);
    assert_true (p [3].via.boolean);
    assert_int_equal (p [4].type, MSGPACK_OBJECT_FLOAT64);
    assert_true (p [4].via.f64 == 1.5);
    assert_int_equal (p [5].type, MSGPACK_OBJECT_BIN);
    assert_int_equal (p [5].via.bin.size, 2);
    assert_int_equal (p [6].type, MSGPACK_OBJECT_NIL);
    assert_int_equal (p [7].type, MSGPACK_OBJECT_POSITIVE_INTEGER);
    assert_int_equal (p [7].via.u64, 9);
    msgpack_unpacked_destroy (&holder);
    for (size_t cut = 0; cut < b.size; cut++) {
        msgpack_unpacked_init (&holder);
        assert_int_equal (qn_msg_pg_exec_decode (b.data, cut, &holder, &out), -1);
        msgpack_unpacked_destroy (&holder);
    }
    //  Reuse: cleared, no parameters, no sql.
    qn_pg_args_clear (&args);
    msgpack_sbuffer_clear (&b);
    qn_msg_pg_exec_encode (&b, 3, NULL, &args);
    msgpack_unpacked_init (&holder);
    assert_int_equal (qn_msg_pg_exec_decode (b.data, b.size, &holder, &out), 0);
    assert_null (out.sql);
    assert_int_equal (out.param_count, 0);
    msgpack_unpacked_destroy (&holder);
    msgpack_sbuffer_destroy (&b);
    qn_pg_args_free (&args);
}

//  Array parameters: the values after qn_pg_args_array are its elements,
//  then parameters again; an empty array and a nil array element.
static void
test_exec_arrays (void **state)
{
    (void) state;
    qn_pg_args_t args;
    qn_pg_args_init (&args);
    qn_pg_args_cstr (&args, "t");
    qn_pg_args_array (&args, 3);
    qn_pg_args_cstr (&args, "a");
    qn_pg_args_null (&args);
    qn_pg_args_bin (&args, "xy", 2);
    qn_pg_args_array (&args, 0);
    qn_pg_args_array (&args, 2);
    qn_pg_args_int (&args, 7);
    qn_pg_args_bool (&args, false);
    qn_pg_args_int (&args, 8);
    assert_int_equal (args.count, 5);
    assert_int_equal (args.open, 0);
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    qn_msg_pg_exec_encode (&b, 4, NULL, &args);
    msgpack_unpacked holder;
    msgpack_unpacked_init (&holder);
    qn_msg_pg_exec_t out;
    assert_int_equal (qn_msg_pg_exec_decode (b.data, b.size, &holder, &out), 0);
    assert_int_equal (out.param_count, 5);
    const msgpack_object *p = out.params;
    assert_int_equal (p [0].type, MSGPACK_OBJECT_STR);
    assert_int_equal (p [1].type, MSGPACK_OBJECT_ARRAY);
    assert_int_equal (p [1].via.array.size, 3);
    assert_int_equal (p [1].via.array.ptr [0].type, MSGPACK_OBJECT_STR);
    assert_memory_equal (p [1].via.array.ptr [0].via.str.ptr, "a", 1);
    assert_int_equal (p [1].via.array.ptr [1].type, MSGPACK_OBJECT_NIL);
    assert_int_equal (p [1].via.array.ptr [2].type, MSGPACK_OBJECT_BIN);
    assert_int_equal (p [1].via.array.ptr [2].via.bin.size, 2);
    assert_int_equal (p [2].type, MSGPACK_OBJECT_ARRAY);
    assert_int_equal (p [2].via.array.size, 0);
    assert_int_equal (p [3].type, MSGPACK_OBJECT_ARRAY);
    assert_int_equal (p [3].via.array.size, 2);
    assert_int_equal (p [3].via.array.ptr [0].via.u64, 7);
    assert_int_equal (p [3].via.array.ptr [1].type, MSGPACK_OBJECT_BOOLEAN);
    assert_false (p [3].via.array.ptr [1].via.boolean);
    assert_int_equal (p [4].type, MSGPACK_OBJECT_POSITIVE_INTEGER);
    assert_int_equal (p [4].via.u64, 8);
    msgpack_unpacked_destroy (&holder);
    //  Cleared mid-array: nothing left open.
    qn_pg_args_array (&args, 4);
    qn_pg_args_clear (&args);
    assert_int_equal (args.open, 0);
    assert_int_equal (args.count, 0);
    msgpack_sbuffer_destroy (&b);
    qn_pg_args_free (&args);
}

static void
test_exec_malformed (void **state)
{
    (void) state;
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 3);
    msgpack_pack_uint32 (&pk, 1);
    msgpack_pack_int (&pk, 5);               //  sql neither string nor nil
    msgpack_pack_array (&pk, 0);
    msgpack_unpacked holder;
    msgpack_unpacked_init (&holder);
    qn_msg_pg_exec_t out;
    assert_int_equal (qn_msg_pg_exec_decode (b.data, b.size, &holder, &out), -1);
    msgpack_unpacked_destroy (&holder);
    msgpack_sbuffer_clear (&b);
    msgpack_pack_array (&pk, 3);
    msgpack_pack_uint32 (&pk, 1);
    msgpack_pack_nil (&pk);
    msgpack_pack_nil (&pk);                  //  params not an array
    msgpack_unpacked_init (&holder);
    assert_int_equal (qn_msg_pg_exec_decode (b.data, b.size, &holder, &out), -1);
    msgpack_unpacked_destroy (&holder);
    msgpack_sbuffer_destroy (&b);
}

static void
test_result_round_trip (void **state)
{
    (void) state;
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    qn_msg_pg_result_begin (&pk, true, "", NULL, NULL, 2);
    qn_msg_pg_result_row (&pk, 2);
    qn_msg_pg_result_int (&pk, -1);
    msgpack_pack_str_with_body (&pk, "a", 1);   //  A value as wire/pg_codec.h packs it
    qn_msg_pg_result_row (&pk, 1);
    qn_msg_pg_result_null (&pk);
    qn_pg_result_t res;
    assert_int_equal (qn_pg_result_decode (b.data, b.size, &res), 0);
    assert_true (res.ok);
    assert_false (res.timed_out);
    char none [8] = "";
    assert_false (qn_pg_result_failed (&res, none, sizeof none));
    assert_string_equal (res.message, "");
    assert_string_equal (res.detail, "");
    assert_int_equal (res.row_count, 2);
    const msgpack_object *c = qn_pg_result_col (&res, 0, 0);
    assert_non_null (c);
    assert_int_equal (c->type, MSGPACK_OBJECT_NEGATIVE_INTEGER);
    assert_true (c->via.i64 == -1);
    c = qn_pg_result_col (&res, 1, 0);
    assert_non_null (c);
    assert_int_equal (c->type, MSGPACK_OBJECT_NIL);
    c = qn_pg_result_col (&res, 0, 1);
    assert_non_null (c);
    assert_int_equal (c->type, MSGPACK_OBJECT_STR);
    assert_memory_equal (c->via.str.ptr, "a", 1);
    assert_null (qn_pg_result_col (&res, 1, 1));
    assert_null (qn_pg_result_col (&res, 2, 0));
    qn_pg_result_free (&res);
    qn_pg_result_free (&res);               //  Twice is harmless
    //  Every strict prefix reads as a malformed reply.
    for (size_t cut = 0; cut < b.size; cut++) {
        assert_int_equal (qn_pg_result_decode (b.data, cut, &res), -1);
        assert_false (res.ok);
        assert_string_equal (res.sqlstate, "XX000");
        assert_string_equal (res.message, "malformed database reply");
        qn_pg_result_free (&res);
    }
    //  An error reply.
    msgpack_sbuffer_clear (&b);
    qn_msg_pg_result_begin (&pk, false, "23505", "duplicate key", "Key (id)=(1)", 0);
    assert_int_equal (qn_pg_result_decode (b.data, b.size, &res), 0);
    assert_false (res.ok);
    assert_string_equal (res.sqlstate, "23505");
    assert_string_equal (res.message, "duplicate key");
    assert_string_equal (res.detail, "Key (id)=(1)");
    assert_int_equal (res.row_count, 0);
    char why [64];
    assert_true (qn_pg_result_failed (&res, why, sizeof why));
    assert_string_equal (why, "sqlstate=23505 message=duplicate key");
    qn_pg_result_free (&res);
    msgpack_sbuffer_destroy (&b);
}

static void
test_result_timeout_and_malformed (void **state)
{
    (void) state;
    qn_pg_result_t res;
    assert_int_equal (qn_pg_result_decode (NULL, 0, &res), -1);
    assert_true (res.timed_out);
    assert_false (res.ok);
    assert_string_equal (res.sqlstate, "57014");
    assert_non_null (res.message);
    char why [64];
    assert_true (qn_pg_result_failed (&res, why, sizeof why));
    assert_string_equal (why, "no answer in time");
    qn_pg_result_free (&res);
    //  Four fields, and a first field that is not a boolean.
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 4);
    msgpack_pack_true (&pk);
    msgpack_pack_nil (&pk);
    msgpack_pack_nil (&pk);
    msgpack_pack_nil (&pk);
    assert_int_equal (qn_pg_result_decode (b.data, b.size, &res), -1);
    assert_false (res.timed_out);
    assert_string_equal (res.sqlstate, "XX000");
    qn_pg_result_free (&res);
    msgpack_sbuffer_clear (&b);
    msgpack_pack_array (&pk, 5);
    msgpack_pack_int (&pk, 1);
    msgpack_pack_nil (&pk);
    msgpack_pack_nil (&pk);
    msgpack_pack_nil (&pk);
    msgpack_pack_array (&pk, 0);
    assert_int_equal (qn_pg_result_decode (b.data, b.size, &res), -1);
    qn_pg_result_free (&res);
    //  A hostile header claiming four billion rows is refused before any
    //  allocation.
    assert_int_equal (qn_pg_result_decode ("\x95\xc3\xa0\xa0\xa0\xdd\xff\xff\xff\xff", 10, &res), -1);
    qn_pg_result_free (&res);
    msgpack_sbuffer_destroy (&b);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_exec_round_trip),
        cmocka_unit_test (test_exec_arrays),
        cmocka_unit_test (test_exec_malformed),
        cmocka_unit_test (test_result_round_trip),
        cmocka_unit_test (test_result_timeout_and_malformed),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
