/*  test/unit/test_wire_spool.c - record framing of the disk spool
    CRC32C vectors, record round trip and every split point, torn tails at
    every byte of a three-record segment, corrupted bytes, resync past
    damage, append-body checks, segment names and the checkpoint line.
    Inputs sit in exact-size heap blocks so ASan catches over-reads.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#include "wire/spool_codec.h"

static char *
s_exact (const void *data, size_t len)
{
    char *copy = qn_malloc (len ? len : 1);
    memcpy (copy, data, len);
    return copy;
}

static int
s_write (void *data, const char *buf, size_t len)
{
    qn_buf_append (data, buf, len);
    return 0;
}

static void
s_pack_str (msgpack_packer *pk, const char *s)
{
    msgpack_pack_str (pk, strlen (s));
    msgpack_pack_str_body (pk, s, strlen (s));
}

//  A valid append body with `n` items on queue q (payload "{\"i\":k}").
static void
s_body (qn_buf_t *out, const char *tenant, const char *queue, int n)
{
    msgpack_packer pk;
    msgpack_packer_init (&pk, out, s_write);
    msgpack_pack_array (&pk, 2);
    s_pack_str (&pk, tenant);
    msgpack_pack_array (&pk, (size_t) n);
    for (int i = 0; i < n; i++) {
        char txn [32], payload [32];
        snprintf (txn, sizeof txn, "txn-%d", i);
        snprintf (payload, sizeof payload, "{\"i\":%d}", i);
        msgpack_pack_array (&pk, 7);
        s_pack_str (&pk, queue);
        s_pack_str (&pk, "Default");
        s_pack_str (&pk, txn);
        msgpack_pack_bin (&pk, strlen (payload));
        msgpack_pack_bin_body (&pk, payload, strlen (payload));
        msgpack_pack_nil (&pk);
        msgpack_pack_nil (&pk);
        msgpack_pack_false (&pk);
    }
}

// ------------------------------------------------------------------ crc32c
static void
test_crc32c_vectors (void **state)
{
    (void) state;
    assert_int_equal (qn_crc32c (0, "123456789", 9), 0xE3069283u);
    assert_int_equal (qn_crc32c (0, "", 0), 0);
    //  RFC 3720 (iSCSI) appendix B.4.
    uint8_t buf [32];
    memset (buf, 0, sizeof buf);
    assert_int_equal (qn_crc32c (0, buf, 32), 0x8A9136AAu);
    memset (buf, 0xff, sizeof buf);
    assert_int_equal (qn_crc32c (0, buf, 32), 0x62A8AB43u);
    for (int i = 0; i < 32; i++)
        buf [i] = (uint8_t) i;
    assert_int_equal (qn_crc32c (0, buf, 32), 0x46DD794Eu);
    for (int i = 0; i < 32; i++)
        buf [i] = (uint8_t) (31 - i);
    assert_int_equal (qn_crc32c (0, buf, 32), 0x113FDB5Cu);
    //  Chaining equals one pass.
    uint32_t c = qn_crc32c (0, "1234", 4);
    assert_int_equal (qn_crc32c (c, "56789", 5), 0xE3069283u);
}

// ------------------------------------------------------------------ records
static void
test_record_round_trip (void **state)
{
    (void) state;
    qn_buf_t body = QN_BUF_INIT, rec = QN_BUF_INIT;
    s_body (&body, "", "orders", 3);
    qn_spool_record_encode (&rec, body.data, body.len);
    assert_int_equal (rec.len, QN_SPOOL_HEADER_LEN + body.len);
    assert_memory_equal (rec.data, "QSR1", 4);
    char *exact = s_exact (rec.data, rec.len);
    const char *out;
    size_t out_len;
    assert_int_equal (qn_spool_record_decode (exact, rec.len, &out, &out_len), (int64_t) rec.len);
    assert_int_equal (out_len, body.len);
    assert_ptr_equal (out, exact + QN_SPOOL_HEADER_LEN);
    assert_memory_equal (out, body.data, body.len);
    assert_int_equal (qn_spool_body_check (out, out_len), 3);
    //  Every strict prefix reads as incomplete, never as a record.
    for (size_t cut = 0; cut < rec.len; cut++) {
        char *prefix = s_exact (rec.data, cut);
        assert_int_equal (qn_spool_record_decode (prefix, cut, &out, &out_len), QN_SPOOL_INCOMPLETE);
        free (prefix);
    }
    free (exact);
    //  An empty body is a valid record too.
    qn_buf_reset (&rec);
    qn_spool_record_encode (&rec, "", 0);
    assert_int_equal (qn_spool_record_decode (rec.data, rec.len, &out, &out_len), QN_SPOOL_HEADER_LEN);
    assert_int_equal (out_len, 0);
    qn_buf_free (&body);
    qn_buf_free (&rec);
}

static void
test_record_corrupt_byte (void **state)
{
    (void) state;
    qn_buf_t body = QN_BUF_INIT, rec = QN_BUF_INIT;
    s_body (&body, "t1", "q", 2);
    qn_spool_record_encode (&rec, body.data, body.len);
    const char *out;
    size_t out_len;
    for (size_t at = 0; at < rec.len; at++)
        for (int bit = 0; bit < 8; bit++) {
            char *bad = s_exact (rec.data, rec.len);
            bad [at] ^= (char) (1 << bit);
            int64_t rc = qn_spool_record_decode (bad, rec.len, &out, &out_len);
            if (at >= 4 && at < 8)
                //  A longer length reads as a torn record, any other
                //  length fails the CRC (it covers the length).
                assert_true (rc == QN_SPOOL_CORRUPT || rc == QN_SPOOL_INCOMPLETE);
            else
                assert_int_equal (rc, QN_SPOOL_CORRUPT);
            free (bad);
        }
    //  A length beyond the limit is corruption, even with the header cut.
    char head [QN_SPOOL_HEADER_LEN] = "QSR1\xff\xff\xff\x7f";
    assert_int_equal (qn_spool_record_decode (head, 8, &out, &out_len), QN_SPOOL_CORRUPT);
    assert_int_equal (qn_spool_record_decode (head, sizeof head, &out, &out_len), QN_SPOOL_CORRUPT);
    //  Wrong magic in a prefix is corruption, not "incomplete".
    assert_int_equal (qn_spool_record_decode ("QX", 2, &out, &out_len), QN_SPOOL_CORRUPT);
    qn_buf_free (&body);
    qn_buf_free (&rec);
}

//  Three records back to back; ends [i] = offset after record i.
static void
s_three (qn_buf_t *seg, size_t ends [3])
{
    for (int r = 0; r < 3; r++) {
        qn_buf_t body = QN_BUF_INIT;
        s_body (&body, "", r == 1 ? "payments" : "orders", r + 1);
        qn_spool_record_encode (seg, body.data, body.len);
        ends [r] = seg->len;
        qn_buf_free (&body);
    }
}

static void
test_scan_torn_tail_every_offset (void **state)
{
    (void) state;
    qn_buf_t seg = QN_BUF_INIT;
    size_t ends [3];
    s_three (&seg, ends);
    for (size_t cut = 0; cut <= seg.len; cut++) {
        char *image = s_exact (seg.data, cut);
        qn_spool_scan_t scan;
        qn_spool_scan (image, cut, &scan);
        size_t whole = 0;
        uint64_t records = 0;
        for (int r = 0; r < 3; r++)
            if (ends [r] <= cut) {
                whole = ends [r];
                records++;
            }
        assert_int_equal (scan.valid_len, whole);
        assert_int_equal (scan.records, records);
        assert_int_equal (scan.stop, cut == whole ? QN_SPOOL_SCAN_END : QN_SPOOL_SCAN_TORN);
        //  Truncating there leaves a clean segment.
        qn_spool_scan_t again;
        qn_spool_scan (image, scan.valid_len, &again);
        assert_int_equal (again.stop, QN_SPOOL_SCAN_END);
        assert_int_equal (again.records, records);
        free (image);
    }
    qn_buf_free (&seg);
}

static void
test_scan_corruption_and_resync (void **state)
{
    (void) state;
    qn_buf_t seg = QN_BUF_INIT;
    size_t ends [3];
    s_three (&seg, ends);
    //  A flipped payload byte in record 2: the scan keeps record 1 only and
    //  says why; resync finds record 3 intact after the damage.
    char *image = s_exact (seg.data, seg.len);
    image [ends [1] - 3] ^= 0x40;
    qn_spool_scan_t scan;
    qn_spool_scan (image, seg.len, &scan);
    assert_int_equal (scan.valid_len, ends [0]);
    assert_int_equal (scan.records, 1);
    assert_int_equal (scan.stop, QN_SPOOL_SCAN_BAD);
    assert_int_equal (qn_spool_resync (image, seg.len, scan.valid_len), (int64_t) ends [1]);
    free (image);
    //  Zeros where record 3 should be (a crash after the size grew but
    //  before the data landed): bad, and nothing valid after it.
    image = s_exact (seg.data, seg.len);
    memset (image + ends [1], 0, seg.len - ends [1]);
    qn_spool_scan (image, seg.len, &scan);
    assert_int_equal (scan.valid_len, ends [1]);
    assert_int_equal (scan.stop, QN_SPOOL_SCAN_BAD);
    assert_int_equal (qn_spool_resync (image, seg.len, scan.valid_len), -1);
    free (image);
    //  Every single corrupted byte stops the scan at or before its record.
    for (size_t at = 0; at < seg.len; at++) {
        image = s_exact (seg.data, seg.len);
        image [at] ^= 0x01;
        qn_spool_scan (image, seg.len, &scan);
        size_t start = at < ends [0] ? 0 : at < ends [1] ? ends [0] : ends [1];
        assert_int_equal (scan.valid_len, start);
        assert_int_not_equal (scan.stop, QN_SPOOL_SCAN_END);
        free (image);
    }
    qn_buf_free (&seg);
}

// ------------------------------------------------------------------ bodies
static void
test_body_check (void **state)
{
    (void) state;
    qn_buf_t b = QN_BUF_INIT;
    s_body (&b, "", "q", 5);
    assert_int_equal (qn_spool_body_check (b.data, b.len), 5);
    //  Trailing bytes, truncation.
    qn_buf_putc (&b, 0);
    assert_int_equal (qn_spool_body_check (b.data, b.len), -1);
    assert_int_equal (qn_spool_body_check (b.data, b.len - 2), -1);
    //  Wrong shapes: no items, an item of the wrong arity, a number queue.
    qn_buf_reset (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, s_write);
    msgpack_pack_array (&pk, 2);
    s_pack_str (&pk, "");
    msgpack_pack_array (&pk, 0);
    assert_int_equal (qn_spool_body_check (b.data, b.len), -1);
    qn_buf_reset (&b);
    msgpack_pack_array (&pk, 2);
    s_pack_str (&pk, "");
    msgpack_pack_array (&pk, 1);
    msgpack_pack_array (&pk, 2);
    s_pack_str (&pk, "q");
    s_pack_str (&pk, "p");
    assert_int_equal (qn_spool_body_check (b.data, b.len), -1);
    qn_buf_reset (&b);
    msgpack_pack_array (&pk, 2);
    s_pack_str (&pk, "");
    msgpack_pack_array (&pk, 1);
    msgpack_pack_array (&pk, 7);
    msgpack_pack_int (&pk, 1);
    msgpack_pack_nil (&pk);
    msgpack_pack_nil (&pk);
    msgpack_pack_bin (&pk, 0);
    msgpack_pack_nil (&pk);
    msgpack_pack_nil (&pk);
    msgpack_pack_nil (&pk);
    assert_int_equal (qn_spool_body_check (b.data, b.len), -1);
    assert_int_equal (qn_spool_body_check ("\xc1", 1), -1);
    qn_buf_free (&b);
}

// ------------------------------------------------------------------ names
static void
test_segment_names (void **state)
{
    (void) state;
    char name [QN_SPOOL_NAME_MAX];
    qn_spool_segment_name (42, name);
    assert_string_equal (name, "segment-0000000000000042.qspool");
    uint64_t seq = 0;
    assert_int_equal (qn_spool_segment_parse (name, &seq), 0);
    assert_int_equal (seq, 42);
    qn_spool_segment_name (UINT64_C (9999999999999999), name);
    assert_int_equal (qn_spool_segment_parse (name, &seq), 0);
    assert_true (seq == UINT64_C (9999999999999999));
    const char *not_segments [] = {
        "segment-0000000000000042.qspool.tmp", "segment-42.qspool", "checkpoint",
        "segment-00000000000000x2.qspool", "failed.qspool", ""
    };
    for (size_t i = 0; i < sizeof not_segments / sizeof not_segments [0]; i++)
        assert_int_equal (qn_spool_segment_parse (not_segments [i], &seq), -1);
}

static void
test_checkpoint_line (void **state)
{
    (void) state;
    qn_buf_t b = QN_BUF_INIT;
    qn_spool_checkpoint_encode (&b, 7, 123456);
    uint64_t seg = 0, off = 0;
    char *exact = s_exact (b.data, b.len);
    assert_int_equal (qn_spool_checkpoint_decode (exact, b.len, &seg, &off), 0);
    assert_int_equal (seg, 7);
    assert_int_equal (off, 123456);
    //  Any strict prefix (a torn write) and any changed byte is refused.
    for (size_t cut = 0; cut < b.len; cut++)
        assert_int_equal (qn_spool_checkpoint_decode (exact, cut, &seg, &off), -1);
    for (size_t at = 0; at < b.len; at++) {
        char *bad = s_exact (b.data, b.len);
        bad [at] ^= 0x01;
        assert_int_equal (qn_spool_checkpoint_decode (bad, b.len, &seg, &off), -1);
        free (bad);
    }
    free (exact);
    qn_buf_reset (&b);
    qn_spool_checkpoint_encode (&b, UINT64_MAX, UINT64_MAX);
    assert_int_equal (qn_spool_checkpoint_decode (b.data, b.len, &seg, &off), 0);
    assert_true (seg == UINT64_MAX && off == UINT64_MAX);
    qn_buf_free (&b);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_crc32c_vectors),
        cmocka_unit_test (test_record_round_trip),
        cmocka_unit_test (test_record_corrupt_byte),
        cmocka_unit_test (test_scan_torn_tail_every_offset),
        cmocka_unit_test (test_scan_corruption_and_resync),
        cmocka_unit_test (test_body_check),
        cmocka_unit_test (test_segment_names),
        cmocka_unit_test (test_checkpoint_line),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
