/*  test/unit/test_wire_msg_committed.c - the "committed" event
    (wire/msg_committed.c): with and without a partition.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "wire/msg_committed.h"

static void
test_round_trip (void **state)
{
    (void) state;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    qn_msg_committed_t in = { .tenant = "", .tenant_len = 0, .queue = "orders", .queue_len = 6 }, out;
    qn_msg_committed_encode (&sb, &in);
    assert_int_equal (qn_msg_committed_decode (sb.data, sb.size, &out), 0);
    assert_int_equal (out.tenant_len, 0);
    assert_int_equal (out.queue_len, 6);
    assert_memory_equal (out.queue, "orders", 6);
    assert_null (out.partition);
    for (size_t cut = 0; cut < sb.size; cut++)
        assert_int_equal (qn_msg_committed_decode (sb.data, cut, &out), -1);
    msgpack_sbuffer_clear (&sb);
    in.tenant = "acme";
    in.tenant_len = 4;
    in.partition = "p-7";
    in.partition_len = 3;
    qn_msg_committed_encode (&sb, &in);
    assert_int_equal (qn_msg_committed_decode (sb.data, sb.size, &out), 0);
    assert_memory_equal (out.tenant, "acme", 4);
    assert_int_equal (out.partition_len, 3);
    assert_memory_equal (out.partition, "p-7", 3);
    //  A queue that is not a string.
    assert_int_equal (qn_msg_committed_decode ("\x92\xa0\x01", 3, &out), -1);
    msgpack_sbuffer_destroy (&sb);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_round_trip),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
