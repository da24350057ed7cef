/*  test/unit/test_wire_msg_password.c - PW_WORK and PW_DONE round trips,
    truncations and wrong shapes refused */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <msgpack.h>
#include <string.h>

#include "wire/msg_password.h"

static void
test_work (void **state)
{
    (void) state;
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    const char pw [] = "pa\0ss";            //  Bytes, NUL included
    qn_msg_pw_work_t in = { .op = QN_PW_VERIFY, .password = pw, .password_len = 5,
                            .hash = "$argon2id$x", .hash_len = 11 };
    qn_msg_pw_work_encode (&pk, &in);
    qn_msg_pw_work_t out;
    assert_int_equal (qn_msg_pw_work_decode (b.data, b.size, &out), 0);
    assert_int_equal (out.op, QN_PW_VERIFY);
    assert_int_equal (out.password_len, 5);
    assert_memory_equal (out.password, pw, 5);
    assert_int_equal (out.hash_len, 11);
    assert_memory_equal (out.hash, "$argon2id$x", 11);
    for (size_t cut = 0; cut < b.size; cut++)
        assert_int_equal (qn_msg_pw_work_decode (b.data, cut, &out), -1);
    msgpack_sbuffer_clear (&b);
    in = (qn_msg_pw_work_t) { .op = QN_PW_HASH, .password = "x", .password_len = 1, .hash = "", .hash_len = 0 };
    qn_msg_pw_work_encode (&pk, &in);
    assert_int_equal (qn_msg_pw_work_decode (b.data, b.size, &out), 0);
    assert_int_equal (out.op, QN_PW_HASH);
    assert_int_equal (out.hash_len, 0);
    //  An unknown op, a password as a string, an over-long password.
    msgpack_sbuffer_clear (&b);
    msgpack_pack_array (&pk, 3);
    msgpack_pack_int (&pk, 2);
    msgpack_pack_bin_with_body (&pk, "x", 1);
    msgpack_pack_str_with_body (&pk, "", 0);
    assert_int_equal (qn_msg_pw_work_decode (b.data, b.size, &out), -1);
    msgpack_sbuffer_clear (&b);
    msgpack_pack_array (&pk, 3);
    msgpack_pack_int (&pk, 0);
    msgpack_pack_str_with_body (&pk, "x", 1);
    msgpack_pack_str_with_body (&pk, "", 0);
    assert_int_equal (qn_msg_pw_work_decode (b.data, b.size, &out), -1);
    static char big [QN_PW_MAX_LEN + 1];
    msgpack_sbuffer_clear (&b);
    in = (qn_msg_pw_work_t) { .op = QN_PW_HASH, .password = big, .password_len = sizeof big, .hash = "", .hash_len = 0 };
    qn_msg_pw_work_encode (&pk, &in);
    assert_int_equal (qn_msg_pw_work_decode (b.data, b.size, &out), -1);
    msgpack_sbuffer_destroy (&b);
}

static void
test_done (void **state)
{
    (void) state;
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    qn_msg_pw_done_t in = { .ok = true, .hash = "$argon2id$v=19$abc", .hash_len = 18 };
    qn_msg_pw_done_encode (&pk, &in);
    qn_msg_pw_done_t out;
    assert_int_equal (qn_msg_pw_done_decode (b.data, b.size, &out), 0);
    assert_true (out.ok);
    assert_int_equal (out.hash_len, 18);
    assert_memory_equal (out.hash, "$argon2id$v=19$abc", 18);
    for (size_t cut = 0; cut < b.size; cut++)
        assert_int_equal (qn_msg_pw_done_decode (b.data, cut, &out), -1);
    msgpack_sbuffer_clear (&b);
    in = (qn_msg_pw_done_t) { .ok = false, .hash = "", .hash_len = 0 };
    qn_msg_pw_done_encode (&pk, &in);
    assert_int_equal (qn_msg_pw_done_decode (b.data, b.size, &out), 0);
    assert_false (out.ok);
    msgpack_sbuffer_clear (&b);
    msgpack_pack_array (&pk, 2);
    msgpack_pack_int (&pk, 1);
    msgpack_pack_str_with_body (&pk, "", 0);
    assert_int_equal (qn_msg_pw_done_decode (b.data, b.size, &out), -1);
    msgpack_sbuffer_destroy (&b);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_work),
        cmocka_unit_test (test_done),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
