/*  test/unit/test_wire_msg_jwks.c - JWKS_KEYS and JWKS_REFRESH round trips */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <msgpack.h>
#include <string.h>

#include "wire/msg_jwks.h"

static void
test_keys_round_trip (void **state)
{
    (void) state;
    const char *jwks = "{\"keys\":[{\"kty\":\"oct\",\"kid\":\"a\",\"k\":\"AAAA\"}]}";
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    qn_msg_jwks_keys_t in = { .generation = 9, .json = jwks, .json_len = strlen (jwks) };
    qn_msg_jwks_keys_encode (&pk, &in);
    qn_msg_jwks_keys_t out;
    assert_int_equal (qn_msg_jwks_keys_decode (b.data, b.size, &out), 0);
    assert_int_equal (out.generation, 9);
    assert_int_equal (out.json_len, strlen (jwks));
    assert_memory_equal (out.json, jwks, out.json_len);
    assert_true (out.json >= b.data && out.json < b.data + b.size);
    for (size_t cut = 0; cut < b.size; cut++)
        assert_int_equal (qn_msg_jwks_keys_decode (b.data, cut, &out), -1);
    //  The document as a string is read too; anything else is not.
    msgpack_sbuffer_clear (&b);
    msgpack_pack_array (&pk, 2);
    msgpack_pack_uint64 (&pk, 1);
    msgpack_pack_str_with_body (&pk, "{}", 2);
    assert_int_equal (qn_msg_jwks_keys_decode (b.data, b.size, &out), 0);
    assert_int_equal (out.json_len, 2);
    msgpack_sbuffer_clear (&b);
    msgpack_pack_array (&pk, 2);
    msgpack_pack_uint64 (&pk, 1);
    msgpack_pack_nil (&pk);
    assert_int_equal (qn_msg_jwks_keys_decode (b.data, b.size, &out), -1);
    msgpack_sbuffer_destroy (&b);
}

static void
test_refresh (void **state)
{
    (void) state;
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    qn_msg_jwks_refresh_encode (&pk);
    assert_int_equal (qn_msg_jwks_refresh_decode (b.data, b.size), 0);
    assert_int_equal (qn_msg_jwks_refresh_decode (b.data, 0), -1);
    assert_int_equal (qn_msg_jwks_refresh_decode ("\x01", 1), -1);
    msgpack_sbuffer_destroy (&b);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_keys_round_trip),
        cmocka_unit_test (test_refresh),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
