/*  test/tools/sink_files.c - writes sink file samples for the DuckDB tests
    Usage: sink-files DIR
    Also writes DIR/lake/<variant>/<object key> for the variants
    parquet-snappy, parquet-zstd, jsonl and jsonl-gz: 300 messages of two
    queues, one a second from 2025-12-01T18:58:00Z, in 1-minute windows cut
    into parts of at most 25 records, as queen-sink lays them out.
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
#include "wire/sink_format.h"

#include <sys/stat.h>

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

static int
s_mkdirs (const char *path)
{
    char tmp [4096];
    snprintf (tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir (tmp, 0755);
            *p = '/';
        }
    return 0;
}

#define LAKE_ROWS 300

static int
s_lake (const char *dir, const char *variant, const qn_sink_format_t *format)
{
    static char ids [LAKE_ROWS][40], txns [LAKE_ROWS][40], parts [LAKE_ROWS][16],
                traces [LAKE_ROWS][40], payloads [LAKE_ROWS][200];
    qn_sink_record_t recs [LAKE_ROWS];
    int64_t start_us = 1764615480000000LL;      //  2025-12-01T18:58:00Z
    //  Records are made in a scrambled order: the writer sorts them.
    for (int i = 0; i < LAKE_ROWS; i++) {
        int r = (i * 7) % LAKE_ROWS;
        snprintf (ids [i], 40, "m-%05d", r);
        snprintf (txns [i], 40, "t-%d", r);
        snprintf (parts [i], 16, "p%d", r % 13);
        snprintf (traces [i], 40, "0190f3c2-aaaa-7000-8000-%012d", r);
        if (r % 11 == 0)
            snprintf (payloads [i], 200, "{\"amount\":\"x\",\"r\":%d}", r);
        else
            snprintf (payloads [i], 200, "{\"amount\":%d.5,\"user\":{\"id\":\"u%d\"},\"n\":%d,"
                      "\"ok\":%s,\"at\":%lld,\"tags\":[%d],\"r\":%d}", r, r % 7, r,
                      r % 2 ? "false" : "true", 1764615480000LL + r, r, r);
        recs [i] = (qn_sink_record_t) { ids [i], strlen (ids [i]), txns [i], strlen (txns [i]),
            parts [i], strlen (parts [i]), start_us + (int64_t) r * 1000000 + 123,
            r % 5 ? traces [i] : NULL, r % 5 ? strlen (traces [i]) : 0,
            payloads [i], strlen (payloads [i]) };
    }
    qn_sink_sort (recs, LAKE_ROWS);
    const char *queues [] = { "orders", "a b" };
    size_t i = 0;
    while (i < LAKE_ROWS) {
        int64_t w = qn_sink_window_start (recs [i].created_us, 60000);
        size_t end = i;
        while (end < LAKE_ROWS && qn_sink_window_start (recs [end].created_us, 60000) == w)
            end++;
        //  The first 150 records are queue "orders", the rest "a b".
        uint32_t part = 0;
        for (size_t at = i; at < end; part++) {
            const char *queue = queues [at >= LAKE_ROWS / 2];
            size_t limit = end;
            if (at < LAKE_ROWS / 2 && end > LAKE_ROWS / 2)
                limit = LAKE_ROWS / 2;
            if (at == LAKE_ROWS / 2 && i < LAKE_ROWS / 2)
                part = 0;
            size_t n = qn_sink_part_length (recs + at, limit - at, 25, 0);
            qn_buf_t key = QN_BUF_INIT, file = QN_BUF_INIT;
            qn_buf_printf (&key, "%s/lake/%s/", dir, variant);
            qn_sink_object_key (&key, "", queue, w, part, qn_sink_extension (format));
            if (qn_sink_file_write (format, recs + at, n, &file) != 0)
                return -1;
            s_mkdirs (key.data);
            if (s_write_file (key.data, &file) != 0)
                return -1;
            qn_buf_free (&key);
            qn_buf_free (&file);
            at += n;
        }
        i = end;
    }
    return 0;
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
    qn_sink_field_t fields [QN_SINK_MAX_FIELDS];
    char err [200];
    int nf = qn_sink_fields_parse ("amount:double,user.id:string,n:int64,ok:bool,at:timestamp,tags:json",
                                   fields, QN_SINK_MAX_FIELDS, err, sizeof err);
    if (nf < 0) {
        fprintf (stderr, "sink-files: %s\n", err);
        return 1;
    }
    qn_sink_format_t f = { QN_SINK_PARQUET, QN_PQ_SNAPPY, false, 10, fields, (uint32_t) nf };
    if (s_lake (dir, "parquet-snappy", &f))
        return 1;
    f.codec = QN_PQ_ZSTD;
    if (s_lake (dir, "parquet-zstd", &f))
        return 1;
    f.kind = QN_SINK_JSONL;
    if (s_lake (dir, "jsonl", &f))
        return 1;
    f.gzip = true;
    if (s_lake (dir, "jsonl-gz", &f))
        return 1;
    return 0;
}
