/*  test/unit/test_wire_msg_push.c - the push request and its answer
    (wire/msg_push.c): round trips, the item decoder (qn_msg_push_item_t,
    SQS items included), every strict prefix refused, malformed shapes,
    inputs in exact-size heap blocks so ASan catches over-reads.
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

//  A decoded string field equals s (NULL: the field is nil).
static void
s_assert_field (const char *p, size_t len, const char *s)
{
    if (!s) {
        assert_null (p);
        assert_int_equal (len, 0);
        return;
    }
    assert_non_null (p);
    assert_int_equal (len, strlen (s));
    assert_memory_equal (p, s, len);
}

//  Decodes item i of the request in sb (every field checked by the one
//  item decoder).
static void
s_decode_item (const msgpack_sbuffer *sb, uint32_t i, msgpack_unpacked *h, qn_msg_push_item_t *it)
{
    qn_msg_push_t m;
    msgpack_unpacked_init (h);
    assert_int_equal (qn_msg_push_decode (sb->data, sb->size, h, &m), 0);
    assert_true (i < m.count);
    assert_int_equal (qn_msg_push_item_decode (&m.items [i], it), 0);
}

//  Every field of an encoded item decodes back into the item struct: a
//  delayed item, a plain one, an SQS item with and without a delay.
static void
test_item_fields (void **state)
{
    (void) state;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
    qn_msg_push_begin (&pk, "t", 1, false, 4);
    qn_msg_push_item (&pk, &(qn_msg_push_item_t) {
        .queue = "q1x", .queue_len = 2, .partition = "p1", .partition_len = 2,
        .txn = "tx", .txn_len = 2, .payload = "\x01\x02\x03", .payload_len = 3,
        .trace = "tr", .trace_len = 2, .producer = "bob", .producer_len = 3,
        .encrypted = true, .has_not_before = true, .not_before_us = -5
    });
    s_item (&pk, "audit", NULL, false);
    static const char meta [] = "{\"group\":\"g\",\"dedup\":\"d\"}";
    qn_msg_push_item (&pk, &(qn_msg_push_item_t) {
        .queue = "sq", .queue_len = 2, .partition = "_sqs-3", .partition_len = 6,
        .payload = "body", .payload_len = 4, .producer = "000000000000", .producer_len = 12,
        .sqs = meta, .sqs_len = sizeof meta - 1
    });
    qn_msg_push_item (&pk, &(qn_msg_push_item_t) {
        .queue = "sq", .queue_len = 2, .payload = "", .payload_len = 0,
        .has_not_before = true, .not_before_us = 1700000000000000LL, .sqs = "{}", .sqs_len = 2
    });
    msgpack_unpacked h;
    qn_msg_push_item_t it;
    s_decode_item (&sb, 0, &h, &it);
    s_assert_field (it.queue, it.queue_len, "q1");
    s_assert_field (it.partition, it.partition_len, "p1");
    s_assert_field (it.txn, it.txn_len, "tx");
    assert_int_equal (it.payload_len, 3);
    assert_memory_equal (it.payload, "\x01\x02\x03", 3);
    s_assert_field (it.trace, it.trace_len, "tr");
    s_assert_field (it.producer, it.producer_len, "bob");
    assert_true (it.encrypted);
    assert_true (it.has_not_before);
    assert_true (it.not_before_us == -5);
    s_assert_field (it.sqs, it.sqs_len, NULL);
    msgpack_unpacked_destroy (&h);
    s_decode_item (&sb, 1, &h, &it);
    s_assert_field (it.queue, it.queue_len, "audit");
    s_assert_field (it.txn, it.txn_len, NULL);
    s_assert_field (it.trace, it.trace_len, NULL);
    assert_false (it.encrypted);
    assert_false (it.has_not_before);
    s_assert_field (it.sqs, it.sqs_len, NULL);
    msgpack_unpacked_destroy (&h);
    //  An SQS item without a delay: the eighth field is nil.
    s_decode_item (&sb, 2, &h, &it);
    s_assert_field (it.queue, it.queue_len, "sq");
    s_assert_field (it.partition, it.partition_len, "_sqs-3");
    s_assert_field (it.producer, it.producer_len, "000000000000");
    s_assert_field (it.payload, it.payload_len, "body");
    assert_false (it.has_not_before);
    s_assert_field (it.sqs, it.sqs_len, meta);
    msgpack_unpacked_destroy (&h);
    s_decode_item (&sb, 3, &h, &it);
    s_assert_field (it.partition, it.partition_len, NULL);
    assert_non_null (it.payload);
    assert_int_equal (it.payload_len, 0);
    assert_true (it.has_not_before);
    assert_true (it.not_before_us == 1700000000000000LL);
    s_assert_field (it.sqs, it.sqs_len, "{}");
    msgpack_unpacked_destroy (&h);
    msgpack_sbuffer_destroy (&sb);
}

//  Items of other shapes are refused by the one decoder: wrong field
//  types, too few or too many fields; a str payload (older writers) and
//  nil for the optional fields are taken.
static void
test_item_shapes (void **state)
{
    (void) state;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
    //  fields: count, then which field (if any) gets a bad value
    static const struct { uint32_t n; int bad; int ok; } cases [] = {
        { 7, -1, 1 }, { 8, -1, 1 }, { 9, -1, 1 }, { 6, -1, 0 }, { 10, -1, 0 },
        { 7, 0, 0 }, { 7, 1, 0 }, { 7, 2, 0 }, { 7, 3, 0 }, { 7, 4, 0 }, { 7, 5, 0 },
        { 7, 6, 0 }, { 8, 7, 0 }, { 9, 8, 0 }
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases [0]; c++) {
        msgpack_sbuffer_clear (&sb);
        msgpack_pack_array (&pk, cases [c].n);
        for (uint32_t f = 0; f < cases [c].n; f++) {
            if ((int) f == cases [c].bad) {
                //  A map is no field's type; field 7 also refuses a string.
                if (f == 7)
                    s_str (&pk, "soon");
                else
                    msgpack_pack_map (&pk, 0);
            }
            else
            if (f == 0 || f == 3)
                s_str (&pk, f ? "payload" : "q");
            else
                msgpack_pack_nil (&pk);
        }
        msgpack_unpacked h;
        msgpack_unpacked_init (&h);
        size_t off = 0;
        assert_int_equal (msgpack_unpack_next (&h, sb.data, sb.size, &off), MSGPACK_UNPACK_SUCCESS);
        qn_msg_push_item_t it;
        assert_int_equal (qn_msg_push_item_decode (&h.data, &it), cases [c].ok ? 0 : -1);
        if (cases [c].ok) {
            s_assert_field (it.payload, it.payload_len, "payload");
            assert_false (it.has_not_before);
            assert_null (it.sqs);
        }
        msgpack_unpacked_destroy (&h);
    }
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
    qn_msg_push_item_t it;
    assert_int_equal (qn_msg_push_item_decode (&m.items [1], &it), 0);
    assert_true (it.has_not_before);
    assert_int_equal (qn_msg_push_item_decode (&m.items [2], &it), 0);
    s_assert_field (it.queue, it.queue_len, "audit");
    //  Copy with a transaction id filled in: the same item otherwise.
    msgpack_sbuffer copy;
    msgpack_sbuffer_init (&copy);
    msgpack_packer cpk;
    msgpack_packer_init (&cpk, &copy, msgpack_sbuffer_write);
    qn_msg_push_begin (&cpk, "t1", 2, false, 1);
    assert_int_equal (qn_msg_push_item_copy (&cpk, &m.items [1], "minted-id"), 0);
    msgpack_unpacked_destroy (&h);
    msgpack_unpacked_init (&h);
    assert_int_equal (qn_msg_push_decode (copy.data, copy.size, &h, &m), 0);
    assert_false (m.replay);
    assert_int_equal (qn_msg_push_item_decode (&m.items [0], &it), 0);
    s_assert_field (it.txn, it.txn_len, "minted-id");
    s_assert_field (it.queue, it.queue_len, "orders");
    s_assert_field (it.producer, it.producer_len, "alice");
    assert_true (it.has_not_before);
    assert_true (it.not_before_us == 1700000000000000LL);
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
        cmocka_unit_test (test_item_shapes),
        cmocka_unit_test (test_request_malformed),
        cmocka_unit_test (test_answer_round_trip),
        cmocka_unit_test (test_answer_empty_sqlstate),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
