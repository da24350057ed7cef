/*  test/unit/test_wire_kafka.c - Kafka wire codecs (spec kafka.md §2-5, §12.1)
    Primitives (varint / zig-zag vectors, strings, arrays, tags), CRC-32C,
    murmur2 vectors, framing, request headers v1/v2 with the kcat
    ApiVersions golden bytes, the ApiVersions answers (v3 without a header
    tag byte, a too-new version as a v0 body with error 35), round trips of
    every request and response of ApiVersions, Metadata, Produce, Fetch and
    ListOffsets for every advertised version (every strict prefix refused),
    frames encoded by kafkajs 2.2.4 itself (decode, re-encode byte for
    byte, their gzip RecordBatch), the RecordBatch §5.3 golden vector (every
    corrupted covered byte and every truncation refused), compression round
    trips for gzip / snappy (xerial and raw) / lz4 / zstd, refusals
    (magic, control batch, codec, size, decompression bomb).
    Inputs sit in exact-size heap blocks so ASan catches over-reads.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "wire/kafka_prim.h"
#include "wire/kafka_proto.h"
#include "wire/kafka_records.h"
#include "wire/spool_codec.h"

#include "test/fixtures/kafka/kafkajs_frames.h"

static uint8_t *
s_exact (const void *data, size_t len)
{
    uint8_t *copy = qn_malloc (len ? len : 1);
    memcpy (copy, data, len);
    return copy;
}

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

// ---------------------------------------------------------------- primitives

static void
test_varints (void **state)
{
    (void) state;
    static const struct { int32_t v; const char *hex; } vi [] = {
        { 0, "00" }, { -1, "01" }, { 1, "02" }, { 63, "7e" }, { -64, "7f" },
        { 64, "8001" }, { 300, "d804" }, { INT32_MIN, "ffffffff0f" },
        { INT32_MAX, "feffffff0f" },
    };
    for (size_t i = 0; i < sizeof vi / sizeof vi [0]; i++) {
        qn_buf_t b = QN_BUF_INIT, want = QN_BUF_INIT;
        qn_kw_varint (&b, vi [i].v);
        s_hex (&want, vi [i].hex);
        assert_int_equal (b.len, want.len);
        assert_memory_equal (b.data, want.data, b.len);
        assert_int_equal (qn_kafka_varint_size (vi [i].v), b.len);
        qn_kr_t r;
        qn_kr_init (&r, b.data, b.len);
        assert_int_equal (qn_kr_varint (&r), vi [i].v);
        assert_false (r.err);
        assert_int_equal (qn_kr_left (&r), 0);
        //  Every strict prefix fails.
        for (size_t cut = 0; cut < b.len; cut++) {
            qn_kr_init (&r, b.data, cut);
            (void) qn_kr_varint (&r);
            assert_true (r.err);
        }
        qn_buf_free (&b);
        qn_buf_free (&want);
    }
    static const struct { int64_t v; const char *hex; } vl [] = {
        { 0, "00" }, { -1, "01" }, { 300, "d804" },
        { INT64_MAX, "feffffffffffffffff01" }, { INT64_MIN, "ffffffffffffffffff01" },
    };
    for (size_t i = 0; i < sizeof vl / sizeof vl [0]; i++) {
        qn_buf_t b = QN_BUF_INIT, want = QN_BUF_INIT;
        qn_kw_varlong (&b, vl [i].v);
        s_hex (&want, vl [i].hex);
        assert_int_equal (b.len, want.len);
        assert_memory_equal (b.data, want.data, b.len);
        assert_int_equal (qn_kafka_varlong_size (vl [i].v), b.len);
        qn_kr_t r;
        qn_kr_init (&r, b.data, b.len);
        assert_true (qn_kr_varlong (&r) == vl [i].v);
        assert_false (r.err);
        qn_buf_free (&b);
        qn_buf_free (&want);
    }
    //  A varint over 32 bits and an 11-byte varlong are refused.
    qn_kr_t r;
    qn_kr_init (&r, "\xff\xff\xff\xff\x1f", 5);
    (void) qn_kr_varint (&r);
    assert_true (r.err);
    qn_kr_init (&r, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11);
    (void) qn_kr_varlong (&r);
    assert_true (r.err);
}

static void
test_strings_arrays_tags (void **state)
{
    (void) state;
    qn_buf_t b = QN_BUF_INIT;
    qn_kw_string (&b, QN_KSTR ("abc"));
    qn_kw_string (&b, QN_KSTR_NULL);
    qn_kw_bytes (&b, QN_KSTR ("xy"));
    qn_kw_bytes (&b, QN_KSTR_NULL);
    qn_kw_compact_string (&b, QN_KSTR ("librdkafka"));
    qn_kw_compact_string (&b, QN_KSTR_NULL);
    qn_kw_uvarint (&b, 2);          //  Two tagged fields
    qn_kw_uvarint (&b, 0);
    qn_kw_uvarint (&b, 3);
    qn_buf_append (&b, "abc", 3);
    qn_kw_uvarint (&b, 9);
    qn_kw_uvarint (&b, 0);
    qn_kw_i32 (&b, 3);              //  Array count
    qn_kr_t r;
    qn_kr_init (&r, b.data, b.len);
    assert_true (qn_kstr_eq (qn_kr_string (&r, false), QN_KSTR ("abc")));
    assert_int_equal (qn_kr_string (&r, true).len, -1);
    assert_true (qn_kstr_eq (qn_kr_bytes (&r, false), QN_KSTR ("xy")));
    assert_int_equal (qn_kr_bytes (&r, true).len, -1);
    assert_true (qn_kstr_eq (qn_kr_compact_string (&r, false), QN_KSTR ("librdkafka")));
    assert_int_equal (qn_kr_compact_string (&r, true).len, -1);
    qn_kr_tags (&r);
    assert_false (r.err);
    //  Count 3 with no bytes after it: more elements than bytes.
    assert_int_equal (qn_kr_array (&r, false, 1), 0);
    assert_true (r.err);
    //  A null where none is allowed.
    qn_kr_init (&r, "\xff\xff", 2);
    (void) qn_kr_string (&r, false);
    assert_true (r.err);
    //  After an error, reads return zero and stay failed.
    assert_int_equal (qn_kr_i32 (&r), 0);
    assert_true (r.err);
    qn_buf_free (&b);
}

static void
test_crc32c_and_murmur2 (void **state)
{
    (void) state;
    assert_int_equal (qn_crc32c (0, "123456789", 9), 0xE3069283u);
    static const struct { const char *key; uint32_t h; int p3, p8; } mv [] = {
        { "key0", 0x1afa3622u, 1, 2 }, { "key1", 0x01b38bc4u, 2, 4 },
        { "key4", 0xc04208c9u, 0, 1 }, { "order-42", 0x1ddefd00u, 0, 0 },
        { "", 0x106e08d9u, 0, 1 },
    };
    for (size_t i = 0; i < sizeof mv / sizeof mv [0]; i++) {
        size_t n = strlen (mv [i].key);
        assert_int_equal (qn_kafka_murmur2 (mv [i].key, n), mv [i].h);
        assert_int_equal (qn_kafka_partition_for (mv [i].key, n, 3), mv [i].p3);
        assert_int_equal (qn_kafka_partition_for (mv [i].key, n, 8), mv [i].p8);
    }
    const int want [9] = { 1, 2, 2, 1, 0, 1, 0, 0, 1 };
    for (int i = 0; i < 9; i++) {
        char key [16];
        snprintf (key, sizeof key, "key%d", i);
        assert_int_equal (qn_kafka_partition_for (key, strlen (key), 3), want [i]);
    }
}

// ---------------------------------------------------------------- framing, headers

static void
test_frame_and_headers (void **state)
{
    (void) state;
    //  kcat 1.7.1's first bytes (§4.1).
    qn_buf_t g = QN_BUF_INIT;
    s_hex (&g, "00000024 0012 0003 00000001 0007 72646b61666b61 00 0b 6c696272646b61666b61 06 322e302e32 00");
    assert_int_equal (g.len, 40);
    uint8_t *buf = s_exact (g.data, g.len);
    size_t payload = 0;
    for (size_t cut = 0; cut < g.len; cut++)
        assert_int_equal (qn_kafka_frame (buf, cut, 1024, &payload), QN_KAFKA_WIRE_INCOMPLETE);
    assert_int_equal (qn_kafka_frame (buf, g.len, 1024, &payload), 40);
    assert_int_equal (payload, 36);
    assert_int_equal (qn_kafka_frame (buf, g.len, 35, &payload), QN_KAFKA_WIRE_MALFORMED);
    qn_kafka_req_header_t h;
    int hl = qn_kafka_req_header_decode (buf + 4, 36, &h);
    assert_int_equal (hl, 2 + 2 + 4 + 2 + 7 + 1);
    assert_int_equal (h.api_key, 18);
    assert_int_equal (h.api_version, 3);
    assert_int_equal (h.correlation_id, 1);
    assert_true (qn_kstr_eq (h.client_id, QN_KSTR ("rdkafka")));
    qn_kafka_apiversions_req_t av;
    assert_int_equal (qn_kafka_apiversions_req_decode (3, buf + 4 + hl, 36 - (size_t) hl, &av), 0);
    assert_true (qn_kstr_eq (av.software_name, QN_KSTR ("librdkafka")));
    assert_true (qn_kstr_eq (av.software_version, QN_KSTR ("2.0.2")));
    //  Re-encoding gives the same bytes.
    qn_buf_t e = QN_BUF_INIT;
    size_t at = qn_kafka_frame_begin (&e);
    qn_kafka_req_header_encode (&e, &h);
    qn_kafka_apiversions_req_encode (&e, 3, &av);
    qn_kafka_frame_end (&e, at);
    assert_int_equal (e.len, g.len);
    assert_memory_equal (e.data, g.data, g.len);
    //  Sizes below 8 are refused; a header v1 has no tag section.
    assert_int_equal (qn_kafka_frame ("\0\0\0\7xxxxxxx", 11, 1024, &payload), QN_KAFKA_WIRE_MALFORMED);
    assert_int_equal (qn_kafka_frame ("\xff\xff\xff\xff", 4, 1024, &payload), QN_KAFKA_WIRE_MALFORMED);
    assert_false (qn_kafka_header_is_v2 (3, 6));
    assert_false (qn_kafka_header_is_v2 (18, 2));
    assert_true (qn_kafka_header_is_v2 (18, 3));
    //  A truncated header is refused.
    for (size_t cut = 0; cut < (size_t) hl; cut++)
        assert_int_equal (qn_kafka_req_header_decode (buf + 4, cut, &h), -1);
    free (buf);
    qn_buf_free (&g);
    qn_buf_free (&e);
}

static void
test_api_table (void **state)
{
    (void) state;
    static const int16_t want [QN_KAFKA_API_COUNT][3] = {
        { 0, 3, 7 }, { 1, 4, 11 }, { 2, 1, 3 }, { 3, 4, 6 }, { 8, 2, 5 }, { 9, 1, 4 },
        { 10, 0, 2 }, { 11, 2, 5 }, { 12, 0, 3 }, { 13, 0, 1 }, { 14, 0, 3 },
        { 18, 0, 3 }, { 19, 2, 4 }, { 20, 0, 1 }, { 22, 0, 1 },
    };
    for (int i = 0; i < QN_KAFKA_API_COUNT; i++) {
        assert_int_equal (qn_kafka_apis [i].key, want [i][0]);
        assert_int_equal (qn_kafka_apis [i].min_version, want [i][1]);
        assert_int_equal (qn_kafka_apis [i].max_version, want [i][2]);
        assert_true (qn_kafka_version_ok (want [i][0], want [i][1]));
        assert_true (qn_kafka_version_ok (want [i][0], want [i][2]));
        assert_false (qn_kafka_version_ok (want [i][0], (int16_t) (want [i][2] + 1)));
    }
    assert_null (qn_kafka_api_find (15));   //  DescribeGroups
    assert_false (qn_kafka_version_ok (15, 0));
    assert_false (qn_kafka_version_ok (0, 2));
}

static void
test_apiversions_responses (void **state)
{
    (void) state;
    for (int16_t v = 0; v <= 4; v++) {
        qn_buf_t b = QN_BUF_INIT;
        qn_kafka_apiversions_resp_encode (&b, v);
        //  v3: error 0000 then the COMPACT_ARRAY count 16 (no header tag
        //  byte: the response header is v0 even at v3).
        if (v == 3) {
            assert_memory_equal (b.data, "\x00\x00\x10\x00\x00\x00\x03\x00\x07\x00", 10);
            assert_int_equal (b.len, 2 + 1 + 15 * 7 + 4 + 1);
        }
        if (v == 4)
            assert_int_equal (b.len, 2 + 4 + 15 * 6);  //  v0 body, no throttle
        int16_t dv = v == 4 ? 0 : v;
        qn_karena_t a;
        qn_karena_init (&a);
        qn_kafka_apiversions_resp_t r;
        uint8_t *buf = s_exact (b.data, b.len);
        assert_int_equal (qn_kafka_apiversions_resp_decode (dv, buf, b.len, &a, &r), 0);
        assert_int_equal (r.error_code, v == 4 ? 35 : 0);
        assert_int_equal (r.api_count, 15);
        assert_int_equal (r.apis [1].key, 1);
        assert_int_equal (r.apis [1].min_version, 4);
        assert_int_equal (r.apis [1].max_version, 11);
        assert_int_equal (r.apis [11].key, 18);
        for (size_t cut = 0; cut < b.len; cut++)
            assert_int_equal (qn_kafka_apiversions_resp_decode (dv, buf, cut, &a, &r), -1);
        free (buf);
        qn_karena_free (&a);
        qn_buf_free (&b);
    }
}

// ---------------------------------------------------------------- round trips

typedef void (*s_encode_fn) (qn_buf_t *, int16_t, const void *);
typedef int (*s_decode_fn) (int16_t, const void *, size_t, qn_karena_t *, void *);

//  Encodes `in`, decodes into `out` (a struct of `size` bytes), re-encodes
//  and compares; every strict prefix and one trailing byte are refused.
static void
s_round_trip (int16_t v, s_encode_fn enc, s_decode_fn dec, const void *in, void *out,
              qn_karena_t *a)
{
    qn_buf_t b = QN_BUF_INIT, again = QN_BUF_INIT;
    enc (&b, v, in);
    //  Each prefix in its own exact-size block (ASan sees an over-read).
    for (size_t cut = 0; cut < b.len; cut++) {
        uint8_t *part = s_exact (b.data, cut);
        assert_int_equal (dec (v, part, cut, a, out), -1);
        free (part);
    }
    qn_buf_putc (&b, 0);
    uint8_t *longer = s_exact (b.data, b.len);
    assert_int_equal (dec (v, longer, b.len, a, out), -1);
    free (longer);
    b.len--;
    //  The whole encoding in the arena: `out` points into it afterwards.
    uint8_t *buf = qn_karena_alloc (a, b.len);
    memcpy (buf, b.data, b.len);
    assert_int_equal (dec (v, buf, b.len, a, out), 0);
    enc (&again, v, out);
    assert_int_equal (again.len, b.len);
    assert_memory_equal (again.data, b.data, b.len);
    qn_buf_free (&b);
    qn_buf_free (&again);
}

#define S_RT(v, name, in, out, a) \
    s_round_trip ((v), (s_encode_fn) qn_kafka_##name##_encode, \
                  (s_decode_fn) qn_kafka_##name##_decode, (in), (out), (a))

static void
test_metadata_round_trips (void **state)
{
    (void) state;
    qn_kstr_t names [2] = { QN_KSTR ("t1"), QN_KSTR ("kt") };
    int32_t node [1] = { 1 };
    qn_kafka_md_partition_t parts [2] = {
        { 0, 0, 1, 1, node, 1, node, 0, NULL },
        { 0, 1, 1, 1, node, 1, node, 0, NULL },
    };
    qn_kafka_md_topic_t topics [2] = {
        { 0, QN_KSTR ("t1"), false, 2, parts },
        { 3, QN_KSTR ("nope"), false, 0, NULL },
    };
    qn_kafka_broker_t broker = { 1, QN_KSTR ("127.0.0.1"), 9092, QN_KSTR_NULL };
    qn_kafka_metadata_resp_t resp = { 0, 1, &broker, QN_KSTR ("queen"), 1, 2, topics };
    for (int16_t v = 4; v <= 6; v++) {
        qn_karena_t a;
        qn_karena_init (&a);
        qn_kafka_metadata_req_t req = { 2, names, true }, rq;
        S_RT (v, metadata_req, &req, &rq, &a);
        assert_int_equal (rq.topic_count, 2);
        assert_true (qn_kstr_eq (rq.topics [1], QN_KSTR ("kt")));
        assert_true (rq.allow_auto_topic_creation);
        qn_kafka_metadata_req_t all = { -1, NULL, false };
        S_RT (v, metadata_req, &all, &rq, &a);
        assert_int_equal (rq.topic_count, -1);
        qn_kafka_metadata_resp_t rs;
        S_RT (v, metadata_resp, &resp, &rs, &a);
        assert_int_equal (rs.brokers [0].port, 9092);
        assert_int_equal (rs.brokers [0].rack.len, -1);
        assert_int_equal (rs.topics [0].partitions [1].partition_index, 1);
        assert_int_equal (rs.topics [1].error_code, 3);
        qn_karena_free (&a);
    }
    //  v4 vs v5: offline_replicas appears (4 bytes per partition).
    qn_buf_t b4 = QN_BUF_INIT, b5 = QN_BUF_INIT;
    qn_kafka_metadata_resp_encode (&b4, 4, &resp);
    qn_kafka_metadata_resp_encode (&b5, 5, &resp);
    assert_int_equal (b5.len, b4.len + 8);
    qn_buf_free (&b4);
    qn_buf_free (&b5);
}

static void
test_produce_round_trips (void **state)
{
    (void) state;
    qn_kafka_produce_part_t pp [2] = { { 0, QN_KSTR ("batchbytes") }, { 1, QN_KSTR_NULL } };
    qn_kafka_produce_topic_t pt = { QN_KSTR ("t1"), 2, pp };
    qn_kafka_produce_req_t req = { QN_KSTR_NULL, -1, 30000, 1, &pt };
    qn_kafka_produce_part_resp_t rp [2] = { { 0, 0, 42, -1, 0 }, { 1, 3, -1, -1, -1 } };
    qn_kafka_produce_topic_resp_t rt = { QN_KSTR ("t1"), 2, rp };
    qn_kafka_produce_resp_t resp = { 1, &rt, 0 };
    for (int16_t v = 3; v <= 7; v++) {
        qn_karena_t a;
        qn_karena_init (&a);
        qn_kafka_produce_req_t rq;
        S_RT (v, produce_req, &req, &rq, &a);
        assert_int_equal (rq.acks, -1);
        assert_int_equal (rq.transactional_id.len, -1);
        assert_true (qn_kstr_eq (rq.topics [0].partitions [0].records, QN_KSTR ("batchbytes")));
        assert_int_equal (rq.topics [0].partitions [1].records.len, -1);
        qn_kafka_produce_resp_t rs;
        S_RT (v, produce_resp, &resp, &rs, &a);
        assert_int_equal (rs.topics [0].partitions [0].base_offset, 42);
        assert_int_equal (rs.topics [0].partitions [1].error_code, 3);
        qn_karena_free (&a);
    }
}

static void
test_fetch_round_trips (void **state)
{
    (void) state;
    qn_kafka_fetch_part_t fp [2] = { { 0, 5, 3, 0, 1048576 }, { 2, 5, 0, 0, 65536 } };
    qn_kafka_fetch_topic_t ft = { QN_KSTR ("t1"), 2, fp };
    int32_t fparts [1] = { 7 };
    qn_kafka_forgotten_t fg = { QN_KSTR ("old"), 1, fparts };
    qn_kafka_fetch_req_t req = { -1, 500, 1, 52428800, 1, 0, -1, 1, &ft, 1, &fg, QN_KSTR ("r1") };
    qn_kafka_aborted_t ab = { 9, 10 };
    qn_kafka_fetch_part_resp_t rp [2] = {
        { 0, 0, 10, 10, 0, -1, NULL, -1, QN_KSTR ("records") },
        { 2, 1, 4, 4, 0, 1, &ab, -1, QN_KSTR ("") },
    };
    qn_kafka_fetch_topic_resp_t rt = { QN_KSTR ("t1"), 2, rp };
    qn_kafka_fetch_resp_t resp = { 0, 0, 0, 1, &rt };
    for (int16_t v = 4; v <= 11; v++) {
        qn_karena_t a;
        qn_karena_init (&a);
        qn_kafka_fetch_req_t rq;
        S_RT (v, fetch_req, &req, &rq, &a);
        assert_int_equal (rq.max_wait_ms, 500);
        assert_int_equal (rq.topics [0].partitions [0].fetch_offset, 3);
        assert_int_equal (rq.topics [0].partitions [1].partition_max_bytes, 65536);
        assert_int_equal (rq.forgotten_count, v >= 7 ? 1 : 0);
        qn_kafka_fetch_resp_t rs;
        S_RT (v, fetch_resp, &resp, &rs, &a);
        assert_int_equal (rs.topics [0].partitions [0].aborted_count, -1);
        assert_int_equal (rs.topics [0].partitions [0].high_watermark, 10);
        assert_true (qn_kstr_eq (rs.topics [0].partitions [0].records, QN_KSTR ("records")));
        assert_int_equal (rs.topics [0].partitions [1].records.len, 0);
        assert_int_equal (rs.topics [0].partitions [1].aborted [0].first_offset, 10);
        qn_karena_free (&a);
    }
}

static void
test_list_offsets_round_trips (void **state)
{
    (void) state;
    qn_kafka_lo_part_t lp [3] = { { 0, -1 }, { 1, -2 }, { 2, 1700000000000 } };
    qn_kafka_lo_topic_t lt = { QN_KSTR ("kt"), 3, lp };
    qn_kafka_list_offsets_req_t req = { -1, 1, 1, &lt };
    qn_kafka_lo_part_resp_t rp [2] = { { 0, 0, -1, 3 }, { 1, 3, -1, -1 } };
    qn_kafka_lo_topic_resp_t rt = { QN_KSTR ("kt"), 2, rp };
    qn_kafka_list_offsets_resp_t resp = { 0, 1, &rt };
    for (int16_t v = 1; v <= 3; v++) {
        qn_karena_t a;
        qn_karena_init (&a);
        qn_kafka_list_offsets_req_t rq;
        S_RT (v, list_offsets_req, &req, &rq, &a);
        assert_int_equal (rq.topics [0].partitions [2].timestamp, 1700000000000);
        assert_int_equal (rq.isolation_level, v >= 2 ? 1 : 0);
        qn_kafka_list_offsets_resp_t rs;
        S_RT (v, list_offsets_resp, &resp, &rs, &a);
        assert_int_equal (rs.topics [0].partitions [0].offset, 3);
        qn_karena_free (&a);
    }
}

static void
test_topic_admin_round_trips (void **state)
{
    (void) state;
    int32_t brokers [1] = { 1 };
    qn_kafka_ct_assign_t as = { 0, 1, brokers };
    qn_kafka_ct_config_t cf [2] = { { QN_KSTR ("retention.ms"), QN_KSTR ("1000") },
                                    { QN_KSTR ("cleanup.policy"), QN_KSTR_NULL } };
    qn_kafka_ct_topic_t ct [2] = { { QN_KSTR ("kt"), 3, 1, 0, NULL, 2, cf },
                                   { QN_KSTR ("k2"), -1, -1, 1, &as, 0, NULL } };
    qn_kafka_create_topics_req_t creq = { 2, ct, 30000, true };
    qn_kafka_topic_result_t res [2] = { { QN_KSTR ("kt"), 0, QN_KSTR_NULL },
                                        { QN_KSTR ("k2"), 36, QN_KSTR ("exists") } };
    qn_kafka_topics_resp_t cresp = { 0, 2, res };
    qn_kstr_t names [2] = { QN_KSTR ("kt"), QN_KSTR ("k2") };
    qn_kafka_delete_topics_req_t dreq = { 2, names, 5000 };
    qn_kafka_topic_result_t dres [2] = { { QN_KSTR ("kt"), 0, QN_KSTR_NULL },
                                         { QN_KSTR ("k2"), 3, QN_KSTR_NULL } };
    qn_kafka_topics_resp_t dresp = { 0, 2, dres };
    for (int16_t v = 2; v <= 4; v++) {
        qn_karena_t a;
        qn_karena_init (&a);
        qn_kafka_create_topics_req_t rq;
        S_RT (v, create_topics_req, &creq, &rq, &a);
        assert_int_equal (rq.topics [0].num_partitions, 3);
        assert_true (qn_kstr_eq (rq.topics [0].configs [0].value, QN_KSTR ("1000")));
        assert_int_equal (rq.topics [0].configs [1].value.len, -1);
        assert_int_equal (rq.topics [1].assignments [0].broker_ids [0], 1);
        assert_true (rq.validate_only);
        qn_kafka_topics_resp_t rs;
        S_RT (v, create_topics_resp, &cresp, &rs, &a);
        assert_int_equal (rs.topics [1].error_code, 36);
        assert_true (qn_kstr_eq (rs.topics [1].error_message, QN_KSTR ("exists")));
        qn_karena_free (&a);
    }
    for (int16_t v = 0; v <= 1; v++) {
        qn_karena_t a;
        qn_karena_init (&a);
        qn_kafka_delete_topics_req_t rq;
        S_RT (v, delete_topics_req, &dreq, &rq, &a);
        assert_int_equal (rq.topic_count, 2);
        assert_int_equal (rq.timeout_ms, 5000);
        qn_kafka_topics_resp_t rs;
        S_RT (v, delete_topics_resp, &dresp, &rs, &a);
        assert_int_equal (rs.topics [1].error_code, 3);
        qn_karena_free (&a);
    }
}

static void
test_coordinator_round_trips (void **state)
{
    (void) state;
    qn_kafka_find_coordinator_req_t fq = { QN_KSTR ("g1"), 1 };
    qn_kafka_find_coordinator_resp_t fs = { 0, 53, QN_KSTR ("no transactions"), -1, QN_KSTR (""), -1 };
    for (int16_t v = 0; v <= 2; v++) {
        qn_karena_t a;
        qn_karena_init (&a);
        qn_kafka_find_coordinator_req_t rq;
        S_RT (v, find_coordinator_req, &fq, &rq, &a);
        assert_true (qn_kstr_eq (rq.key, QN_KSTR ("g1")));
        assert_int_equal (rq.key_type, v >= 1 ? 1 : 0);
        qn_kafka_find_coordinator_resp_t rs;
        S_RT (v, find_coordinator_resp, &fs, &rs, &a);
        assert_int_equal (rs.error_code, 53);
        assert_int_equal (rs.node_id, -1);
        qn_karena_free (&a);
    }
    qn_kafka_init_producer_id_req_t iq = { QN_KSTR ("tx"), 60000 };
    qn_kafka_init_producer_id_resp_t is = { 0, 53, -1, -1 };
    for (int16_t v = 0; v <= 1; v++) {
        qn_karena_t a;
        qn_karena_init (&a);
        qn_kafka_init_producer_id_req_t rq;
        S_RT (v, init_producer_id_req, &iq, &rq, &a);
        assert_true (qn_kstr_eq (rq.transactional_id, QN_KSTR ("tx")));
        qn_kafka_init_producer_id_resp_t rs;
        S_RT (v, init_producer_id_resp, &is, &rs, &a);
        assert_true (rs.error_code == 53 && rs.producer_id == -1 && rs.producer_epoch == -1);
        qn_karena_free (&a);
    }
}

// ---------------------------------------------------------------- kafkajs frames

//  Decodes a kafkajs frame's header; returns the body's offset.
static size_t
s_kjs_header (const uint8_t *frame, size_t len, int16_t key, int16_t v)
{
    size_t payload;
    assert_int_equal (qn_kafka_frame (frame, len, 1 << 20, &payload), (int64_t) len);
    qn_kafka_req_header_t h;
    int hl = qn_kafka_req_header_decode (frame + 4, payload, &h);
    assert_true (hl > 0);
    assert_int_equal (h.api_key, key);
    assert_int_equal (h.api_version, v);
    assert_int_equal (h.correlation_id, 7);
    assert_true (qn_kstr_eq (h.client_id, QN_KSTR ("kjs")));
    return 4 + (size_t) hl;
}

//  Decodes the body, re-encodes and expects the same bytes.
static void
s_kjs_body (const uint8_t *frame, size_t len, size_t at, int16_t v,
            s_encode_fn enc, s_decode_fn dec, void *out, qn_karena_t *a)
{
    uint8_t *body = s_exact (frame + at, len - at);
    assert_int_equal (dec (v, body, len - at, a, out), 0);
    free (body);
    //  Again from the static frame, which `out` may point into afterwards.
    assert_int_equal (dec (v, frame + at, len - at, a, out), 0);
    qn_buf_t b = QN_BUF_INIT;
    enc (&b, v, out);
    assert_int_equal (b.len, len - at);
    assert_memory_equal (b.data, frame + at, b.len);
    qn_buf_free (&b);
}

#define S_KJS(frame, key, v, name, out, a) \
    s_kjs_body ((frame), sizeof (frame), s_kjs_header ((frame), sizeof (frame), (key), (v)), (v), \
                (s_encode_fn) qn_kafka_##name##_encode, (s_decode_fn) qn_kafka_##name##_decode, (out), (a))

static void
s_check_kjs_records (const qn_kafka_batch_t *b)
{
    assert_int_equal (b->records_count, 3);
    assert_int_equal (b->first_timestamp, 1700000000000);
    assert_int_equal (b->max_timestamp, 1700000000002);
    assert_true (qn_kstr_eq (b->records [0].key, QN_KSTR ("key0")));
    assert_true (qn_kstr_eq (b->records [0].value, QN_KSTR ("v0")));
    assert_int_equal (b->records [0].header_count, 1);
    assert_true (qn_kstr_eq (b->records [0].headers [0].key, QN_KSTR ("h")));
    assert_true (qn_kstr_eq (b->records [0].headers [0].value, QN_KSTR ("x0")));
    assert_int_equal (b->records [1].timestamp_delta, 1);
    assert_int_equal (b->records [1].offset_delta, 1);
    assert_int_equal (b->records [2].key.len, -1);
    assert_true (qn_kstr_eq (b->records [2].value, QN_KSTR ("v2")));
    assert_int_equal (b->records [2].header_count, 0);
}

static void
test_kafkajs_frames (void **state)
{
    (void) state;
    qn_karena_t a;
    qn_karena_init (&a);
    qn_kafka_metadata_req_t md;
    S_KJS (s_kjs_metadata_v4, 3, 4, metadata_req, &md, &a);
    assert_int_equal (md.topic_count, 2);
    assert_true (md.allow_auto_topic_creation);
    S_KJS (s_kjs_metadata_v6, 3, 6, metadata_req, &md, &a);
    assert_false (md.allow_auto_topic_creation);

    qn_kafka_produce_req_t pr;
    S_KJS (s_kjs_produce_v3, 0, 3, produce_req, &pr, &a);
    assert_int_equal (pr.acks, -1);
    assert_int_equal (pr.timeout_ms, 30000);
    qn_kstr_t rec = pr.topics [0].partitions [0].records;
    qn_kafka_batches_t bs;
    assert_int_equal (qn_kafka_batches_decode (rec.ptr, (size_t) rec.len, 1048588, true, &a, &bs), 0);
    assert_int_equal (bs.count, 1);
    assert_int_equal (bs.batches [0].attributes, 0);
    assert_int_equal (bs.batches [0].producer_id, -1);
    s_check_kjs_records (&bs.batches [0]);

    S_KJS (s_kjs_produce_v7_gzip, 0, 7, produce_req, &pr, &a);
    assert_int_equal (pr.acks, 1);
    assert_int_equal (pr.topics [0].partitions [0].index, 2);
    rec = pr.topics [0].partitions [0].records;
    assert_int_equal (qn_kafka_batches_decode (rec.ptr, (size_t) rec.len, 1048588, true, &a, &bs), 0);
    assert_int_equal (bs.batches [0].attributes & 7, QN_KAFKA_CODEC_GZIP);
    assert_int_equal (bs.batches [0].producer_id, 7);
    assert_int_equal (bs.batches [0].producer_epoch, 0);
    assert_int_equal (bs.batches [0].base_sequence, 5);
    s_check_kjs_records (&bs.batches [0]);

    qn_kafka_fetch_req_t fr;
    S_KJS (s_kjs_fetch_v4, 1, 4, fetch_req, &fr, &a);
    assert_int_equal (fr.max_wait_ms, 5000);
    assert_int_equal (fr.isolation_level, 1);
    assert_int_equal (fr.topics [0].partitions [0].fetch_offset, 3);
    S_KJS (s_kjs_fetch_v11, 1, 11, fetch_req, &fr, &a);
    assert_int_equal (fr.session_epoch, -1);
    assert_int_equal (fr.rack_id.len, 0);
    assert_int_equal (fr.topics [0].partitions [0].current_leader_epoch, -1);

    qn_kafka_list_offsets_req_t lo;
    S_KJS (s_kjs_list_offsets_v3, 2, 3, list_offsets_req, &lo, &a);
    assert_int_equal (lo.topics [0].partitions [0].timestamp, -2);
    assert_int_equal (lo.topics [0].partitions [1].timestamp, 1700000000000);
    qn_karena_free (&a);
}

// ---------------------------------------------------------------- RecordBatch

static const char *s_golden =
    "0000000000000000 00000043 00000000 02 12dfbf6f 0000 00000000"
    "0000018bcfe56800 0000018bcfe56800 ffffffffffffffff ffff ffffffff 00000001"
    "22 00 00 00 04 6b31 0a 68656c6c6f 02 02 68 02 76";

static const qn_kafka_batch_spec_t s_plain = { 0, 1700000000000, 0, -1, -1, -1 };

static void
test_record_batch_golden (void **state)
{
    (void) state;
    qn_buf_t want = QN_BUF_INIT, b = QN_BUF_INIT;
    s_hex (&want, s_golden);
    assert_int_equal (want.len, 79);
    qn_kafka_header_kv_t h = { QN_KSTR ("h"), QN_KSTR ("v") };
    qn_kafka_record_t rec = { 0, 0, 0, QN_KSTR ("k1"), QN_KSTR ("hello"), 1, &h };
    assert_int_equal (qn_kafka_record_size (&rec), 18);
    assert_int_equal (qn_kafka_batch_encode (&b, &s_plain, &rec, 1), 0);
    assert_int_equal (b.len, 79);
    assert_memory_equal (b.data, want.data, 79);

    qn_karena_t a;
    qn_karena_init (&a);
    uint8_t *buf = s_exact (want.data, want.len);
    qn_kafka_batches_t bs;
    assert_int_equal (qn_kafka_batches_decode (buf, 79, 1048588, true, &a, &bs), 0);
    assert_int_equal (bs.count, 1);
    const qn_kafka_batch_t *bt = &bs.batches [0];
    assert_int_equal (bt->crc, 0x12dfbf6fu);
    assert_int_equal (bt->first_timestamp, 1700000000000);
    assert_int_equal (bt->records_count, 1);
    assert_true (qn_kstr_eq (bt->records [0].key, QN_KSTR ("k1")));
    assert_true (qn_kstr_eq (bt->records [0].value, QN_KSTR ("hello")));
    assert_true (qn_kstr_eq (bt->records [0].headers [0].value, QN_KSTR ("v")));
    //  Every byte the CRC covers, and the CRC itself, fails when flipped.
    for (size_t i = 17; i < 79; i++) {
        buf [i] ^= 0x01;
        assert_int_equal (qn_kafka_batches_decode (buf, 79, 1048588, true, &a, &bs), 2);
        buf [i] ^= 0x01;
    }
    //  Magic 1 and any truncation: corrupt.
    buf [16] = 1;
    assert_int_equal (qn_kafka_batches_decode (buf, 79, 1048588, true, &a, &bs), 2);
    buf [16] = 2;
    for (size_t cut = 1; cut < 79; cut++) {
        uint8_t *part = s_exact (buf, cut);
        assert_int_equal (qn_kafka_batches_decode (part, cut, 1048588, true, &a, &bs), 2);
        free (part);
    }
    //  Too large for the limit.
    assert_int_equal (qn_kafka_batches_decode (buf, 79, 78, true, &a, &bs), 10);
    //  An empty RECORDS field holds no batch.
    assert_int_equal (qn_kafka_batches_decode (buf, 0, 1048588, true, &a, &bs), 0);
    assert_int_equal (bs.count, 0);
    free (buf);
    qn_karena_free (&a);
    qn_buf_free (&want);
    qn_buf_free (&b);
}

//  Three records, a null key, a null value, two headers, timestamps apart.
static void
s_sample_records (qn_kafka_record_t recs [3], qn_kafka_header_kv_t hs [2])
{
    hs [0] = (qn_kafka_header_kv_t) { QN_KSTR ("a"), QN_KSTR ("1") };
    hs [1] = (qn_kafka_header_kv_t) { QN_KSTR ("b"), QN_KSTR_NULL };
    recs [0] = (qn_kafka_record_t) { 0, 0, 0, QN_KSTR ("e1"), QN_KSTR ("hello hello hello"), 2, hs };
    recs [1] = (qn_kafka_record_t) { 0, 5, 1, QN_KSTR_NULL, QN_KSTR ("world world world"), 0, NULL };
    recs [2] = (qn_kafka_record_t) { 0, 3, 2, QN_KSTR ("e2"), QN_KSTR_NULL, 0, NULL };
}

static void
test_record_batch_codecs (void **state)
{
    (void) state;
    qn_kafka_record_t recs [3];
    qn_kafka_header_kv_t hs [2];
    s_sample_records (recs, hs);
    for (int codec = 0; codec <= 4; codec++) {
        qn_kafka_batch_spec_t spec = { 0, 1700000000000, (int16_t) codec, 7, 1, 10 };
        qn_buf_t b = QN_BUF_INIT;
        assert_int_equal (qn_kafka_batch_encode (&b, &spec, recs, 3), 0);
        //  Two batches back to back in one RECORDS field.
        qn_buf_t two = QN_BUF_INIT;
        qn_buf_append (&two, b.data, b.len);
        qn_buf_append (&two, b.data, b.len);
        qn_karena_t a;
        qn_karena_init (&a);
        uint8_t *buf = s_exact (two.data, two.len);
        qn_kafka_batches_t bs;
        assert_int_equal (qn_kafka_batches_decode (buf, two.len, 1048588, true, &a, &bs), 0);
        assert_int_equal (bs.count, 2);
        for (int k = 0; k < 2; k++) {
            const qn_kafka_batch_t *bt = &bs.batches [k];
            assert_int_equal (bt->attributes, codec);
            assert_int_equal (bt->last_offset_delta, 2);
            assert_int_equal (bt->max_timestamp, 1700000000005);
            assert_int_equal (bt->producer_id, 7);
            assert_int_equal (bt->base_sequence, 10);
            assert_true (qn_kstr_eq (bt->records [0].value, QN_KSTR ("hello hello hello")));
            assert_int_equal (bt->records [0].header_count, 2);
            assert_int_equal (bt->records [0].headers [1].value.len, -1);
            assert_int_equal (bt->records [1].key.len, -1);
            assert_int_equal (bt->records [1].timestamp_delta, 5);
            assert_int_equal (bt->records [2].value.len, -1);
        }
        //  A decompressed size over the bound is refused as too large.
        if (codec)
            assert_int_equal (qn_kafka_batches_decode (buf, b.len, 20, true, &a, &bs), 10);
        free (buf);
        qn_karena_free (&a);
        qn_buf_free (&b);
        qn_buf_free (&two);
    }
}

static void
test_decompress_edges (void **state)
{
    (void) state;
    qn_karena_t a;
    qn_karena_init (&a);
    const uint8_t *out;
    size_t out_len;
    //  Raw (unframed) snappy is accepted too.
    const char *text = "raw snappy raw snappy raw snappy";
    char comp [128];
    size_t clen = sizeof comp;
    assert_int_equal (snappy_compress (text, strlen (text), comp, &clen), SNAPPY_OK);
    assert_int_equal (qn_kafka_decompress (2, comp, clen, 1024, &a, &out, &out_len), 0);
    assert_int_equal (out_len, strlen (text));
    assert_memory_equal (out, text, out_len);
    //  A bomb: 1 MB of zeros compressed, bounded at 64 KB.
    char *zeros = calloc (1, 1 << 20);
    for (int codec = 1; codec <= 4; codec++) {
        qn_buf_t c = QN_BUF_INIT;
        assert_int_equal (qn_kafka_compress (codec, zeros, 1 << 20, &c), 0);
        assert_true (c.len < 65536);
        assert_int_equal (qn_kafka_decompress (codec, c.data, c.len, 65536, &a, &out, &out_len), 10);
        assert_int_equal (qn_kafka_decompress (codec, c.data, c.len, 1 << 20, &a, &out, &out_len), 0);
        assert_int_equal (out_len, 1 << 20);
        //  Truncated and garbage input: corrupt.
        assert_int_equal (qn_kafka_decompress (codec, c.data, c.len / 2, 1 << 20, &a, &out, &out_len), 2);
        assert_int_equal (qn_kafka_decompress (codec, "garbage!garbage!garbage!", 24, 1 << 20, &a, &out, &out_len), 2);
        qn_buf_free (&c);
    }
    free (zeros);
    assert_int_equal (qn_kafka_decompress (5, "x", 1, 10, &a, &out, &out_len), 76);
    qn_karena_free (&a);
}

static void
test_record_batch_refusals (void **state)
{
    (void) state;
    qn_kafka_record_t recs [3];
    qn_kafka_header_kv_t hs [2];
    s_sample_records (recs, hs);
    qn_karena_t a;
    qn_karena_init (&a);
    qn_kafka_batches_t bs;
    struct { int16_t attributes; int want; } cases [] = {
        { QN_KAFKA_ATTR_CONTROL, 87 }, { 5, 76 }, { 7, 76 },
        { QN_KAFKA_ATTR_TRANSACTIONAL, 0 },     //  Decodes; Produce refuses it
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        //  Encode uncompressed, then patch attributes and the CRC.
        qn_buf_t b = QN_BUF_INIT;
        assert_int_equal (qn_kafka_batch_encode (&b, &s_plain, recs, 3), 0);
        b.data [21] = (char) (cases [i].attributes >> 8);
        b.data [22] = (char) cases [i].attributes;
        qn_kw_put32_at (&b, 17, qn_crc32c (0, b.data + 21, b.len - 21));
        assert_int_equal (qn_kafka_batches_decode (b.data, b.len, 1048588, true, &a, &bs),
                          cases [i].want);
        qn_buf_free (&b);
    }
    //  Offset deltas with a gap: fine for a Fetch batch, corrupt for Produce.
    recs [2].offset_delta = 5;
    qn_buf_t b = QN_BUF_INIT;
    assert_int_equal (qn_kafka_batch_encode (&b, &s_plain, recs, 3), 0);
    assert_int_equal (qn_kafka_batches_decode (b.data, b.len, 1048588, true, &a, &bs), 2);
    assert_int_equal (qn_kafka_batches_decode (b.data, b.len, 1048588, false, &a, &bs), 0);
    assert_int_equal (bs.batches [0].last_offset_delta, 5);
    assert_int_equal (bs.batches [0].records [2].offset_delta, 5);
    //  A record count larger than the records there: corrupt.
    b.data [60] = 4;
    qn_kw_put32_at (&b, 17, qn_crc32c (0, b.data + 21, b.len - 21));
    assert_int_equal (qn_kafka_batches_decode (b.data, b.len, 1048588, false, &a, &bs), 2);
    qn_buf_free (&b);
    qn_karena_free (&a);
}

static void
test_stored_headers (void **state)
{
    (void) state;
    qn_kafka_header_kv_t hs [2] = { { QN_KSTR ("a"), QN_KSTR ("1") }, { QN_KSTR ("bb"), QN_KSTR_NULL } };
    qn_buf_t b = QN_BUF_INIT;
    qn_kafka_headers_encode (&b, hs, 2);
    assert_int_equal (b.len, 1 + 1 + 1 + 1 + 1 + 1 + 2 + 1);
    qn_karena_t a;
    qn_karena_init (&a);
    qn_kafka_header_kv_t *out;
    int32_t n;
    uint8_t *buf = s_exact (b.data, b.len);
    assert_int_equal (qn_kafka_headers_decode (buf, b.len, &a, &out, &n), 0);
    assert_int_equal (n, 2);
    assert_true (qn_kstr_eq (out [0].key, QN_KSTR ("a")) && qn_kstr_eq (out [0].value, QN_KSTR ("1")));
    assert_true (qn_kstr_eq (out [1].key, QN_KSTR ("bb")) && out [1].value.len == -1);
    for (size_t cut = 0; cut < b.len; cut++)
        assert_int_equal (qn_kafka_headers_decode (buf, cut, &a, &out, &n), -1);
    free (buf);
    qn_karena_free (&a);
    qn_buf_free (&b);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_varints),
        cmocka_unit_test (test_strings_arrays_tags),
        cmocka_unit_test (test_crc32c_and_murmur2),
        cmocka_unit_test (test_frame_and_headers),
        cmocka_unit_test (test_api_table),
        cmocka_unit_test (test_apiversions_responses),
        cmocka_unit_test (test_metadata_round_trips),
        cmocka_unit_test (test_produce_round_trips),
        cmocka_unit_test (test_fetch_round_trips),
        cmocka_unit_test (test_list_offsets_round_trips),
        cmocka_unit_test (test_topic_admin_round_trips),
        cmocka_unit_test (test_coordinator_round_trips),
        cmocka_unit_test (test_kafkajs_frames),
        cmocka_unit_test (test_record_batch_golden),
        cmocka_unit_test (test_record_batch_codecs),
        cmocka_unit_test (test_decompress_edges),
        cmocka_unit_test (test_record_batch_refusals),
        cmocka_unit_test (test_stored_headers),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
