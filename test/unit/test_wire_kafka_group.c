/*  test/unit/test_wire_kafka_group.c - Kafka consumer-group layouts
    (wire/kafka_group.c; spec kafka.md §4.7-4.12, §12.1): hand-written
    golden frames for JoinGroup v5 (request and response) and OffsetFetch
    v1 and v4 (request and response), decoded and re-encoded byte for
    byte; round trips of every request and response of JoinGroup,
    SyncGroup, Heartbeat, LeaveGroup, OffsetCommit and OffsetFetch for
    every advertised version, with every strict prefix and a trailing byte
    refused; nullable fields where the versions have them.
    Inputs sit in exact-size heap blocks so ASan catches over-reads.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "wire/kafka_group.h"
#include "wire/kafka_prim.h"

typedef void (*enc_fn) (qn_buf_t *, int16_t, const void *);
typedef int (*dec_fn) (int16_t, const void *, size_t, qn_karena_t *, void *);

static void
s_hex (qn_buf_t *out, const char *hex)
{
    for (const char *p = hex; *p; ) {
        if (*p == ' ' || *p == '\n') {
            p++;
            continue;
        }
        unsigned v;
        assert_int_equal (sscanf (p, "%2x", &v), 1);
        qn_buf_putc (out, (char) v);
        p += 2;
    }
}

static int
s_dec_exact (dec_fn dec, int16_t v, const void *data, size_t len, qn_karena_t *a, void *out)
{
    uint8_t *copy = qn_malloc (len ? len : 1);
    memcpy (copy, data, len);
    int rc = dec (v, copy, len, a, out);
    free (copy);
    return rc;
}

//  Encodes in, decodes it, re-encodes: same bytes; every strict prefix
//  and one trailing byte refused.
static void
s_round_trip (enc_fn enc, dec_fn dec, int16_t v, const void *in, size_t struct_size)
{
    qn_buf_t b = QN_BUF_INIT, again = QN_BUF_INIT;
    enc (&b, v, in);
    qn_karena_t a;
    qn_karena_init (&a);
    void *out = calloc (1, struct_size);
    assert_int_equal (dec (v, b.data, b.len, &a, out), 0);
    enc (&again, v, out);
    assert_int_equal (again.len, b.len);
    assert_memory_equal (again.data, b.data, b.len);
    for (size_t n = 0; n < b.len; n++)
        assert_int_equal (s_dec_exact (dec, v, b.data, n, &a, out), -1);
    qn_buf_putc (&b, 0);
    assert_int_equal (s_dec_exact (dec, v, b.data, b.len, &a, out), -1);
    free (out);
    qn_karena_free (&a);
    qn_buf_free (&b);
    qn_buf_free (&again);
}

#define RT(name, v, in) \
    s_round_trip ((enc_fn) qn_kafka_##name##_encode, (dec_fn) qn_kafka_##name##_decode, (v), (in), sizeof *(in))

// ---------------------------------------------------------------- golden frames

//  JoinGroup v5 as librdkafka sends it: group "g1", session 10000 ms,
//  rebalance 300000 ms, member "", instance null, "consumer", one
//  protocol "range" with a ConsumerProtocolSubscription v0 for topic t1.
static const char *s_join_v5_req =
    "0002 6731  00002710  000493e0  0000  ffff  0008 636f6e73756d6572"
    "00000001  0005 72616e6765  0000000e 0000 00000001 0002 7431 00000000";

//  Its answer to the leader: throttle 0, error 0, generation 1, "range",
//  leader "m1", member "m1", one member m1 (instance null) with 2 bytes.
static const char *s_join_v5_resp =
    "00000000 0000 00000001 0005 72616e6765 0002 6d31 0002 6d31"
    "00000001 0002 6d31 ffff 00000002 0102";

static void
test_join_group_v5_golden (void **state)
{
    (void) state;
    qn_buf_t in = QN_BUF_INIT, out = QN_BUF_INIT;
    qn_karena_t a;
    qn_karena_init (&a);
    s_hex (&in, s_join_v5_req);
    qn_kafka_join_group_req_t jr;
    assert_int_equal (qn_kafka_join_group_req_decode (5, in.data, in.len, &a, &jr), 0);
    assert_true (qn_kstr_eq (jr.group_id, QN_KSTR ("g1")));
    assert_int_equal (jr.session_timeout_ms, 10000);
    assert_int_equal (jr.rebalance_timeout_ms, 300000);
    assert_int_equal (jr.member_id.len, 0);
    assert_int_equal (jr.group_instance_id.len, -1);
    assert_true (qn_kstr_eq (jr.protocol_type, QN_KSTR ("consumer")));
    assert_int_equal (jr.protocol_count, 1);
    assert_true (qn_kstr_eq (jr.protocols [0].name, QN_KSTR ("range")));
    assert_int_equal (jr.protocols [0].metadata.len, 14);
    qn_kafka_join_group_req_encode (&out, 5, &jr);
    assert_int_equal (out.len, in.len);
    assert_memory_equal (out.data, in.data, in.len);
    //  v4 has no group_instance_id: the same bytes do not decode.
    assert_int_equal (qn_kafka_join_group_req_decode (4, in.data, in.len, &a, &jr), -1);

    qn_buf_free (&in);
    qn_buf_free (&out);
    s_hex (&in, s_join_v5_resp);
    qn_kafka_join_member_t m = { QN_KSTR ("m1"), QN_KSTR_NULL, { "\x01\x02", 2 } };
    qn_kafka_join_group_resp_t r = { 0, 0, 1, QN_KSTR ("range"), QN_KSTR ("m1"), QN_KSTR ("m1"), 1, &m };
    qn_kafka_join_group_resp_encode (&out, 5, &r);
    assert_int_equal (out.len, in.len);
    assert_memory_equal (out.data, in.data, in.len);
    qn_kafka_join_group_resp_t back;
    assert_int_equal (qn_kafka_join_group_resp_decode (5, in.data, in.len, &a, &back), 0);
    assert_int_equal (back.generation_id, 1);
    assert_int_equal (back.member_count, 1);
    assert_int_equal (back.members [0].group_instance_id.len, -1);
    assert_memory_equal (back.members [0].metadata.ptr, "\x01\x02", 2);
    qn_buf_free (&in);
    qn_buf_free (&out);
    qn_karena_free (&a);
}

//  OffsetFetch v1: group "g1", topic "t1" partition 0 -> offset 3,
//  metadata "", error 0; no throttle time, no group error.
static const char *s_of_v1_req = "0002 6731 00000001 0002 7431 00000001 00000000";
static const char *s_of_v1_resp =
    "00000001 0002 7431 00000001 00000000 0000000000000003 0000 0000";
//  OffsetFetch v4: group "g1", every topic (null array); the answer has the
//  throttle time first and the group error last, a null metadata.
static const char *s_of_v4_req = "0002 6731 ffffffff";
static const char *s_of_v4_resp =
    "00000000 00000001 0002 7431 00000001 00000002 ffffffffffffffff ffff 0003 0000";

static void
test_offset_fetch_golden (void **state)
{
    (void) state;
    qn_buf_t in = QN_BUF_INIT, out = QN_BUF_INIT;
    qn_karena_t a;
    qn_karena_init (&a);

    s_hex (&in, s_of_v1_req);
    qn_kafka_offset_fetch_req_t q;
    assert_int_equal (qn_kafka_offset_fetch_req_decode (1, in.data, in.len, &a, &q), 0);
    assert_int_equal (q.topic_count, 1);
    assert_int_equal (q.topics [0].partition_count, 1);
    assert_int_equal (q.topics [0].partitions [0], 0);
    qn_kafka_offset_fetch_req_encode (&out, 1, &q);
    assert_memory_equal (out.data, in.data, in.len);
    assert_int_equal (out.len, in.len);
    qn_buf_free (&in);
    qn_buf_free (&out);

    s_hex (&in, s_of_v1_resp);
    qn_kafka_of_part_resp_t p1 = { 0, 3, QN_KSTR (""), 0 };
    qn_kafka_of_topic_resp_t t1 = { QN_KSTR ("t1"), 1, &p1 };
    qn_kafka_offset_fetch_resp_t r1 = { 0, 1, &t1, 0 };
    qn_kafka_offset_fetch_resp_encode (&out, 1, &r1);
    assert_int_equal (out.len, in.len);
    assert_memory_equal (out.data, in.data, in.len);
    qn_buf_free (&in);
    qn_buf_free (&out);

    //  v4, and the null topic list refused at v1.
    s_hex (&in, s_of_v4_req);
    assert_int_equal (qn_kafka_offset_fetch_req_decode (1, in.data, in.len, &a, &q), -1);
    assert_int_equal (qn_kafka_offset_fetch_req_decode (4, in.data, in.len, &a, &q), 0);
    assert_int_equal (q.topic_count, -1);
    qn_kafka_offset_fetch_req_encode (&out, 4, &q);
    assert_int_equal (out.len, in.len);
    assert_memory_equal (out.data, in.data, in.len);
    qn_buf_free (&in);
    qn_buf_free (&out);

    s_hex (&in, s_of_v4_resp);
    qn_kafka_of_part_resp_t p4 = { 2, -1, QN_KSTR_NULL, 3 };
    qn_kafka_of_topic_resp_t t4 = { QN_KSTR ("t1"), 1, &p4 };
    qn_kafka_offset_fetch_resp_t r4 = { 0, 1, &t4, 0 };
    qn_kafka_offset_fetch_resp_encode (&out, 4, &r4);
    assert_int_equal (out.len, in.len);
    assert_memory_equal (out.data, in.data, in.len);
    qn_kafka_offset_fetch_resp_t back;
    assert_int_equal (qn_kafka_offset_fetch_resp_decode (4, in.data, in.len, &a, &back), 0);
    assert_int_equal (back.topics [0].partitions [0].error_code, 3);
    assert_int_equal (back.topics [0].partitions [0].metadata.len, -1);
    qn_buf_free (&in);
    qn_buf_free (&out);
    qn_karena_free (&a);
}

// ---------------------------------------------------------------- round trips

static void
test_join_sync_round_trips (void **state)
{
    (void) state;
    qn_kafka_join_protocol_t protos [2] = {
        { QN_KSTR ("range"), { "\x00\x01", 2 } }, { QN_KSTR ("roundrobin"), { "", 0 } } };
    qn_kafka_join_member_t members [2] = {
        { QN_KSTR ("a-1"), QN_KSTR_NULL, { "meta", 4 } }, { QN_KSTR ("b-2"), QN_KSTR_NULL, { "", 0 } } };
    qn_kafka_sync_assignment_t asg [2] = {
        { QN_KSTR ("a-1"), { "\x00\x00\x01", 3 } }, { QN_KSTR ("b-2"), { "", 0 } } };
    for (int16_t v = 2; v <= 5; v++) {
        qn_kafka_join_group_req_t jr = {
            QN_KSTR ("grp"), 30000, 60000, QN_KSTR ("a-1"), v >= 5 ? QN_KSTR ("inst") : QN_KSTR_NULL,
            QN_KSTR ("consumer"), 2, protos };
        RT (join_group_req, v, &jr);
        qn_kafka_join_group_resp_t js = {
            0, 79, 7, QN_KSTR ("range"), QN_KSTR ("a-1"), QN_KSTR ("b-2"), 2, members };
        RT (join_group_resp, v, &js);
        js.member_count = 0;
        RT (join_group_resp, v, &js);
    }
    for (int16_t v = 0; v <= 3; v++) {
        qn_kafka_sync_group_req_t sr = {
            QN_KSTR ("grp"), 4, QN_KSTR ("a-1"), v >= 3 ? QN_KSTR_NULL : QN_KSTR_NULL, 2, asg };
        RT (sync_group_req, v, &sr);
        if (v >= 3) {
            sr.group_instance_id = QN_KSTR ("i");
            RT (sync_group_req, v, &sr);
        }
        qn_kafka_sync_group_resp_t ss = { 0, 27, { "xyz", 3 } };
        RT (sync_group_resp, v, &ss);
    }
}

static void
test_heartbeat_leave_round_trips (void **state)
{
    (void) state;
    for (int16_t v = 0; v <= 3; v++) {
        qn_kafka_heartbeat_req_t hr = { QN_KSTR ("grp"), 9, QN_KSTR ("m"), v >= 3 ? QN_KSTR ("i") : QN_KSTR_NULL };
        RT (heartbeat_req, v, &hr);
        qn_kafka_group_error_resp_t e = { 0, 22 };
        RT (group_error_resp, v, &e);
    }
    for (int16_t v = 0; v <= 1; v++) {
        qn_kafka_heartbeat_req_t lr = { QN_KSTR ("grp"), 0, QN_KSTR ("m"), QN_KSTR_NULL };
        RT (leave_group_req, v, &lr);
    }
    //  Heartbeat v0 is 3 fields; v3 adds the instance id.
    qn_buf_t b = QN_BUF_INIT;
    qn_kafka_heartbeat_req_t hr = { QN_KSTR ("g"), 1, QN_KSTR ("m"), QN_KSTR_NULL };
    qn_kafka_heartbeat_req_encode (&b, 0, &hr);
    assert_int_equal (b.len, 3 + 4 + 3);
    qn_buf_free (&b);
    qn_kafka_heartbeat_req_encode (&b, 3, &hr);
    assert_int_equal (b.len, 3 + 4 + 3 + 2);
    qn_buf_free (&b);
}

static void
test_offset_commit_fetch_round_trips (void **state)
{
    (void) state;
    qn_kafka_oc_part_t parts [2] = { { 0, 42, QN_KSTR ("meta") }, { 2, -1, QN_KSTR_NULL } };
    qn_kafka_oc_topic_t topics [2] = { { QN_KSTR ("t1"), 2, parts }, { QN_KSTR ("t2"), 0, NULL } };
    qn_kafka_oc_part_resp_t rparts [2] = { { 0, 0 }, { 2, 3 } };
    qn_kafka_oc_topic_resp_t rtopics [1] = { { QN_KSTR ("t1"), 2, rparts } };
    for (int16_t v = 2; v <= 5; v++) {
        qn_kafka_offset_commit_req_t oc = { QN_KSTR ("grp"), -1, QN_KSTR (""), v <= 4 ? -1 : 0, 2, topics };
        RT (offset_commit_req, v, &oc);
        qn_kafka_offset_commit_resp_t ocr = { 0, 1, rtopics };
        RT (offset_commit_resp, v, &ocr);
    }
    //  v5 has no retention time: 8 bytes shorter than v4.
    qn_buf_t b4 = QN_BUF_INIT, b5 = QN_BUF_INIT;
    qn_kafka_offset_commit_req_t oc = { QN_KSTR ("grp"), 3, QN_KSTR ("m"), -1, 2, topics };
    qn_kafka_offset_commit_req_encode (&b4, 4, &oc);
    qn_kafka_offset_commit_req_encode (&b5, 5, &oc);
    assert_int_equal (b4.len, b5.len + 8);
    qn_buf_free (&b4);
    qn_buf_free (&b5);

    int32_t idx [3] = { 0, 1, 2 };
    qn_kafka_of_topic_t ft [1] = { { QN_KSTR ("t1"), 3, idx } };
    qn_kafka_of_part_resp_t fp [2] = { { 0, 7, { "m\0x", 3 }, 0 }, { 1, -1, QN_KSTR_NULL, 3 } };
    qn_kafka_of_topic_resp_t frt [1] = { { QN_KSTR ("t1"), 2, fp } };
    for (int16_t v = 1; v <= 4; v++) {
        qn_kafka_offset_fetch_req_t of = { QN_KSTR ("grp"), 1, ft };
        RT (offset_fetch_req, v, &of);
        if (v >= 2) {
            of.topic_count = -1;
            of.topics = NULL;
            RT (offset_fetch_req, v, &of);
        }
        qn_kafka_offset_fetch_resp_t ofr = { 0, 1, frt, (int16_t) (v >= 2 ? 15 : 0) };
        RT (offset_fetch_resp, v, &ofr);
    }
}

static void
test_refusals (void **state)
{
    (void) state;
    qn_karena_t a;
    qn_karena_init (&a);
    //  A huge protocol count with no bytes behind it.
    qn_buf_t b = QN_BUF_INIT;
    s_hex (&b, "0001 67 00002710 00002710 0000 ffff 0001 63 7fffffff");
    qn_kafka_join_group_req_t jr;
    assert_int_equal (qn_kafka_join_group_req_decode (5, b.data, b.len, &a, &jr), -1);
    qn_buf_free (&b);
    //  A null group id.
    s_hex (&b, "ffff 00000001 0001 6d");
    qn_kafka_heartbeat_req_t hr;
    assert_int_equal (qn_kafka_heartbeat_req_decode (0, b.data, b.len, &a, &hr), -1);
    qn_buf_free (&b);
    //  A negative partition count in OffsetCommit.
    s_hex (&b, "0001 67 ffffffff 0000 00000001 0001 74 fffffffe");
    qn_kafka_offset_commit_req_t oc;
    assert_int_equal (qn_kafka_offset_commit_req_decode (5, b.data, b.len, &a, &oc), -1);
    qn_buf_free (&b);
    qn_karena_free (&a);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_join_group_v5_golden),
        cmocka_unit_test (test_offset_fetch_golden),
        cmocka_unit_test (test_join_sync_round_trips),
        cmocka_unit_test (test_heartbeat_leave_round_trips),
        cmocka_unit_test (test_offset_commit_fetch_round_trips),
        cmocka_unit_test (test_refusals),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
