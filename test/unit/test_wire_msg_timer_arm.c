/*  test/unit/test_wire_msg_timer_arm.c - QN_MSG_TIMER_ARM body round trip */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "wire/msg_timer_arm.h"

static void
test_round_trip (void **state)
{
    (void) state;
    const qn_msg_timer_arm_t cases [] = {
        { 1, 0 }, { 42, 1764600000123456LL }, { INT64_MAX, -1 }, { 7, INT64_MIN }
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        qn_buf_t b = QN_BUF_INIT;
        qn_msg_timer_arm_encode (&cases [i], &b);
        assert_true (b.len > 0);
        //  Exact-size copy so ASan catches over-reads.
        char *exact = malloc (b.len);
        memcpy (exact, b.data, b.len);
        qn_msg_timer_arm_t out = { 0, 0 };
        assert_int_equal (qn_msg_timer_arm_decode (exact, b.len, &out), 0);
        assert_true (out.id == cases [i].id);
        assert_true (out.due_us == cases [i].due_us);
        free (exact);
        qn_buf_free (&b);
    }
}

static void
test_malformed (void **state)
{
    (void) state;
    qn_msg_timer_arm_t out;
    qn_buf_t b = QN_BUF_INIT;
    qn_msg_timer_arm_encode (&(qn_msg_timer_arm_t) { 5, 6 }, &b);
    assert_true (b.len > 2);
    //  Every strict prefix is refused.
    for (size_t n = 0; n < b.len; n++)
        assert_int_equal (qn_msg_timer_arm_decode (b.data, n, &out), -1);
    qn_buf_free (&b);
    //  [1] (one element), ["x", 2] (a string id), a bare integer.
    const char one [] = { (char) 0x91, 0x01 };
    const char str [] = { (char) 0x92, (char) 0xa1, 'x', 0x02 };
    const char bare [] = { 0x05 };
    assert_int_equal (qn_msg_timer_arm_decode (one, sizeof one, &out), -1);
    assert_int_equal (qn_msg_timer_arm_decode (str, sizeof str, &out), -1);
    assert_int_equal (qn_msg_timer_arm_decode (bare, sizeof bare, &out), -1);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_round_trip),
        cmocka_unit_test (test_malformed),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
