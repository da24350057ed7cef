/*  test/unit/test_wire_msg_maint.c - maintenance flag messages
    (wire/msg_maint.c): set request, state event / reply with and without
    an error.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "wire/msg_maint.h"

static void
test_set_round_trip (void **state)
{
    (void) state;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    for (int i = 0; i < 4; i++) {
        qn_msg_maint_set_t in = { .pop = i & 1, .enabled = i & 2 }, out;
        msgpack_sbuffer_clear (&sb);
        qn_msg_maint_set_encode (&sb, &in);
        assert_int_equal (qn_msg_maint_set_decode (sb.data, sb.size, &out), 0);
        assert_int_equal (out.pop, in.pop);
        assert_int_equal (out.enabled, in.enabled);
    }
    assert_int_equal (qn_msg_maint_set_decode ("\x92\x01\xc3", 3, &(qn_msg_maint_set_t) { 0 }), -1);
    msgpack_sbuffer_destroy (&sb);
}

static void
test_state_round_trip (void **state)
{
    (void) state;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    qn_msg_maint_state_t in = { .push = true, .pop = false, .gen = 42 }, out;
    qn_msg_maint_state_encode (&sb, &in);
    assert_int_equal (qn_msg_maint_state_decode (sb.data, sb.size, &out), 0);
    assert_true (out.push);
    assert_false (out.pop);
    assert_int_equal (out.gen, 42);
    assert_string_equal (out.sqlstate, "");
    assert_null (out.message);
    for (size_t cut = 0; cut < sb.size; cut++)
        assert_int_equal (qn_msg_maint_state_decode (sb.data, cut, &out), -1);
    //  A failed set: the error and the unchanged flags.
    msgpack_sbuffer_clear (&sb);
    qn_msg_maint_state_t err = { .pop = true, .gen = 7, .sqlstate = "08006",
                                 .message = "database unavailable", .message_len = 20 };
    qn_msg_maint_state_encode (&sb, &err);
    assert_int_equal (qn_msg_maint_state_decode (sb.data, sb.size, &out), 0);
    assert_false (out.push);
    assert_true (out.pop);
    assert_int_equal (out.gen, 7);
    assert_string_equal (out.sqlstate, "08006");
    assert_int_equal (out.message_len, 20);
    assert_memory_equal (out.message, "database unavailable", 20);
    msgpack_sbuffer_destroy (&sb);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_set_round_trip),
        cmocka_unit_test (test_state_round_trip),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
