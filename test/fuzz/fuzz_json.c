/*  test/fuzz/fuzz_json.c - the JSON tokenizer (wire/json_parse.c) and the
    helpers the API uses on parsed documents; valid documents must
    re-serialise into documents that parse again.
*/
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/json.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    if (qn_json_parse (&doc, (const char *) data, size, 64) == 0) {
        qn_buf_t s = QN_BUF_INIT;
        for (uint32_t t = 0; t < doc.count; t++) {
            int64_t i;
            double d;
            bool b;
            (void) qn_json_int (&doc, (int) t, &i);
            (void) qn_json_number (&doc, (int) t, &d);
            (void) qn_json_bool (&doc, (int) t, &b);
            qn_buf_reset (&s);
            if (qn_json_str (&doc, (int) t, &s) >= 0) {
                //  Every string re-escapes into a valid JSON string.
                qn_buf_t out = QN_BUF_INIT;
                qn_jw_t w;
                qn_jw_init (&w, &out);
                qn_jw_strn (&w, s.data ? s.data : "", s.len);
                qn_json_doc_t again;
                qn_json_doc_init (&again);
                if (qn_json_parse (&again, out.data, out.len, 4) != 0)
                    abort ();
                qn_json_doc_free (&again);
                qn_buf_free (&out);
            }
        }
        (void) qn_json_get (&doc, 0, "items");
        (void) qn_json_child (&doc, 0, 3);
        qn_buf_free (&s);
    }
    qn_json_doc_free (&doc);
    return 0;
}
