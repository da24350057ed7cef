/*  test/unit/test_wire_msg_http.c - HTTP_REQUEST, HTTP_RESPONSE,
    HTTP_CLOSED and HTTP_DRAINED round trips, every strict prefix of a body
    refused, wrong shapes refused
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <msgpack.h>
#include <string.h>

#include "wire/msg_http.h"

static void
test_request_round_trip (void **state)
{
    (void) state;
    qn_http_header_t headers [2] = {
        { "Authorization", 13, "Bearer x.y.z", 12 },
        { "Host", 4, "", 0 }
    };
    qn_msg_http_request_t in = {
        .conn_id = 0x123456789abcULL, .seq = 4000000000u,
        .method = "POST", .method_len = 4, .target = "/api/v1/push?x=1", .target_len = 16,
        .keep_alive = true, .headers = headers, .header_count = 2
    };
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    qn_msg_http_request_encode (&pk, &in);
    msgpack_unpacked holder;
    msgpack_unpacked_init (&holder);
    qn_msg_http_request_t out;
    assert_int_equal (qn_msg_http_request_decode (b.data, b.size, &holder, &out), 0);
    assert_int_equal (out.conn_id, in.conn_id);
    assert_int_equal (out.seq, in.seq);
    assert_int_equal (out.method_len, 4);
    assert_memory_equal (out.method, "POST", 4);
    assert_int_equal (out.target_len, 16);
    assert_memory_equal (out.target, "/api/v1/push?x=1", 16);
    assert_true (out.keep_alive);
    assert_int_equal (out.header_count, 2);
    qn_http_header_t h;
    qn_msg_http_request_header (&out, 0, &h);
    assert_int_equal (h.name_len, 13);
    assert_memory_equal (h.name, "Authorization", 13);
    assert_int_equal (h.value_len, 12);
    assert_memory_equal (h.value, "Bearer x.y.z", 12);
    //  Slices point into the encoded bytes, not into copies.
    assert_true (h.value >= b.data && h.value < b.data + b.size);
    qn_msg_http_request_header (&out, 1, &h);
    assert_int_equal (h.value_len, 0);
    msgpack_unpacked_destroy (&holder);
    //  Every strict prefix is refused.
    for (size_t cut = 0; cut < b.size; cut++) {
        msgpack_unpacked_init (&holder);
        assert_int_equal (qn_msg_http_request_decode (b.data, cut, &holder, &out), -1);
        msgpack_unpacked_destroy (&holder);
    }
    msgpack_sbuffer_destroy (&b);
}

static void
test_request_malformed (void **state)
{
    (void) state;
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    //  A header that is not a [name, value] pair.
    msgpack_pack_array (&pk, 6);
    msgpack_pack_uint64 (&pk, 1);
    msgpack_pack_uint32 (&pk, 0);
    msgpack_pack_str_with_body (&pk, "GET", 3);
    msgpack_pack_str_with_body (&pk, "/", 1);
    msgpack_pack_true (&pk);
    msgpack_pack_array (&pk, 1);
    msgpack_pack_array (&pk, 1);
    msgpack_pack_str_with_body (&pk, "Host", 4);
    msgpack_unpacked holder;
    msgpack_unpacked_init (&holder);
    qn_msg_http_request_t out;
    assert_int_equal (qn_msg_http_request_decode (b.data, b.size, &holder, &out), -1);
    msgpack_unpacked_destroy (&holder);
    //  A seq beyond 32 bits, a method that is not a string.
    msgpack_sbuffer_clear (&b);
    msgpack_pack_array (&pk, 6);
    msgpack_pack_uint64 (&pk, 1);
    msgpack_pack_uint64 (&pk, 1ULL << 32);
    msgpack_pack_str_with_body (&pk, "GET", 3);
    msgpack_pack_str_with_body (&pk, "/", 1);
    msgpack_pack_true (&pk);
    msgpack_pack_array (&pk, 0);
    msgpack_unpacked_init (&holder);
    assert_int_equal (qn_msg_http_request_decode (b.data, b.size, &holder, &out), -1);
    msgpack_unpacked_destroy (&holder);
    msgpack_sbuffer_clear (&b);
    msgpack_pack_array (&pk, 6);
    msgpack_pack_uint64 (&pk, 1);
    msgpack_pack_uint64 (&pk, 1);
    msgpack_pack_nil (&pk);
    msgpack_pack_str_with_body (&pk, "/", 1);
    msgpack_pack_true (&pk);
    msgpack_pack_array (&pk, 0);
    msgpack_unpacked_init (&holder);
    assert_int_equal (qn_msg_http_request_decode (b.data, b.size, &holder, &out), -1);
    msgpack_unpacked_destroy (&holder);
    msgpack_sbuffer_destroy (&b);
}

static void
test_response_round_trip (void **state)
{
    (void) state;
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    qn_msg_http_response_t in = { .conn_id = 77, .seq = 12, .close = true };
    qn_msg_http_response_encode (&pk, &in);
    qn_msg_http_response_t out;
    assert_int_equal (qn_msg_http_response_decode (b.data, b.size, &out), 0);
    assert_int_equal (out.conn_id, 77);
    assert_int_equal (out.seq, 12);
    assert_true (out.close);
    for (size_t cut = 0; cut < b.size; cut++)
        assert_int_equal (qn_msg_http_response_decode (b.data, cut, &out), -1);
    //  A close flag that is not a boolean.
    msgpack_sbuffer_clear (&b);
    msgpack_pack_array (&pk, 3);
    msgpack_pack_uint64 (&pk, 1);
    msgpack_pack_uint64 (&pk, 1);
    msgpack_pack_uint64 (&pk, 1);
    assert_int_equal (qn_msg_http_response_decode (b.data, b.size, &out), -1);
    msgpack_sbuffer_destroy (&b);
}

static void
test_closed_and_drained (void **state)
{
    (void) state;
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    qn_msg_http_closed_encode (&pk, UINT64_MAX);
    uint64_t conn = 0;
    assert_int_equal (qn_msg_http_closed_decode (b.data, b.size, &conn), 0);
    assert_true (conn == UINT64_MAX);
    assert_int_equal (qn_msg_http_closed_decode (b.data, b.size - 1, &conn), -1);
    msgpack_sbuffer_clear (&b);
    qn_msg_http_drained_encode (&pk);
    assert_int_equal (b.size, 1);
    assert_int_equal ((uint8_t) b.data [0], 0x90);
    assert_int_equal (qn_msg_http_drained_decode (b.data, b.size), 0);
    assert_int_equal (qn_msg_http_drained_decode ("\xc0", 1), -1);
    assert_int_equal (qn_msg_http_closed_decode ("\x90", 1, &conn), -1);
    msgpack_sbuffer_destroy (&b);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_request_round_trip),
        cmocka_unit_test (test_request_malformed),
        cmocka_unit_test (test_response_round_trip),
        cmocka_unit_test (test_closed_and_drained),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
