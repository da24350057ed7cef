/*  wire/json_compact.c - compact re-writing of JSON text (see json_compact.h) */
#include "wire/json_compact.h"
#include "wire/json.h"

#include <stdbool.h>

static bool
s_verbatim (const qn_json_doc_t *doc, int key, const char *const *verbatim)
{
    for (const char *const *v = verbatim; v && *v; v++)
        if (qn_json_str_eq (doc, key, *v))
            return true;
    return false;
}

static void
s_raw (const qn_json_doc_t *doc, int tok, qn_buf_t *out)
{
    size_t len;
    const char *raw = qn_json_raw (doc, tok, &len);
    qn_buf_append (out, raw, len);
}

//  Writes value `tok`. Nesting is bounded by the parse's depth limit.
static void
s_value (const qn_json_doc_t *doc, int tok, const char *const *verbatim, qn_buf_t *out)
{
    int type = qn_json_type (doc, tok);
    if (type == QN_JSON_ARRAY) {
        qn_buf_putc (out, '[');
        bool first = true;
        for (int t = qn_json_first (doc, tok); t >= 0; t = qn_json_next_sibling (doc, tok, t)) {
            if (!first)
                qn_buf_putc (out, ',');
            first = false;
            s_value (doc, t, verbatim, out);
        }
        qn_buf_putc (out, ']');
    }
    else
    if (type == QN_JSON_OBJECT) {
        qn_buf_putc (out, '{');
        bool first = true;
        for (int k = qn_json_first (doc, tok); k >= 0; k = qn_json_next_sibling (doc, tok, k)) {
            if (!first)
                qn_buf_putc (out, ',');
            first = false;
            s_raw (doc, k, out);
            qn_buf_putc (out, ':');
            if (s_verbatim (doc, k, verbatim))
                s_raw (doc, k + 1, out);
            else
                s_value (doc, k + 1, verbatim, out);
        }
        qn_buf_putc (out, '}');
    }
    else
        s_raw (doc, tok, out);
}

int
qn_json_compact (const char *json, size_t len, const char *const *verbatim, qn_buf_t *out)
{
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    int rc = qn_json_parse (&doc, json, len, 256);
    if (rc == 0)
        s_value (&doc, 0, verbatim, out);
    qn_json_doc_free (&doc);
    return rc == 0 ? 0 : -1;
}
