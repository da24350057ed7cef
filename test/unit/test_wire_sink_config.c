/*  test/unit/test_wire_sink_config.c - queen-sink's per-queue settings file
    (wire/sink_config.c). The sink reading such a file end to end is in
    test/integration/sink.test.mjs.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/sink_config.h"

static qn_sink_queue_conf_t s_def;

static int
s_setup (void **state)
{
    (void) state;
    memset (&s_def, 0, sizeof s_def);
    strcpy (s_def.format, "parquet");
    strcpy (s_def.window, "1h");
    strcpy (s_def.late, "next");
    strcpy (s_def.prefix, "lake");
    s_def.lateness_ms = 60000;
    return 0;
}

static int
s_parse (const char *text, qn_sink_queue_conf_t *out, size_t have, char *err)
{
    err [0] = 0;
    return qn_sink_config_parse (text, strlen (text), &s_def, out, have, QN_SINK_MAX_QUEUES, err, 400);
}

static void
test_split (void **state)
{
    (void) state;
    qn_sink_queue_conf_t q [QN_SINK_MAX_QUEUES];
    char err [400];
    assert_int_equal (qn_sink_queues_split (" a , b,c ", &s_def, q, QN_SINK_MAX_QUEUES, err, sizeof err), 3);
    assert_string_equal (q [0].queue, "a");
    assert_string_equal (q [1].queue, "b");
    assert_string_equal (q [2].queue, "c");
    assert_string_equal (q [2].format, "parquet");
    assert_string_equal (q [2].prefix, "lake");
    assert_int_equal (qn_sink_queues_split ("", &s_def, q, QN_SINK_MAX_QUEUES, err, sizeof err), 0);
    assert_int_equal (qn_sink_queues_split ("a,,b", &s_def, q, QN_SINK_MAX_QUEUES, err, sizeof err), -1);
    assert_non_null (strstr (err, "1 to 255 bytes"));
    assert_int_equal (qn_sink_queues_split ("a,b,a", &s_def, q, QN_SINK_MAX_QUEUES, err, sizeof err), -1);
    assert_non_null (strstr (err, "a appears twice"));
    assert_int_equal (qn_sink_queues_split ("a,b,c", &s_def, q, 2, err, sizeof err), -1);
    assert_non_null (strstr (err, "at most 2 queues"));
}

static void
test_parse_sections (void **state)
{
    (void) state;
    qn_sink_queue_conf_t q [QN_SINK_MAX_QUEUES];
    char err [400];
    int n = qn_sink_queues_split ("orders,audit", &s_def, q, QN_SINK_MAX_QUEUES, err, sizeof err);
    assert_int_equal (n, 2);
    const char *text =
        "# per-queue settings\r\n"
        "; another comment\n"
        "\n"
        "[ clicks ]\n"
        "format = jsonl\n"
        "compression=none\n"
        "window = 5m\n"
        "late = prefix\n"
        "prefix = /raw/clicks/\n"
        "\n"
        "[orders]\n"
        "  fields = amount:double , customer.id:string\n"
        "lateness_ms = 0\n"
        "compression = snappy\n"
        "prefix =\n";
    err [0] = 0;
    n = qn_sink_config_parse (text, strlen (text), &s_def, q, (size_t) n, QN_SINK_MAX_QUEUES, err, sizeof err);
    //  The fields value keeps its inner spaces: refused by the field parser
    //  ("amount:double " has a type "double ").
    assert_int_equal (n, -1);
    assert_non_null (strstr (err, "line 11: [orders]: SINK_FIELDS type"));

    n = qn_sink_queues_split ("orders,audit", &s_def, q, QN_SINK_MAX_QUEUES, err, sizeof err);
    const char *good =
        "[ clicks ]\n"
        "format = jsonl\n"
        "compression=none\n"
        "window = 5m\n"
        "late = prefix\n"
        "prefix = /raw/clicks/\n"
        "[orders]\n"
        "fields = amount:double,customer.id:string\n"
        "lateness_ms = 0\n"
        "compression = snappy\n"
        "prefix =";                 //  no final line break
    n = qn_sink_config_parse (good, strlen (good), &s_def, q, (size_t) n, QN_SINK_MAX_QUEUES, err, sizeof err);
    assert_int_equal (n, 3);
    //  SINK_QUEUES first, in their order, then the file's new queues.
    assert_string_equal (q [0].queue, "orders");
    assert_string_equal (q [1].queue, "audit");
    assert_string_equal (q [2].queue, "clicks");
    assert_string_equal (q [0].format, "parquet");
    assert_string_equal (q [0].compression, "snappy");
    assert_string_equal (q [0].fields, "amount:double,customer.id:string");
    assert_int_equal (q [0].lateness_ms, 0);
    assert_string_equal (q [0].prefix, "");
    assert_string_equal (q [0].window, "1h");
    //  A queue without a section keeps every default.
    assert_string_equal (q [1].format, "parquet");
    assert_string_equal (q [1].prefix, "lake");
    assert_int_equal (q [1].lateness_ms, 60000);
    assert_string_equal (q [2].format, "jsonl");
    assert_string_equal (q [2].compression, "none");
    assert_string_equal (q [2].window, "5m");
    assert_string_equal (q [2].late, "prefix");
    assert_string_equal (q [2].prefix, "raw/clicks");

    //  Resolved: formats, fields and widths.
    qn_sink_format_t f;
    qn_sink_field_t fields [QN_SINK_MAX_FIELDS];
    int64_t w = 0;
    assert_int_equal (qn_sink_queue_check (&q [0], 500, &f, fields, &w, err, sizeof err), 0);
    assert_int_equal (f.kind, QN_SINK_PARQUET);
    assert_int_equal (f.codec, QN_PQ_SNAPPY);
    assert_int_equal (f.row_group_rows, 500);
    assert_int_equal (f.field_count, 2);
    assert_ptr_equal (f.fields, fields);
    assert_string_equal (fields [1].name, "customer_id");
    assert_int_equal (w, 3600000);
    assert_int_equal (qn_sink_queue_check (&q [2], 500, &f, fields, &w, err, sizeof err), 0);
    assert_int_equal (f.kind, QN_SINK_JSONL);
    assert_false (f.gzip);
    assert_int_equal (f.field_count, 0);
    assert_int_equal (w, 300000);
    assert_int_equal (qn_sink_queue_check (&q [1], 0, &f, fields, &w, err, sizeof err), 0);
    assert_int_equal (f.codec, QN_PQ_ZSTD);
    //  An empty file changes nothing.
    assert_int_equal (s_parse ("", q, 3, err), 3);
    assert_int_equal (s_parse ("\n# only a comment\n", q, 3, err), 3);
}

static void
test_parse_refusals (void **state)
{
    (void) state;
    static const struct { const char *text, *want; } cases [] = {
        { "format = jsonl\n", "line 1: format before any [queue] section" },
        { "[a]\nwindw = 1h\n", "line 2: unknown key 'windw'" },
        { "[a]\nwindow = 1h\nwindow = 2h\n", "line 3: window set twice in [a]" },
        { "[a]\n[b]\n[a]\n", "line 3: [a] appears twice" },
        { "[a]\njust words\n", "line 2: expected [queue] or key = value" },
        { "[a\n", "line 1: a section is [queue name]" },
        { "[]\n", "line 1: a queue name is 1 to 255 bytes" },
        { "[ ]\n", "line 1: a queue name is 1 to 255 bytes" },
        { "[a]b]\n", "line 1: a queue name is 1 to 255 bytes without [ or ]" },
        { "[a]\nformat = csv\n", "line 1: [a]: SINK_FORMAT: expected parquet or jsonl, got 'csv'" },
        { "[a]\nformat = jsonl\ncompression = zstd\n", "line 1: [a]: SINK_COMPRESSION: jsonl takes none or gzip" },
        { "[a]\ncompression = lz4\n", "line 1: [a]: SINK_COMPRESSION: parquet takes" },
        { "[x]\n\n[a]\nwindow = 7m\n", "line 3: [a]: SINK_WINDOW 7m does not divide a day evenly" },
        { "[a]\nwindow = 7m\n[b]\n", "line 1: [a]: SINK_WINDOW 7m" },
        { "[a]\nlate = later\n", "line 1: [a]: SINK_LATE: expected next or prefix, got 'later'" },
        { "[a]\nlateness_ms = -5\n", "line 2: lateness_ms is 0 to 86400000 (ms), got '-5'" },
        { "[a]\nlateness_ms = 1e3\n", "line 2: lateness_ms is 0 to 86400000" },
        { "[a]\nlateness_ms = 86400001\n", "line 2: lateness_ms is 0 to 86400000" },
        { "[a]\nlateness_ms =\n", "line 2: lateness_ms is 0 to 86400000 (ms), got ''" },
        { "[a]\nfields = amount:float\n", "line 1: [a]: SINK_FIELDS type \"float\"" },
        { "[a]\nformat = parquetparquetparquet\n", "line 2: format value is too long" },
        { NULL, NULL }
    };
    qn_sink_queue_conf_t q [QN_SINK_MAX_QUEUES];
    char err [400];
    for (int i = 0; cases [i].text; i++) {
        int n = s_parse (cases [i].text, q, 0, err);
        if (n != -1 || !strstr (err, cases [i].want))
            fail_msg ("case %d: %s -> %d '%s', want '%s'", i, cases [i].text, n, err, cases [i].want);
    }
    //  A NUL byte inside a line.
    const char nul [] = "[a]\nwindow = 1h\0x\n";
    assert_int_equal (qn_sink_config_parse (nul, sizeof nul - 1, &s_def, q, 0, QN_SINK_MAX_QUEUES, err, sizeof err), -1);
    assert_non_null (strstr (err, "line 2: a NUL byte"));
    //  More queues than the cap.
    char many [2048] = "";
    for (int i = 0; i < 5; i++)
        snprintf (many + strlen (many), sizeof many - strlen (many), "[q%d]\n", i);
    assert_int_equal (qn_sink_config_parse (many, strlen (many), &s_def, q, 0, 4, err, sizeof err), -1);
    assert_non_null (strstr (err, "line 5: at most 4 queues"));
    assert_int_equal (qn_sink_config_parse (many, strlen (many), &s_def, q, 0, 5, err, sizeof err), 5);
    //  A section for a queue of SINK_QUEUES does not add one.
    assert_int_equal (qn_sink_queues_split ("q3", &s_def, q, 5, err, sizeof err), 1);
    assert_int_equal (qn_sink_config_parse (many, strlen (many), &s_def, q, 1, 5, err, sizeof err), 5);
    assert_string_equal (q [0].queue, "q3");
    assert_string_equal (q [4].queue, "q4");
    //  A queue name of 255 bytes passes, 256 does not.
    char big [600];
    memset (big, 'n', sizeof big);
    big [0] = '[';
    memcpy (big + 256, "]\n", 3);
    assert_int_equal (s_parse (big, q, 0, err), 1);
    assert_int_equal (strlen (q [0].queue), 255);
    memcpy (big + 257, "]\n", 3);
    assert_int_equal (s_parse (big, q, 0, err), -1);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup (test_split, s_setup),
        cmocka_unit_test_setup (test_parse_sections, s_setup),
        cmocka_unit_test_setup (test_parse_refusals, s_setup),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
