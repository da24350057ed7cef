/*  test/unit/test_wire_msg_db.c - the "db" event (wire/msg_db.c): both
    values round trip, every strict prefix and a wrong shape are refused.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "wire/msg_db.h"

static void
test_round_trip (void **state)
{
    (void) state;
    for (int v = 0; v < 2; v++) {
        msgpack_sbuffer sb;
        msgpack_sbuffer_init (&sb);
        qn_msg_db_health_encode (&sb, v == 1);
        bool up = v != 1;
        assert_int_equal (qn_msg_db_health_decode (sb.data, sb.size, &up), 0);
        assert_int_equal (up, v == 1);
        for (size_t cut = 0; cut < sb.size; cut++)
            assert_int_equal (qn_msg_db_health_decode (sb.data, cut, &up), -1);
        msgpack_sbuffer_destroy (&sb);
    }
}

static void
test_malformed (void **state)
{
    (void) state;
    bool up;
    assert_int_equal (qn_msg_db_health_decode ("\x90", 1, &up), -1);        //  []
    assert_int_equal (qn_msg_db_health_decode ("\x91\x01", 2, &up), -1);    //  [1]
    assert_int_equal (qn_msg_db_health_decode ("\xc3", 1, &up), -1);        //  true
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
