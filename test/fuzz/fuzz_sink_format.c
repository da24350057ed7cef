/*  test/fuzz/fuzz_sink_format.c - what the sink reads from outside
    (wire/sink_format.c, wire/parquet.c): the broker's createdAt text, the
    SINK_WINDOW and SINK_FIELDS settings, and message payloads turned into
    Parquet rows with extracted field columns and into JSONL.
    Input: first byte selects the target, the rest is the text.
*/
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "wire/json.h"
#include "wire/sink_format.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t which = data [0];
    const char *text = (const char *) data + 1;
    size_t len = size - 1;
    char *z = malloc (len + 1);
    memcpy (z, text, len);
    z [len] = 0;
    char err [256];
    switch (which % 4) {
        case 0: {
            int64_t us;
            if (qn_sink_parse_iso_us (text, len, &us) == 0) {
                char iso [32];
                qn_sink_iso_us (us, iso);
            }
            break;
        }
        case 1: {
            int64_t w;
            if (qn_sink_window_parse (z, &w, err, sizeof err) == 0) {
                char label [17];
                qn_sink_window_label (qn_sink_window_start ((int64_t) len * 123456789, w), label);
                qn_buf_t key = QN_BUF_INIT;
                qn_sink_object_key (&key, z, z, qn_sink_window_start (0, w), 7, "parquet");
                qn_buf_free (&key);
            }
            break;
        }
        case 2: {
            qn_sink_field_t fields [QN_SINK_MAX_FIELDS];
            (void) qn_sink_fields_parse (z, fields, QN_SINK_MAX_FIELDS, err, sizeof err);
            break;
        }
        default: {
            //  A payload (valid JSON only, as the broker hands out) through
            //  field extraction into Parquet, and into JSONL.
            qn_json_doc_t doc;
            qn_json_doc_init (&doc);
            if (qn_json_parse (&doc, text, len, 0) == 0) {
                qn_sink_field_t fields [QN_SINK_MAX_FIELDS];
                int n = qn_sink_fields_parse ("a:string,a.b:int64,c:double,d:bool,e:json,f:timestamp,g.h.i:string",
                                              fields, QN_SINK_MAX_FIELDS, err, sizeof err);
                qn_sink_record_t rec = { "id", 2, "t", 1, "p", 1, 1, NULL, 0, text, len };
                qn_sink_format_t f = { QN_SINK_PARQUET, QN_PQ_SNAPPY, false, 0, fields, (uint32_t) n };
                qn_buf_t out = QN_BUF_INIT;
                (void) qn_sink_file_write (&f, &rec, 1, &out);
                qn_buf_reset (&out);
                f.kind = QN_SINK_JSONL;
                (void) qn_sink_file_write (&f, &rec, 1, &out);
                qn_buf_free (&out);
            }
            qn_json_doc_free (&doc);
            break;
        }
    }
    free (z);
    return 0;
}
