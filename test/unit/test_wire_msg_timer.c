/*  test/unit/test_wire_msg_timer.c - TIMER_ARM round trip */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <msgpack.h>

#include "wire/msg_timer.h"

static void
test_arm_round_trip (void **state)
{
    (void) state;
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    const int64_t cases [][2] = {
        { 1, 1764600000000000LL }, { INT64_MAX, -1 }, { 42, 0 }
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        msgpack_sbuffer_clear (&b);
        qn_msg_timer_arm_t in = { .id = cases [i][0], .due_us = cases [i][1] };
        qn_msg_timer_arm_encode (&pk, &in);
        qn_msg_timer_arm_t out = { 0, 0 };
        assert_int_equal (qn_msg_timer_arm_decode (b.data, b.size, &out), 0);
        assert_true (out.id == in.id);
        assert_true (out.due_us == in.due_us);
        for (size_t cut = 0; cut < b.size; cut++)
            assert_int_equal (qn_msg_timer_arm_decode (b.data, cut, &out), -1);
    }
    //  An id that does not fit int64, a due time that is a string.
    msgpack_sbuffer_clear (&b);
    msgpack_pack_array (&pk, 2);
    msgpack_pack_uint64 (&pk, UINT64_MAX);
    msgpack_pack_int64 (&pk, 1);
    qn_msg_timer_arm_t out;
    assert_int_equal (qn_msg_timer_arm_decode (b.data, b.size, &out), -1);
    msgpack_sbuffer_clear (&b);
    msgpack_pack_array (&pk, 2);
    msgpack_pack_int64 (&pk, 1);
    msgpack_pack_str_with_body (&pk, "1", 1);
    assert_int_equal (qn_msg_timer_arm_decode (b.data, b.size, &out), -1);
    msgpack_sbuffer_destroy (&b);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_arm_round_trip),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
