/*  test/unit/test_wire_parquet.c - the Parquet writer's contract
    File framing, refused options and values, determinism and the rules of
    a row. The file contents are read back by DuckDB in
    test/integration/sink_files.test.mjs.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "wire/parquet.h"

static const qn_pq_column_t s_cols [] = {
    { "id", QN_PQ_INT64, false, false },
    { "name", QN_PQ_STRING, true, false },
};

static qn_pq_writer_t *
s_new (qn_buf_t *out, qn_pq_codec_t codec)
{
    return qn_pq_writer_new (&(qn_pq_options_t) { s_cols, 2, codec, 0, 2, 0 }, out);
}

static void
s_write (qn_buf_t *out, qn_pq_codec_t codec, int rows)
{
    qn_pq_writer_t *w = s_new (out, codec);
    assert_non_null (w);
    for (int r = 0; r < rows; r++) {
        assert_int_equal (qn_pq_set_int64 (w, 0, r), 0);
        if (r % 2)
            assert_int_equal (qn_pq_set_null (w, 1), 0);
        else
            assert_int_equal (qn_pq_set_bytes (w, 1, "abc", 3), 0);
        assert_int_equal (qn_pq_end_row (w), 0);
    }
    assert_int_equal (qn_pq_rows (w), (uint64_t) rows);
    assert_int_equal (qn_pq_finish (w), 0);
    assert_int_equal (qn_pq_file_bytes (w), out->len);
    qn_pq_writer_destroy (&w);
    assert_null (w);
}

static void
test_parquet_framing (void **state)
{
    (void) state;
    qn_pq_codec_t codecs [] = { QN_PQ_UNCOMPRESSED, QN_PQ_SNAPPY, QN_PQ_GZIP, QN_PQ_ZSTD };
    for (size_t c = 0; c < 4; c++) {
        qn_buf_t out = QN_BUF_INIT;
        s_write (&out, codecs [c], 5);
        assert_true (out.len > 12);
        assert_memory_equal (out.data, "PAR1", 4);
        assert_memory_equal (out.data + out.len - 4, "PAR1", 4);
        const uint8_t *p = (const uint8_t *) out.data + out.len - 8;
        uint32_t footer = (uint32_t) p [0] | (uint32_t) p [1] << 8
                        | (uint32_t) p [2] << 16 | (uint32_t) p [3] << 24;
        assert_true (footer > 0 && footer < out.len - 12);
        //  The footer names both columns and the writer.
        assert_non_null (memmem (out.data + out.len - 8 - footer, footer, "name", 4));
        assert_non_null (memmem (out.data + out.len - 8 - footer, footer, "queen-sink", 10));
        qn_buf_free (&out);
    }
    //  No rows: a valid file with no row group.
    qn_buf_t out = QN_BUF_INIT;
    s_write (&out, QN_PQ_SNAPPY, 0);
    assert_memory_equal (out.data, "PAR1", 4);
    assert_memory_equal (out.data + out.len - 4, "PAR1", 4);
    qn_buf_free (&out);
}

static void
test_parquet_deterministic (void **state)
{
    (void) state;
    qn_buf_t a = QN_BUF_INIT, b = QN_BUF_INIT;
    s_write (&a, QN_PQ_ZSTD, 101);
    s_write (&b, QN_PQ_ZSTD, 101);
    assert_int_equal (a.len, b.len);
    assert_memory_equal (a.data, b.data, a.len);
    qn_buf_free (&a);
    qn_buf_free (&b);
}

static void
test_parquet_drain_between_rows (void **state)
{
    (void) state;
    //  A caller that drains `out` after every row gets the same file.
    qn_buf_t whole = QN_BUF_INIT, out = QN_BUF_INIT, joined = QN_BUF_INIT;
    s_write (&whole, QN_PQ_SNAPPY, 9);
    qn_pq_writer_t *w = s_new (&out, QN_PQ_SNAPPY);
    for (int r = 0; r < 9; r++) {
        qn_pq_set_int64 (w, 0, r);
        if (r % 2)
            qn_pq_set_null (w, 1);
        else
            qn_pq_set_bytes (w, 1, "abc", 3);
        assert_int_equal (qn_pq_end_row (w), 0);
        qn_buf_append (&joined, out.data, out.len);
        qn_buf_reset (&out);
    }
    assert_int_equal (qn_pq_finish (w), 0);
    qn_buf_append (&joined, out.data, out.len);
    assert_int_equal (qn_pq_file_bytes (w), joined.len);
    qn_pq_writer_destroy (&w);
    assert_int_equal (joined.len, whole.len);
    assert_memory_equal (joined.data, whole.data, whole.len);
    qn_buf_free (&whole);
    qn_buf_free (&out);
    qn_buf_free (&joined);
}

static void
test_parquet_refused (void **state)
{
    (void) state;
    qn_buf_t out = QN_BUF_INIT;
    assert_null (qn_pq_writer_new (&(qn_pq_options_t) { s_cols, 0, QN_PQ_SNAPPY, 0, 0, 0 }, &out));
    assert_null (qn_pq_writer_new (&(qn_pq_options_t) { s_cols, 2, (qn_pq_codec_t) 4, 0, 0, 0 }, &out));
    qn_pq_column_t dup [] = { { "a", QN_PQ_INT32, false, false }, { "a", QN_PQ_INT64, false, false } };
    assert_null (qn_pq_writer_new (&(qn_pq_options_t) { dup, 2, QN_PQ_SNAPPY, 0, 0, 0 }, &out));
    qn_pq_column_t empty [] = { { "", QN_PQ_INT32, false, false } };
    assert_null (qn_pq_writer_new (&(qn_pq_options_t) { empty, 1, QN_PQ_SNAPPY, 0, 0, 0 }, &out));
    qn_pq_column_t badtype [] = { { "x", (qn_pq_type_t) 99, false, false } };
    assert_null (qn_pq_writer_new (&(qn_pq_options_t) { badtype, 1, QN_PQ_SNAPPY, 0, 0, 0 }, &out));
    assert_int_equal (out.len, 0);

    qn_pq_writer_t *w = s_new (&out, QN_PQ_UNCOMPRESSED);
    assert_int_equal (qn_pq_set_null (w, 0), -1);           //  REQUIRED column
    assert_int_equal (qn_pq_set_bytes (w, 0, "x", 1), -1);  //  Wrong type
    assert_int_equal (qn_pq_set_double (w, 0, 1.0), -1);
    assert_int_equal (qn_pq_set_int32 (w, 0, 1), -1);
    assert_int_equal (qn_pq_set_bool (w, 1, true), -1);
    assert_int_equal (qn_pq_set_int64 (w, 2, 1), -1);       //  No such column
    assert_int_equal (qn_pq_set_int64 (w, 0, 1), 0);
    assert_int_equal (qn_pq_set_int64 (w, 0, 2), -1);       //  Twice in a row
    assert_int_equal (qn_pq_end_row (w), -1);               //  Column 1 missing
    assert_int_equal (qn_pq_finish (w), -1);                //  Row open
    assert_int_equal (qn_pq_set_null (w, 1), 0);
    assert_true (qn_pq_pending_bytes (w) > 0);
    assert_int_equal (qn_pq_end_row (w), 0);
    assert_int_equal (qn_pq_finish (w), 0);
    assert_int_equal (qn_pq_finish (w), -1);                //  Finished
    assert_int_equal (qn_pq_set_int64 (w, 0, 1), -1);
    qn_pq_writer_destroy (&w);
    qn_pq_writer_destroy (&w);                              //  NULL is fine
    qn_buf_free (&out);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_parquet_framing),
        cmocka_unit_test (test_parquet_deterministic),
        cmocka_unit_test (test_parquet_drain_between_rows),
        cmocka_unit_test (test_parquet_refused),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
