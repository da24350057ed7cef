/*  test/unit/test_wire_msg_push.c - the push request and its answer
    (wire/msg_push.c): round trips, every strict prefix refused, malformed
    shapes, inputs in exact-size heap blocks so ASan catches over-reads.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "wire/msg_push.h"

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

//  An item [q, p, txn|nil, payload, nil, producer, false(, nb)].
static void
s_item (msgpack_packer *pk, const char *queue, const char *txn, bool delayed)
{
    qn_msg_push_item (pk, &(qn_msg_push_item_t) {
        .queue = queue, .queue_len = strlen (queue),
        .partition = "Default", .partition_len = 7,
        .txn = txn, .txn_len = txn ? strlen (txn) : 0,
        .payload = "{}", .payload_len = 2,
        .producer = "alice", .producer_len = 5,
        .has_not_before = delayed, .not_before_us = 1700000000000000LL
    });
}

static bool
s_field_is (const msgpack_object *item, uint32_t f, const char *s)
{
    const msgpack_object *o = &item->via.array.ptr [f];
    return o->type == MSGPACK_OBJECT_STR && o->via.str.size == strlen (s)
        && memcmp (o->via.str.ptr, s, o->via.str.size) == 0;
}

//  Every field of an encoded item decodes back.
static void
test_item_fields (void **state)
{
    (void) state;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
    qn_msg_push_begin (&pk, "t", 1, false, 2);
    qn_msg_push_item (&pk, &(qn_msg_push_item_t) {
        .queue = "q1x", .queue_len = 2, .partition = "p1", .partition_len = 2,
        .txn = "tx", .txn_len = 2, .payload = "\x01\x02\x03", .payload_len = 3,
        .trace = "tr", .trace_len = 2, .producer = "bob", .producer_len = 3,
        .encrypted = true, .has_not_before = true, .not_before_us = -5
    });
    s_item (&pk, "audit", NULL, false);
    msgpack_unpacked h;
    msgpack_unpacked_init (&h);
    qn_msg_push_t m;
    assert_int_equal (qn_msg_push_decode (sb.data, sb.size, &h, &m), 0);
    assert_int_equal (m.count, 2);
    const msgpack_object *a = &m.items [0];
    assert_int_equal (a->via.array.size, 8);
    assert_true (s_field_is (a, 0, "q1"));
    assert_true (s_field_is (a, 1, "p1"));
    assert_true (s_field_is (a, 2, "tx"));
    assert_int_equal (a->via.array.ptr [3].type, MSGPACK_OBJECT_BIN);
    assert_int_equal (a->via.array.ptr [3].via.bin.size, 3);
    assert_memory_equal (a->via.array.ptr [3].via.bin.ptr, "\x01\x02\x03", 3);
    assert_true (s_field_is (a, 4, "tr"));
    assert_true (s_field_is (a, 5, "bob"));
    assert_true (a->via.array.ptr [6].via.boolean);
    assert_int_equal (a->via.array.ptr [7].type, MSGPACK_OBJECT_NEGATIVE_INTEGER);
    assert_true (a->via.array.ptr [7].via.i64 == -5);
    const msgpack_object *b = &m.items [1];
    assert_int_equal (b->via.array.size, 7);
    assert_true (s_field_is (b, 0, "audit"));
    assert_int_equal (b->via.array.ptr [2].type, MSGPACK_OBJECT_NIL);
    assert_int_equal (b->via.array.ptr [4].type, MSGPACK_OBJECT_NIL);
    assert_int_equal (b->via.array.ptr [6].type, MSGPACK_OBJECT_BOOLEAN);
    assert_false (b->via.array.ptr [6].via.boolean);
    msgpack_unpacked_destroy (&h);
    msgpack_sbuffer_destroy (&sb);
}

static void
test_request_round_trip (void **state)
{
    (void) state;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
    qn_msg_push_begin (&pk, "t1", 2, true, 3);
    s_item (&pk, "orders", "tx-1", false);
    s_item (&pk, "orders", NULL, true);
    s_item (&pk, "audit", NULL, false);
    char *buf = s_exact (sb.data, sb.size);
    msgpack_unpacked h;
    msgpack_unpacked_init (&h);
    qn_msg_push_t m;
    assert_int_equal (qn_msg_push_decode (buf, sb.size, &h, &m), 0);
    assert_int_equal (m.tenant_len, 2);
    assert_memory_equal (m.tenant, "t1", 2);
    assert_true (m.replay);
    assert_int_equal (m.count, 3);
    assert_int_equal (m.items [1].via.array.size, 8);
    assert_int_equal (m.items [2].via.array.ptr [0].via.str.size, 5);
    //  Copy with a transaction id filled in: the same item otherwise.
    msgpack_sbuffer copy;
    msgpack_sbuffer_init (&copy);
    msgpack_packer cpk;
    msgpack_packer_init (&cpk, &copy, msgpack_sbuffer_write);
    qn_msg_push_begin (&cpk, "t1", 2, false, 1);
    qn_msg_push_item_copy (&cpk, &m.items [1], "minted-id");
    msgpack_unpacked_destroy (&h);
    msgpack_unpacked_init (&h);
    assert_int_equal (qn_msg_push_decode (copy.data, copy.size, &h, &m), 0);
    assert_false (m.replay);
    assert_int_equal (m.items [0].via.array.size, 8);
    assert_int_equal (m.items [0].via.array.ptr [2].via.str.size, 9);
    assert_memory_equal (m.items [0].via.array.ptr [2].via.str.ptr, "minted-id", 9);
    msgpack_unpacked_destroy (&h);
    msgpack_sbuffer_destroy (&copy);
    //  Every strict prefix is refused.
    for (size_t cut = 0; cut < sb.size; cut++) {
        char *p = s_exact (sb.data, cut);
        msgpack_unpacked_init (&h);
        assert_int_equal (qn_msg_push_decode (p, cut, &h, &m), -1);
        msgpack_unpacked_destroy (&h);
        free (p);
    }
    free (buf);
    msgpack_sbuffer_destroy (&sb);
}

static void
test_request_malformed (void **state)
{
    (void) state;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
    msgpack_unpacked h;
    qn_msg_push_t m;
    //  An item with a number for its queue.
    qn_msg_push_begin (&pk, "", 0, false, 1);
    msgpack_pack_array (&pk, 7);
    msgpack_pack_int (&pk, 1);
    for (int i = 0; i < 6; i++)
        msgpack_pack_nil (&pk);
    msgpack_unpacked_init (&h);
    assert_int_equal (qn_msg_push_decode (sb.data, sb.size, &h, &m), -1);
    msgpack_unpacked_destroy (&h);
    //  The old two-element body (no flags).
    msgpack_sbuffer_clear (&sb);
    msgpack_pack_array (&pk, 2);
    s_str (&pk, "");
    msgpack_pack_array (&pk, 1);
    s_item (&pk, "q", NULL, false);
    msgpack_unpacked_init (&h);
    assert_int_equal (qn_msg_push_decode (sb.data, sb.size, &h, &m), -1);
    msgpack_unpacked_destroy (&h);
    //  Trailing bytes.
    msgpack_sbuffer_clear (&sb);
    qn_msg_push_begin (&pk, "", 0, false, 1);
    s_item (&pk, "q", NULL, false);
    msgpack_pack_nil (&pk);
    msgpack_unpacked_init (&h);
    assert_int_equal (qn_msg_push_decode (sb.data, sb.size, &h, &m), -1);
    msgpack_unpacked_destroy (&h);
    //  A header claiming a huge array is refused before allocating.
    msgpack_unpacked_init (&h);
    assert_int_equal (qn_msg_push_decode ("\x93\xa0\x00\xdd\xff\xff\xff\xff", 8, &h, &m), -1);
    msgpack_unpacked_destroy (&h);
    msgpack_sbuffer_destroy (&sb);
}

static void
test_answer_round_trip (void **state)
{
    (void) state;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
    qn_msg_push_answer_begin (&pk, 3);
    qn_msg_push_result_t in [3] = {
        { .status = QN_PUSH_QUEUED, .seq = 42, .partition_id = 7 },
        { .status = QN_PUSH_DUPLICATE, .seq = 41, .partition_id = 0 },
        { .status = QN_PUSH_BUFFERED, .txn = "0190-abc", .txn_len = 8 },
    };
    for (int i = 0; i < 3; i++)
        qn_msg_push_result (&pk, &in [i]);
    char *buf = s_exact (sb.data, sb.size);
    msgpack_unpacked h;
    msgpack_unpacked_init (&h);
    qn_msg_push_answer_t a;
    assert_int_equal (qn_msg_push_answer_decode (buf, sb.size, &h, &a), 0);
    assert_true (a.ok);
    assert_string_equal (a.sqlstate, "00000");
    assert_int_equal (a.count, 3);
    for (uint32_t i = 0; i < 3; i++) {
        qn_msg_push_result_t r;
        assert_int_equal (qn_msg_push_answer_at (&a, i, &r), 0);
        assert_int_equal (r.status, in [i].status);
        assert_int_equal (r.seq, in [i].seq);
        assert_int_equal (r.partition_id, in [i].partition_id);
        assert_int_equal (r.txn_len, in [i].txn_len);
        if (in [i].txn)
            assert_memory_equal (r.txn, in [i].txn, r.txn_len);
        else
            assert_null (r.txn);
    }
    qn_msg_push_result_t r;
    assert_int_equal (qn_msg_push_answer_at (&a, 3, &r), -1);
    msgpack_unpacked_destroy (&h);
    for (size_t cut = 0; cut < sb.size; cut++) {
        msgpack_unpacked_init (&h);
        assert_int_equal (qn_msg_push_answer_decode (buf, cut, &h, &a), -1);
        msgpack_unpacked_destroy (&h);
    }
    free (buf);
    //  A refusal carries its SQLSTATE and message, no results.
    msgpack_sbuffer_clear (&sb);
    qn_msg_push_refuse (&pk, "58030", "spool write failed");
    msgpack_unpacked_init (&h);
    assert_int_equal (qn_msg_push_answer_decode (sb.data, sb.size, &h, &a), 0);
    assert_false (a.ok);
    assert_string_equal (a.sqlstate, "58030");
    assert_int_equal (a.message_len, 18);
    assert_memory_equal (a.message, "spool write failed", 18);
    assert_int_equal (a.count, 0);
    msgpack_unpacked_destroy (&h);
    //  An unknown status is malformed.
    msgpack_sbuffer_clear (&sb);
    qn_msg_push_answer_begin (&pk, 1);
    qn_msg_push_result_t bad = { .status = 9 };
    qn_msg_push_result (&pk, &bad);
    msgpack_unpacked_init (&h);
    assert_int_equal (qn_msg_push_answer_decode (sb.data, sb.size, &h, &a), -1);
    msgpack_unpacked_destroy (&h);
    msgpack_sbuffer_destroy (&sb);
}

//  fuzz_spool found it: an empty SQLSTATE string (msgpack gives it a NULL
//  pointer) was copied with memcpy (UBSan: null argument). The decoder
//  takes it as an empty state; the item then fails as malformed.
static void
test_answer_empty_sqlstate (void **state)
{
    (void) state;
    static const char crash [] = "\x94\xc3\xa0\xa5\x30\x30\x30\x30\x30\x91\x94\x00\xa5"
                                 "\x30\x30\x30\x30\x30\x07\xc0";
    char *buf = s_exact (crash, sizeof crash - 1);
    msgpack_unpacked h;
    msgpack_unpacked_init (&h);
    qn_msg_push_answer_t a;
    assert_int_equal (qn_msg_push_answer_decode (buf, sizeof crash - 1, &h, &a), -1);
    msgpack_unpacked_destroy (&h);
    //  An empty state with no results is a well-formed answer.
    static const char empty [] = "\x94\xc3\xa0\xa0\x90";
    memcpy (buf, empty, sizeof empty - 1);
    msgpack_unpacked_init (&h);
    assert_int_equal (qn_msg_push_answer_decode (buf, sizeof empty - 1, &h, &a), 0);
    assert_string_equal (a.sqlstate, "");
    msgpack_unpacked_destroy (&h);
    free (buf);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_request_round_trip),
        cmocka_unit_test (test_item_fields),
        cmocka_unit_test (test_request_malformed),
        cmocka_unit_test (test_answer_round_trip),
        cmocka_unit_test (test_answer_empty_sqlstate),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
