/*  test/unit/test_wire_msg_mesh.c - the mesh's inner message bodies
    (wire/msg_mesh.c): qconf, group and status round trips, truncations refused.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "wire/msg_mesh.h"

static void
test_qconf (void **state)
{
    (void) state;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    qn_msg_mesh_qconf_t in = { "acme", 4, "orders", 6 }, out;
    qn_msg_mesh_qconf_encode (&sb, &in);
    assert_int_equal (qn_msg_mesh_qconf_decode (sb.data, sb.size, &out), 0);
    assert_int_equal (out.tenant_len, 4);
    assert_memory_equal (out.tenant, "acme", 4);
    assert_int_equal (out.queue_len, 6);
    assert_memory_equal (out.queue, "orders", 6);
    for (size_t cut = 0; cut < sb.size; cut++)
        assert_int_equal (qn_msg_mesh_qconf_decode (sb.data, cut, &out), -1);
    msgpack_sbuffer_clear (&sb);
    qn_msg_mesh_empty_encode (&sb);
    assert_int_equal (qn_msg_mesh_qconf_decode (sb.data, sb.size, &out), -1);
    msgpack_sbuffer_destroy (&sb);
}

static void
test_group (void **state)
{
    (void) state;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    qn_msg_mesh_group_t in = { "acme", 4, "orders", 6, "billing", 7, 2 }, out;
    qn_msg_mesh_group_encode (&sb, &in);
    assert_int_equal (qn_msg_mesh_group_decode (sb.data, sb.size, &out), 0);
    assert_int_equal (out.tenant_len, 4);
    assert_memory_equal (out.tenant, "acme", 4);
    assert_int_equal (out.queue_len, 6);
    assert_memory_equal (out.queue, "orders", 6);
    assert_int_equal (out.group_len, 7);
    assert_memory_equal (out.group, "billing", 7);
    assert_int_equal (out.what, 2);
    for (size_t cut = 0; cut < sb.size; cut++)
        assert_int_equal (qn_msg_mesh_group_decode (sb.data, cut, &out), -1);
    msgpack_sbuffer_clear (&sb);
    qn_msg_mesh_qconf_t q = { "acme", 4, "orders", 6 };
    qn_msg_mesh_qconf_encode (&sb, &q);
    assert_int_equal (qn_msg_mesh_group_decode (sb.data, sb.size, &out), -1);
    msgpack_sbuffer_destroy (&sb);
}

static void
test_status (void **state)
{
    (void) state;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    qn_msg_mesh_status_encode (&sb, "{\"enabled\":true}", 16);
    const char *json;
    size_t len;
    assert_int_equal (qn_msg_mesh_status_decode (sb.data, sb.size, &json, &len), 0);
    assert_int_equal (len, 16);
    assert_memory_equal (json, "{\"enabled\":true}", 16);
    assert_int_equal (qn_msg_mesh_status_decode (sb.data, sb.size - 1, &json, &len), -1);
    msgpack_sbuffer_destroy (&sb);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_qconf),
        cmocka_unit_test (test_status),
        cmocka_unit_test (test_group),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
