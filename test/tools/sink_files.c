/*  test/tools/sink_files.c - writes sink file samples for the DuckDB tests
    Usage: sink-files DIR
    Writes DIR/types_<codec>.parquet for every codec: 2,500 rows whose
    values are a function of the row number r (see test/integration/
    sink_files.test.mjs for the same formulas), row groups of 1,000 rows
    and small pages, so several row groups, pages, dictionary and plain
    chunks, nulls and statistics are all exercised. Exits non-zero on
    any writer error.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "wire/parquet.h"

static int
s_write_file (const char *path, const qn_buf_t *b)
{
    FILE *f = fopen (path, "wb");
    if (!f || fwrite (b->data, 1, b->len, f) != b->len || fclose (f) != 0) {
        fprintf (stderr, "sink-files: cannot write %s\n", path);
        return -1;
    }
    return 0;
}

#define CHECK(x) do { if ((x) != 0) { fprintf (stderr, "sink-files: %s failed at row %d\n", #x, r); return -1; } } while (0)

static int
s_types (const char *dir, const char *name, qn_pq_codec_t codec)
{
    static const qn_pq_column_t cols [] = {
        { "b",   QN_PQ_BOOLEAN, true, false },
        { "i32", QN_PQ_INT32, false, false },
        { "i64", QN_PQ_INT64, false, false },
        { "d",   QN_PQ_DOUBLE, true, false },
        { "s",   QN_PQ_STRING, false, false },
        { "u",   QN_PQ_STRING, false, false },
        { "j",   QN_PQ_JSON, false, false },
        { "ts",  QN_PQ_TIMESTAMP_MS, false, false },
        { "n",   QN_PQ_INT64, true, false },
        { "e",   QN_PQ_STRING, true, true },
    };
    qn_buf_t out = QN_BUF_INIT;
    qn_pq_writer_t *w = qn_pq_writer_new (&(qn_pq_options_t) {
        cols, sizeof cols / sizeof cols [0], codec, 0, 1000, 4096 }, &out);
    if (!w)
        return -1;
    int r = 0;
    char text [128];
    for (r = 0; r < 2500; r++) {
        if (r % 3 == 0)
            CHECK (qn_pq_set_null (w, 0));
        else
            CHECK (qn_pq_set_bool (w, 0, r % 2 == 0));
        CHECK (qn_pq_set_int32 (w, 1, r * 7 - 5000));
        CHECK (qn_pq_set_int64 (w, 2, (long long) r * 1000000007LL));
        if (r % 5 == 4)
            CHECK (qn_pq_set_null (w, 3));
        else
            CHECK (qn_pq_set_double (w, 3, r / 4.0 - 100.0));
        snprintf (text, sizeof text, "k%d", r % 10);
        CHECK (qn_pq_set_bytes (w, 4, text, strlen (text)));
        snprintf (text, sizeof text, "row-%05d", r);
        CHECK (qn_pq_set_bytes (w, 5, text, strlen (text)));
        snprintf (text, sizeof text, "{\"r\":%d,\"t\":\"x\\\"y\"}", r);
        CHECK (qn_pq_set_bytes (w, 6, text, strlen (text)));
        CHECK (qn_pq_set_int64 (w, 7, 1700000000000LL + (long long) r * 1000));
        if (r < 1000 || r % 2)
            CHECK (qn_pq_set_null (w, 8));      //  First row group: all null
        else
            CHECK (qn_pq_set_int64 (w, 8, -r));
        if (r % 7 == 0)
            CHECK (qn_pq_set_null (w, 9));
        else
            CHECK (qn_pq_set_bytes (w, 9, r % 2 ? "" : "\xc3\xa9t\xc3\xa9", r % 2 ? 0 : 5));
        CHECK (qn_pq_end_row (w));
    }
    CHECK (qn_pq_finish (w));
    qn_pq_writer_destroy (&w);
    char path [4096];
    snprintf (path, sizeof path, "%s/types_%s.parquet", dir, name);
    int rc = s_write_file (path, &out);
    qn_buf_free (&out);
    return rc;
}

int
main (int argc, char **argv)
{
    if (argc != 2) {
        fprintf (stderr, "usage: sink-files DIR\n");
        return 2;
    }
    const char *dir = argv [1];
    if (s_types (dir, "none", QN_PQ_UNCOMPRESSED)
    ||  s_types (dir, "snappy", QN_PQ_SNAPPY)
    ||  s_types (dir, "zstd", QN_PQ_ZSTD)
    ||  s_types (dir, "gzip", QN_PQ_GZIP))
        return 1;
    return 0;
}
