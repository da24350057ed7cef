/*  test/unit/test_wire_sink_format.c - windows, keys, parts and files of
    queen-sink (wire/sink_format.c). DuckDB reads the files back in
    test/integration/sink_files.test.mjs.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "base/buf.h"
#include "wire/sink_format.h"

static void
test_window_parse (void **state)
{
    (void) state;
    char err [200];
    int64_t w = 0;
    assert_int_equal (qn_sink_window_parse ("1m", &w, err, sizeof err), 0);
    assert_int_equal (w, 60000);
    assert_int_equal (qn_sink_window_parse ("1h", &w, err, sizeof err), 0);
    assert_int_equal (w, 3600000);
    assert_int_equal (qn_sink_window_parse ("1d", &w, err, sizeof err), 0);
    assert_int_equal (w, 86400000);
    assert_int_equal (qn_sink_window_parse ("5s", &w, err, sizeof err), 0);
    assert_int_equal (w, 5000);
    assert_int_equal (qn_sink_window_parse ("15m", &w, err, sizeof err), 0);
    assert_int_equal (w, 900000);
    const char *bad [] = { "", "m", "0m", "1", "1x", "7m", "2d", "-1m", "1.5h", "1mm", NULL };
    for (int i = 0; bad [i]; i++) {
        err [0] = 0;
        assert_int_equal (qn_sink_window_parse (bad [i], &w, err, sizeof err), -1);
        assert_non_null (strstr (err, "SINK_WINDOW"));
    }
    assert_int_equal (qn_sink_window_parse (NULL, &w, err, sizeof err), -1);
}

static void
test_window_start_and_label (void **state)
{
    (void) state;
    //  2026-12-01T18:42:17.123456Z
    int64_t us = 1764614537123456LL;
    char iso [32], label [17];
    qn_sink_iso_us (us, iso);
    assert_string_equal (iso, "2025-12-01T18:42:17.123456Z");
    int64_t back = 0;
    assert_int_equal (qn_sink_parse_iso_us (iso, strlen (iso), &back), 0);
    assert_int_equal (back, us);
    assert_int_equal (qn_sink_window_start (us, 60000), 1764614520000LL);
    qn_sink_window_label (qn_sink_window_start (us, 60000), label);
    assert_string_equal (label, "20251201T184200Z");
    qn_sink_window_label (qn_sink_window_start (us, 3600000), label);
    assert_string_equal (label, "20251201T180000Z");
    qn_sink_window_label (qn_sink_window_start (us, 86400000), label);
    assert_string_equal (label, "20251201T000000Z");
    qn_sink_window_label (qn_sink_window_start (us, 5000), label);
    assert_string_equal (label, "20251201T184215Z");
    //  The end of a window is the start of the next; before 1970 floors.
    assert_int_equal (qn_sink_window_start (1764614520000000LL - 1, 60000), 1764614460000LL);
    assert_int_equal (qn_sink_window_start (1764614520000000LL, 60000), 1764614520000LL);
    assert_int_equal (qn_sink_window_start (-1, 60000), -60000);
    qn_sink_iso_us (-1, iso);
    assert_string_equal (iso, "1969-12-31T23:59:59.999999Z");
    //  Leap day, and the broker's forms of createdAt.
    assert_int_equal (qn_sink_parse_iso_us ("2024-02-29T23:59:59Z", 20, &back), 0);
    qn_sink_iso_us (back, iso);
    assert_string_equal (iso, "2024-02-29T23:59:59.000000Z");
    assert_int_equal (qn_sink_parse_iso_us ("2026-11-30T11:37:13.618085Z", 27, &back), 0);
    qn_sink_iso_us (back, iso);
    assert_string_equal (iso, "2026-11-30T11:37:13.618085Z");
    assert_int_equal (qn_sink_parse_iso_us ("2026-11-30T11:37:13.6+00:00", 27, &back), 0);
    qn_sink_iso_us (back, iso);
    assert_string_equal (iso, "2026-11-30T11:37:13.600000Z");
    const char *bad [] = { "2026-11-30", "2026-11-30T11:37:13", "2026-13-30T11:37:13Z",
        "2026-11-30T11:37:13.Z", "2026-11-30T11:37:13+01:00", "2026-11-30T11:37:13.1234567890Z",
        "x026-11-30T11:37:13Z", NULL };
    for (int i = 0; bad [i]; i++)
        assert_int_equal (qn_sink_parse_iso_us (bad [i], strlen (bad [i]), &back), -1);
}

static void
test_object_key (void **state)
{
    (void) state;
    qn_buf_t key = QN_BUF_INIT;
    int64_t start = 1764612000000LL;    //  2025-12-01T18:00:00Z
    qn_sink_object_key (&key, "lake", "orders", start, 0, "parquet");
    assert_string_equal (key.data, "lake/queue=orders/dt=2025-12-01/hour=18/part-20251201T180000Z-00000.parquet");
    qn_buf_reset (&key);
    qn_sink_object_key (&key, "/a/b//", "ord ers/x=1", start + 60000, 12, "jsonl.gz");
    assert_string_equal (key.data, "a/b/queue=ord%20ers%2Fx%3D1/dt=2025-12-01/hour=18/part-20251201T180100Z-00012.jsonl.gz");
    qn_buf_reset (&key);
    qn_sink_object_key (&key, "", "q.1_-", start - 18 * 3600000LL, 99999, "jsonl");
    assert_string_equal (key.data, "queue=q.1_-/dt=2025-12-01/hour=00/part-20251201T000000Z-99999.jsonl");
    qn_buf_reset (&key);
    qn_sink_object_key (&key, NULL, "\xc3\xa9", start, 1, "parquet");
    assert_string_equal (key.data, "queue=%C3%A9/dt=2025-12-01/hour=18/part-20251201T180000Z-00001.parquet");
    qn_buf_free (&key);
    qn_sink_format_t f = { .kind = QN_SINK_PARQUET };
    assert_string_equal (qn_sink_extension (&f), "parquet");
    f.kind = QN_SINK_JSONL;
    assert_string_equal (qn_sink_extension (&f), "jsonl");
    f.gzip = true;
    assert_string_equal (qn_sink_extension (&f), "jsonl.gz");
}

static void
test_fields_parse (void **state)
{
    (void) state;
    qn_sink_field_t fields [QN_SINK_MAX_FIELDS];
    char err [200];
    assert_int_equal (qn_sink_fields_parse (NULL, fields, QN_SINK_MAX_FIELDS, err, sizeof err), 0);
    assert_int_equal (qn_sink_fields_parse ("", fields, QN_SINK_MAX_FIELDS, err, sizeof err), 0);
    assert_int_equal (qn_sink_fields_parse ("amount:double,user.id:string,n:int64,ok:bool,at:timestamp,raw:json",
                                            fields, QN_SINK_MAX_FIELDS, err, sizeof err), 6);
    assert_string_equal (fields [1].path, "user.id");
    assert_string_equal (fields [1].name, "user_id");
    assert_int_equal (fields [0].type, QN_PQ_DOUBLE);
    assert_int_equal (fields [1].type, QN_PQ_STRING);
    assert_int_equal (fields [2].type, QN_PQ_INT64);
    assert_int_equal (fields [3].type, QN_PQ_BOOLEAN);
    assert_int_equal (fields [4].type, QN_PQ_TIMESTAMP_MS);
    assert_int_equal (fields [5].type, QN_PQ_JSON);
    const char *bad [] = { "amount", "amount:", ":double", "a:float", "payload:json",
        "a.b:string,a_b:int64", "a..b:string", ".a:string", "a b:string", "a:string,", NULL };
    for (int i = 0; bad [i]; i++) {
        err [0] = 0;
        assert_int_equal (qn_sink_fields_parse (bad [i], fields, QN_SINK_MAX_FIELDS, err, sizeof err), -1);
        assert_non_null (strstr (err, "SINK_FIELDS"));
    }
    assert_int_equal (qn_sink_fields_parse ("a:string,b:string", fields, 1, err, sizeof err), -1);
}

static qn_sink_record_t
s_rec (const char *id, int64_t created_us, const char *payload)
{
    return (qn_sink_record_t) { id, strlen (id), "t", 1, "p", 1, created_us, NULL, 0,
                                payload, strlen (payload) };
}

static void
test_sort_and_parts (void **state)
{
    (void) state;
    qn_sink_record_t r [5] = {
        s_rec ("b", 20, "1"), s_rec ("a", 20, "1"), s_rec ("z", 10, "1"),
        s_rec ("aa", 20, "1"), s_rec ("c", 5, "1")
    };
    qn_sink_sort (r, 5);
    const char *order [] = { "c", "z", "a", "aa", "b" };
    for (int i = 0; i < 5; i++)
        assert_memory_equal (r [i].id, order [i], r [i].id_len);
    //  Rows bound, bytes bound (each record here is 1+1+1+0+1+32 = 36 bytes,
    //  "aa" 37), and the first record of a part always fits.
    assert_int_equal (qn_sink_part_length (r, 5, 2, 0), 2);
    assert_int_equal (qn_sink_part_length (r, 5, 0, 0), 5);
    assert_int_equal (qn_sink_part_length (r, 5, 0, 72), 2);
    assert_int_equal (qn_sink_part_length (r, 5, 0, 107), 2);
    assert_int_equal (qn_sink_part_length (r, 5, 0, 108), 3);
    assert_int_equal (qn_sink_part_length (r, 5, 0, 144), 3);
    assert_int_equal (qn_sink_part_length (r, 5, 0, 145), 4);
    assert_int_equal (qn_sink_part_length (r, 5, 0, 1), 1);
    assert_int_equal (qn_sink_part_length (r, 0, 10, 10), 0);
}

static void
test_jsonl (void **state)
{
    (void) state;
    qn_sink_record_t r [2] = {
        { "m1", 2, "t\"1", 3, "p", 1, 1764612000000001LL, "0190f3c2-aaaa-7000-8000-000000000001", 36,
          "{\"a\": 1}", 8 },
        { "m2", 2, "t2", 2, "p", 1, 1764612000000002LL, NULL, 0, "[1,2]", 5 },
    };
    qn_sink_format_t f = { .kind = QN_SINK_JSONL };
    qn_buf_t out = QN_BUF_INIT;
    assert_int_equal (qn_sink_file_write (&f, r, 2, &out), 0);
    assert_string_equal (out.data,
        "{\"message_id\":\"m1\",\"transaction_id\":\"t\\\"1\",\"partition\":\"p\","
        "\"created_at\":\"2025-12-01T18:00:00.000001Z\",\"trace_id\":\"0190f3c2-aaaa-7000-8000-000000000001\","
        "\"payload\":{\"a\": 1}}\n"
        "{\"message_id\":\"m2\",\"transaction_id\":\"t2\",\"partition\":\"p\","
        "\"created_at\":\"2025-12-01T18:00:00.000002Z\",\"trace_id\":null,\"payload\":[1,2]}\n");
    //  Gzipped: inflates to the same text, and is the same bytes every time.
    f.gzip = true;
    qn_buf_t gz = QN_BUF_INIT, gz2 = QN_BUF_INIT;
    assert_int_equal (qn_sink_file_write (&f, r, 2, &gz), 0);
    assert_int_equal (qn_sink_file_write (&f, r, 2, &gz2), 0);
    assert_int_equal (gz.len, gz2.len);
    assert_memory_equal (gz.data, gz2.data, gz.len);
    assert_int_equal ((uint8_t) gz.data [0], 0x1f);
    assert_int_equal ((uint8_t) gz.data [1], 0x8b);
    char plain [1024];
    z_stream zs;
    memset (&zs, 0, sizeof zs);
    assert_int_equal (inflateInit2 (&zs, 15 + 16), Z_OK);
    zs.next_in = (Bytef *) gz.data;
    zs.avail_in = (uInt) gz.len;
    zs.next_out = (Bytef *) plain;
    zs.avail_out = sizeof plain;
    assert_int_equal (inflate (&zs, Z_FINISH), Z_STREAM_END);
    assert_int_equal (zs.total_out, out.len);
    assert_memory_equal (plain, out.data, out.len);
    inflateEnd (&zs);
    qn_buf_free (&out);
    qn_buf_free (&gz);
    qn_buf_free (&gz2);
    f.kind = 99;
    assert_int_equal (qn_sink_file_write (&f, r, 2, &out), -1);
    qn_buf_free (&out);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_window_parse),
        cmocka_unit_test (test_window_start_and_label),
        cmocka_unit_test (test_object_key),
        cmocka_unit_test (test_fields_parse),
        cmocka_unit_test (test_sort_and_parts),
        cmocka_unit_test (test_jsonl),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
