/*  test/unit/test_wire_msg_spool.c - spool messages (wire/msg_spool.c):
    the append body (also the record body on disk: hostile bytes), the
    stats reply and the DRAINED report. Round trips, prefixes, malformed.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "wire/msg_push.h"
#include "wire/msg_spool.h"
#include "wire/spool_codec.h"

static char *
s_exact (const void *data, size_t len)
{
    char *copy = malloc (len ? len : 1);
    memcpy (copy, data, len);
    return copy;
}

static void
s_str (msgpack_packer *pk, const char *s)
{
    msgpack_pack_str (pk, strlen (s));
    msgpack_pack_str_body (pk, s, strlen (s));
}

static void
test_append_round_trip (void **state)
{
    (void) state;
    //  Two items of a push request, the first without a transaction id.
    msgpack_sbuffer req;
    msgpack_sbuffer_init (&req);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &req, msgpack_sbuffer_write);
    qn_msg_push_begin (&pk, "tenant", 6, false, 2);
    for (int i = 0; i < 2; i++) {
        msgpack_pack_array (&pk, 7);
        s_str (&pk, "q");
        msgpack_pack_nil (&pk);
        if (i)
            s_str (&pk, "given");
        else
            msgpack_pack_nil (&pk);
        msgpack_pack_bin (&pk, 1);
        msgpack_pack_bin_body (&pk, "1", 1);
        msgpack_pack_nil (&pk);
        msgpack_pack_nil (&pk);
        msgpack_pack_nil (&pk);
    }
    msgpack_unpacked h;
    msgpack_unpacked_init (&h);
    qn_msg_push_t push;
    assert_int_equal (qn_msg_push_decode (req.data, req.size, &h, &push), 0);
    char minted [2][37] = { "01900000-0000-7000-8000-000000000001", "" };
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    qn_msg_push_item_t its [2];
    for (uint32_t i = 0; i < 2; i++)
        assert_int_equal (qn_msg_push_item_decode (&push.items [i], &its [i]), 0);
    qn_msg_spool_append_encode (&sb, push.tenant, push.tenant_len, its, push.count, minted);
    msgpack_unpacked_destroy (&h);
    char *buf = s_exact (sb.data, sb.size);
    msgpack_unpacked_init (&h);
    qn_msg_spool_append_t m;
    assert_int_equal (qn_msg_spool_append_decode (buf, sb.size, &h, &m), 0);
    assert_int_equal (m.tenant_len, 6);
    assert_memory_equal (m.tenant, "tenant", 6);
    assert_int_equal (m.count, 2);
    qn_msg_push_item_t t0, t1;
    assert_int_equal (qn_msg_push_item_decode (&m.items [0], &t0), 0);
    assert_int_equal (qn_msg_push_item_decode (&m.items [1], &t1), 0);
    assert_int_equal (t0.txn_len, 36);
    assert_memory_equal (t0.txn, minted [0], 36);
    assert_int_equal (t1.txn_len, 5);
    assert_memory_equal (t1.txn, "given", 5);
    msgpack_unpacked_destroy (&h);
    //  The record body check of the spool files is this decoder.
    assert_int_equal (qn_spool_body_check (buf, sb.size), 2);
    for (size_t cut = 0; cut < sb.size; cut++) {
        msgpack_unpacked_init (&h);
        assert_int_equal (qn_msg_spool_append_decode (buf, cut, &h, &m), -1);
        msgpack_unpacked_destroy (&h);
    }
    free (buf);
    //  No items is malformed.
    msgpack_sbuffer_clear (&sb);
    msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 2);
    s_str (&pk, "");
    msgpack_pack_array (&pk, 0);
    msgpack_unpacked_init (&h);
    assert_int_equal (qn_msg_spool_append_decode (sb.data, sb.size, &h, &m), -1);
    msgpack_unpacked_destroy (&h);
    msgpack_sbuffer_destroy (&sb);
    msgpack_sbuffer_destroy (&req);
}

static void
test_stats_and_drained (void **state)
{
    (void) state;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    qn_msg_spool_stats_t in = {
        .pending = 7, .failed = 2, .db_healthy = false, .buffer_healthy = true,
        .failed_bytes = 1ull << 40
    }, out;
    qn_msg_spool_stats_encode (&sb, &in);
    assert_int_equal (qn_msg_spool_stats_decode (sb.data, sb.size, &out), 0);
    assert_int_equal (out.pending, 7);
    assert_int_equal (out.failed, 2);
    assert_false (out.db_healthy);
    assert_true (out.buffer_healthy);
    assert_int_equal (out.failed_bytes, 1ull << 40);
    assert_int_equal (qn_msg_spool_stats_decode (sb.data, sb.size - 1, &out), -1);
    msgpack_sbuffer_clear (&sb);
    qn_msg_spool_drained_encode (&sb, 123456789);
    uint64_t appends = 0;
    assert_int_equal (qn_msg_spool_drained_decode (sb.data, sb.size, &appends), 0);
    assert_int_equal (appends, 123456789);
    assert_int_equal (qn_msg_spool_drained_decode ("\x91\xa1x", 3, &appends), -1);
    msgpack_sbuffer_destroy (&sb);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_append_round_trip),
        cmocka_unit_test (test_stats_and_drained),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
