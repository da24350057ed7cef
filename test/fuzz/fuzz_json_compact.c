/*  test/fuzz/fuzz_json_compact.c - re-writing JSON that PostgreSQL built
    (wire/json_compact.c): the bytes come from outside the process. The
    first input byte picks whether member "payload" is kept verbatim. On
    success the output parses again and compacting it once more gives the
    same bytes; on failure the output buffer is untouched.
*/
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/json.h"
#include "wire/json_compact.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static const char *const keep [] = { "payload", NULL };
    const char *const *verbatim = data [0] & 1 ? keep : NULL;
    const char *json = (const char *) data + 1;
    size_t len = size - 1;

    qn_buf_t out = QN_BUF_INIT;
    qn_buf_append (&out, "<", 1);
    if (qn_json_compact (json, len, verbatim, &out) != 0) {
        if (out.len != 1)
            abort ();
        qn_buf_free (&out);
        return 0;
    }
    //  The compact form is one JSON value that the broker's parser takes.
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    if (qn_json_parse (&doc, out.data + 1, out.len - 1, 256) != 0)
        abort ();
    qn_json_doc_free (&doc);
    //  Idempotent: the compact form is already compact.
    qn_buf_t again = QN_BUF_INIT;
    if (qn_json_compact (out.data + 1, out.len - 1, verbatim, &again) != 0
    ||  again.len != out.len - 1 || memcmp (again.data, out.data + 1, again.len) != 0)
        abort ();
    qn_buf_free (&again);
    qn_buf_free (&out);
    return 0;
}
