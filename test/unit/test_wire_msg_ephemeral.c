/*  test/unit/test_wire_msg_ephemeral.c - the ephemeral queues' messages
    (wire/msg_ephemeral.c): peer operation round trips, truncations and
    unknown kinds refused.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "wire/msg_ephemeral.h"

#define S(lit) ((qn_eph_str_t) { lit, sizeof lit - 1 })

static void
test_peer (void **state)
{
    (void) state;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    qn_msg_eph_peer_t in = {
        .kind = QN_EPH_REPLY, .to = S ("127.0.0.1:7000"), .a = S ("7@127.0.0.1:7000"),
        .b = S ("c-1"), .payload = S ("{\"ok\":true}"), .n = -3
    }, out;
    qn_msg_eph_peer_encode (&sb, &in);
    assert_int_equal (qn_msg_eph_peer_decode (sb.data, sb.size, &out), 0);
    assert_int_equal (out.kind, QN_EPH_REPLY);
    assert_int_equal (out.to.len, 14);
    assert_int_equal (out.name.len, 0);
    assert_memory_equal (out.a.ptr, "7@127.0.0.1:7000", 16);
    assert_memory_equal (out.payload.ptr, "{\"ok\":true}", 11);
    assert_int_equal (out.n, -3);
    for (size_t cut = 0; cut < sb.size; cut++)
        assert_int_equal (qn_msg_eph_peer_decode (sb.data, cut, &out), -1);
    msgpack_sbuffer_clear (&sb);
    in.kind = 99;
    qn_msg_eph_peer_encode (&sb, &in);
    assert_int_equal (qn_msg_eph_peer_decode (sb.data, sb.size, &out), -1);
    msgpack_sbuffer_destroy (&sb);
}

//  QN_MSG_MESH_EPH's body: operations back to back, read one by one.
static void
test_peer_stream (void **state)
{
    (void) state;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    qn_msg_eph_peer_t want = { .kind = QN_EPH_WANT, .name = S ("q"), .b = S ("10.0.0.2:7000"), .n = 4 };
    qn_msg_eph_peer_t offer = {
        .kind = QN_EPH_OFFER, .to = S ("10.0.0.2:7000"), .name = S ("q"), .payload = S ("[1,2]")
    }, out;
    qn_msg_eph_peer_encode (&sb, &want);
    size_t first = sb.size;
    qn_msg_eph_peer_encode (&sb, &offer);
    qn_msg_eph_peer_encode (&sb, &want);
    size_t off = 0;
    qn_eph_str_t raw;
    assert_int_equal (qn_msg_eph_peer_next (sb.data, sb.size, &off, &out, &raw), 1);
    assert_int_equal (out.kind, QN_EPH_WANT);
    assert_int_equal (out.n, 4);
    assert_int_equal (off, first);
    assert_ptr_equal (raw.ptr, sb.data);
    assert_int_equal (raw.len, first);
    assert_int_equal (qn_msg_eph_peer_next (sb.data, sb.size, &off, &out, NULL), 1);
    assert_int_equal (out.kind, QN_EPH_OFFER);
    assert_memory_equal (out.payload.ptr, "[1,2]", 5);
    assert_int_equal (qn_msg_eph_peer_next (sb.data, sb.size, &off, &out, NULL), 1);
    assert_int_equal (out.kind, QN_EPH_WANT);
    assert_int_equal (off, sb.size);
    assert_int_equal (qn_msg_eph_peer_next (sb.data, sb.size, &off, &out, NULL), 0);
    //  A cut stream: the whole operations before the cut, then malformed.
    off = 0;
    assert_int_equal (qn_msg_eph_peer_next (sb.data, sb.size - 1, &off, &out, NULL), 1);
    assert_int_equal (qn_msg_eph_peer_next (sb.data, sb.size - 1, &off, &out, NULL), 1);
    assert_int_equal (qn_msg_eph_peer_next (sb.data, sb.size - 1, &off, &out, NULL), -1);
    //  Not an operation in the middle: malformed there.
    msgpack_sbuffer_clear (&sb);
    qn_msg_eph_peer_encode (&sb, &want);
    msgpack_sbuffer_write (&sb, "\x91\x01", 2);
    off = 0;
    assert_int_equal (qn_msg_eph_peer_next (sb.data, sb.size, &off, &out, NULL), 1);
    assert_int_equal (qn_msg_eph_peer_next (sb.data, sb.size, &off, &out, NULL), -1);
    msgpack_sbuffer_destroy (&sb);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_peer),
        cmocka_unit_test (test_peer_stream),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
