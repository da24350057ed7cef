/*  test/unit/test_wire_msg_kafka.c - kafka_acceptor <-> kafka bodies
    Round trips of KAFKA_REQUEST, KAFKA_RESPONSE and KAFKA_CLOSED, and
    bodies of the wrong shape refused.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "wire/msg_kafka.h"

static void
test_round_trips (void **state)
{
    (void) state;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    qn_msg_kafka_t m;
    qn_msg_kafka_request_encode (&sb, UINT64_MAX - 1, 7);
    assert_int_equal (qn_msg_kafka_request_decode (sb.data, sb.size, &m), 0);
    assert_true (m.conn_id == UINT64_MAX - 1);
    assert_int_equal (m.seq, 7);
    //  A request is not a response nor a closed.
    assert_int_equal (qn_msg_kafka_response_decode (sb.data, sb.size, &m), -1);
    assert_int_equal (qn_msg_kafka_closed_decode (sb.data, sb.size, &m), -1);
    for (size_t cut = 0; cut < sb.size; cut++)
        assert_int_equal (qn_msg_kafka_request_decode (sb.data, cut, &m), -1);
    msgpack_sbuffer_clear (&sb);
    qn_msg_kafka_response_encode (&sb, 3, UINT32_MAX, true);
    assert_int_equal (qn_msg_kafka_response_decode (sb.data, sb.size, &m), 0);
    assert_true (m.conn_id == 3 && m.seq == UINT32_MAX && m.close);
    msgpack_sbuffer_clear (&sb);
    qn_msg_kafka_response_encode (&sb, 3, 0, false);
    assert_int_equal (qn_msg_kafka_response_decode (sb.data, sb.size, &m), 0);
    assert_false (m.close);
    msgpack_sbuffer_clear (&sb);
    qn_msg_kafka_closed_encode (&sb, 42);
    assert_int_equal (qn_msg_kafka_closed_decode (sb.data, sb.size, &m), 0);
    assert_true (m.conn_id == 42);
    //  Wrong types.
    assert_int_equal (qn_msg_kafka_closed_decode ("\x91\xa1x", 3, &m), -1);
    assert_int_equal (qn_msg_kafka_request_decode ("\x92\x01\xc3", 3, &m), -1);
    msgpack_sbuffer_destroy (&sb);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_round_trips),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
