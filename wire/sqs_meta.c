/*  wire/sqs_meta.c - SQS message metadata as stored beside a message
    Message attributes travel to PostgreSQL (queen.sqs_meta.attrs, jsonb) as
        {"<name>": ["<DataType>", "<value>"], ...}
    where value is the string itself for String/Number types and base64 of
    the raw bytes for Binary types; reading them back gives the attributes
    exactly as sent (so MD5OfMessageAttributes matches). Also the name
    filters of ReceiveMessage (All, .*, prefix.*, exact names). Pure.
*/
#include "wire/sqs.h"
#include "wire/json.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

static void
s_json_str (qn_buf_t *out, const char *s, size_t len)
{
    qn_jw_t w;
    qn_jw_init (&w, out);
    qn_jw_strn (&w, s, len);
}

void
qn_sqs_attrs_to_json (const qn_sqs_attr_t *attrs, uint32_t count, qn_buf_t *out)
{
    qn_buf_putc (out, '{');
    for (uint32_t i = 0; i < count; i++) {
        const qn_sqs_attr_t *a = &attrs [i];
        if (i)
            qn_buf_putc (out, ',');
        s_json_str (out, a->name.ptr, a->name.len);
        qn_buf_puts (out, ":[");
        s_json_str (out, a->data_type.ptr, a->data_type.len);
        qn_buf_putc (out, ',');
        if (a->binary) {
            size_t cap = sodium_base64_ENCODED_LEN (a->value.len, sodium_base64_VARIANT_ORIGINAL);
            char *b64 = qn_malloc (cap);
            sodium_bin2base64 (b64, cap, (const unsigned char *) a->value.ptr, a->value.len,
                               sodium_base64_VARIANT_ORIGINAL);
            s_json_str (out, b64, cap - 1);
            free (b64);
        }
        else
            s_json_str (out, a->value.ptr, a->value.len);
        qn_buf_putc (out, ']');
    }
    qn_buf_putc (out, '}');
}

int
qn_sqs_attrs_from_json (const char *json, size_t len, qn_sqs_attr_t *attrs, uint32_t cap,
                        uint32_t *count, qn_buf_t *store)
{
    *count = 0;
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    int rc = -1;
    if (qn_json_parse (&doc, json, len, 8) || qn_json_type (&doc, 0) != QN_JSON_OBJECT)
        goto done;
    //  Strings are appended to `store` first and pointed at afterwards, as
    //  the buffer may move while it grows.
    size_t offs [64][3], lens [64][3];
    uint32_t n = 0;
    for (int t = qn_json_first (&doc, 0); t >= 0 && n < cap && n < 64;
         t = qn_json_next_sibling (&doc, 0, t)) {
        int v = t + 1;
        if (qn_json_type (&doc, v) != QN_JSON_ARRAY || qn_json_size (&doc, v) != 2)
            goto done;
        int dt = qn_json_child (&doc, v, 0), val = qn_json_child (&doc, v, 1);
        if (qn_json_type (&doc, dt) != QN_JSON_STRING || qn_json_type (&doc, val) != QN_JSON_STRING)
            goto done;
        int toks [3] = { t, dt, val };
        for (int k = 0; k < 3; k++) {
            offs [n][k] = store->len;
            qn_json_str (&doc, toks [k], store);
            lens [n][k] = store->len - offs [n][k];
            qn_buf_putc (store, 0);
        }
        bool binary = lens [n][1] >= 6 && memcmp (store->data + offs [n][1], "Binary", 6) == 0;
        if (binary) {
            //  The bytes replace their base64 (never longer) in `store`.
            size_t bin_len = 0;
            char *p = store->data + offs [n][2];
            char *b64 = qn_strndup (p, lens [n][2]);
            int bad = sodium_base642bin ((unsigned char *) p, lens [n][2] + 1, b64, lens [n][2],
                                         NULL, &bin_len, NULL, sodium_base64_VARIANT_ORIGINAL);
            free (b64);
            if (bad)
                goto done;
            lens [n][2] = bin_len;
        }
        attrs [n].binary = binary;
        attrs [n].list_value = false;
        n++;
    }
    for (uint32_t i = 0; i < n; i++) {
        attrs [i].name = (qn_sqs_str_t) { store->data + offs [i][0], lens [i][0] };
        attrs [i].data_type = (qn_sqs_str_t) { store->data + offs [i][1], lens [i][1] };
        attrs [i].value = (qn_sqs_str_t) { store->data + offs [i][2], lens [i][2] };
    }
    *count = n;
    rc = 0;
done:
    qn_json_doc_free (&doc);
    return rc;
}

bool
qn_sqs_name_wanted (const qn_sqs_str_t *names, uint32_t count, const char *name, size_t len)
{
    for (uint32_t i = 0; i < count; i++) {
        const qn_sqs_str_t *w = &names [i];
        if ((w->len == 3 && memcmp (w->ptr, "All", 3) == 0)
            || (w->len == 2 && memcmp (w->ptr, ".*", 2) == 0))
            return true;
        if (w->len == len && memcmp (w->ptr, name, len) == 0)
            return true;
        //  "prefix.*": names starting with "prefix."
        if (w->len >= 3 && memcmp (w->ptr + w->len - 2, ".*", 2) == 0
            && len >= w->len - 1 && memcmp (w->ptr, name, w->len - 1) == 0)
            return true;
    }
    return false;
}
