/*  test/unit/test_wire_mesh_keys.c - CURVE keys from the cell secret
    (wire/mesh_keys.c): deterministic, distinct per purpose and per secret,
    consistent with libzmq's own public-key derivation, short secrets refused.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>
#include <zmq.h>

#include "wire/mesh_keys.h"

static void
test_derive (void **state)
{
    (void) state;
    qn_mesh_keys_t a, b, c;
    const char *s1 = "correct horse battery staple", *s2 = "correct horse battery stapler";
    assert_int_equal (qn_mesh_keys_derive (s1, strlen (s1), &a), 0);
    assert_int_equal (qn_mesh_keys_derive (s1, strlen (s1), &b), 0);
    assert_int_equal (qn_mesh_keys_derive (s2, strlen (s2), &c), 0);
    assert_memory_equal (&a, &b, sizeof a);
    assert_memory_not_equal (a.server_public, c.server_public, 32);
    assert_memory_not_equal (a.client_public, c.client_public, 32);
    assert_memory_not_equal (a.server_public, a.client_public, 32);
    //  libzmq derives the same public key from the secret key.
    char z_sec [41], z_pub [41], z_mine [41];
    assert_non_null (zmq_z85_encode (z_sec, a.server_secret, 32));
    assert_int_equal (zmq_curve_public (z_pub, z_sec), 0);
    assert_non_null (zmq_z85_encode (z_mine, a.server_public, 32));
    assert_string_equal (z_pub, z_mine);
    assert_int_equal (qn_mesh_keys_derive ("short", 5, &a), -1);
}

static void
test_notify (void **state)
{
    (void) state;
    qn_mesh_keys_t k, other;
    assert_int_equal (qn_mesh_keys_derive ("0123456789abcdef", 16, &k), 0);
    assert_int_equal (qn_mesh_keys_derive ("0123456789abcdeF", 16, &other), 0);
    char text [8001], frame [6000];
    size_t tlen, flen;
    assert_int_equal (qn_mesh_notify_encode (&k, "QM\x01\x02", 4, 8000, text, sizeof text, &tlen), 0);
    assert_int_equal (strlen (text), tlen);
    assert_int_equal (qn_mesh_notify_decode (&k, text, tlen, frame, sizeof frame, &flen), 0);
    assert_int_equal (flen, 4);
    assert_memory_equal (frame, "QM\x01\x02", 4);
    //  Another cell's key, a flipped byte, a missing tag: refused.
    assert_int_equal (qn_mesh_notify_decode (&other, text, tlen, frame, sizeof frame, &flen), -1);
    text [1] = text [1] == 'A' ? 'B' : 'A';
    assert_int_equal (qn_mesh_notify_decode (&k, text, tlen, frame, sizeof frame, &flen), -1);
    assert_int_equal (qn_mesh_notify_decode (&k, "UU0=", 4, frame, sizeof frame, &flen), -1);
    //  Too long for a NOTIFY payload.
    static char big [7000];
    assert_int_equal (qn_mesh_notify_encode (&k, big, sizeof big, 8000, text, sizeof text, &tlen), -1);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_derive),
        cmocka_unit_test (test_notify),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
