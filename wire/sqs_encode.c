/*  wire/sqs_encode.c - SQS answers: query-protocol XML and JSON 1.0, and errors
    One writer (qn_sqs_w_*) for both protocols: the caller names each member
    once with its JSON key and, for lists and maps, the XML element of an
    item; the writer emits the query protocol's flattened XML (§4.2) or the
    JSON 1.0 shape (§4.3). XML text escapes & < > " ' and writes CR as
    &#xD; so an XML parser hands back the exact body (MD5OfBody); JSON
    escapes quotes, backslashes and control characters. Pure.
*/
#include "wire/sqs.h"

#include <assert.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#define S_XMLNS "http://queue.amazonaws.com/doc/2012-11-05/"

enum { F_TOP = 1, F_LIST, F_OBJ, F_MAP };

void
qn_sqs_xml_escape (qn_buf_t *out, const char *s, size_t len)
{
    size_t run = 0;
    for (size_t i = 0; i < len; i++) {
        const char *rep = NULL;
        switch (s [i]) {
            case '&': rep = "&amp;"; break;
            case '<': rep = "&lt;"; break;
            case '>': rep = "&gt;"; break;
            case '"': rep = "&quot;"; break;
            case '\'': rep = "&apos;"; break;
            case '\r': rep = "&#xD;"; break;
            default: break;
        }
        if (rep) {
            qn_buf_append (out, s + run, i - run);
            qn_buf_puts (out, rep);
            run = i + 1;
        }
    }
    qn_buf_append (out, s + run, len - run);
}

static void
s_json_str (qn_buf_t *out, const char *s, size_t len)
{
    qn_buf_putc (out, '"');
    size_t run = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char) s [i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        qn_buf_append (out, s + run, i - run);
        run = i + 1;
        switch (c) {
            case '"': qn_buf_puts (out, "\\\""); break;
            case '\\': qn_buf_puts (out, "\\\\"); break;
            case '\n': qn_buf_puts (out, "\\n"); break;
            case '\r': qn_buf_puts (out, "\\r"); break;
            case '\t': qn_buf_puts (out, "\\t"); break;
            default: qn_buf_printf (out, "\\u%04x", c); break;
        }
    }
    qn_buf_append (out, s + run, len - run);
    qn_buf_putc (out, '"');
}

static void
s_base64 (qn_buf_t *out, const char *bin, size_t len)
{
    size_t cap = sodium_base64_ENCODED_LEN (len, sodium_base64_VARIANT_ORIGINAL);
    qn_buf_reserve (out, cap);
    sodium_bin2base64 (out->data + out->len, cap, (const unsigned char *) bin, len,
                       sodium_base64_VARIANT_ORIGINAL);
    out->len += cap - 1;
}

//  JSON: a comma before every member or item but the first of its frame.
static void
s_sep (qn_sqs_w_t *w)
{
    if (w->proto != QN_SQS_JSON)
        return;
    if (w->stack [w->depth].need_comma)
        qn_buf_putc (w->out, ',');
    w->stack [w->depth].need_comma = true;
}

static void
s_jkey (qn_sqs_w_t *w, const char *key)
{
    s_sep (w);
    s_json_str (w->out, key, strlen (key));
    qn_buf_putc (w->out, ':');
}

static void
s_push (qn_sqs_w_t *w, uint8_t kind, const char *xml)
{
    assert (w->depth + 1 < sizeof w->stack / sizeof w->stack [0]);
    w->depth++;
    w->stack [w->depth].kind = kind;
    w->stack [w->depth].xml = xml;
    w->stack [w->depth].need_comma = false;
}

static void
s_xml_elem (qn_buf_t *out, const char *name, const char *s, size_t len)
{
    qn_buf_printf (out, "<%s>", name);
    qn_sqs_xml_escape (out, s, len);
    qn_buf_printf (out, "</%s>", name);
}

void
qn_sqs_w_begin (qn_sqs_w_t *w, qn_sqs_proto_t proto, qn_buf_t *out, qn_sqs_op_t op)
{
    memset (w, 0, sizeof *w);
    w->proto = proto;
    w->out = out;
    w->op = qn_sqs_op_name (op);
    w->stack [0].kind = F_TOP;
    if (proto == QN_SQS_JSON) {
        qn_buf_putc (out, '{');
        return;
    }
    static const bool has_result [] = {
        false,
#define X(e, n, r) r,
        QN_SQS_OPS (X)
#undef X
    };
    w->has_result = op > 0 && op < QN_SQS_OP_COUNT && has_result [op];
    qn_buf_printf (out, "<?xml version=\"1.0\"?><%sResponse xmlns=\"" S_XMLNS "\">", w->op);
    if (w->has_result)
        qn_buf_printf (out, "<%sResult>", w->op);
}

void
qn_sqs_w_end (qn_sqs_w_t *w, const char *request_id)
{
    assert (w->depth == 0);
    if (w->proto == QN_SQS_JSON) {
        qn_buf_putc (w->out, '}');
        return;
    }
    if (w->has_result)
        qn_buf_printf (w->out, "</%sResult>", w->op);
    qn_buf_puts (w->out, "<ResponseMetadata>");
    s_xml_elem (w->out, "RequestId", request_id, strlen (request_id));
    qn_buf_printf (w->out, "</ResponseMetadata></%sResponse>", w->op);
}

void
qn_sqs_w_str (qn_sqs_w_t *w, const char *key, const char *s, size_t len)
{
    if (w->proto == QN_SQS_JSON) {
        s_jkey (w, key);
        s_json_str (w->out, s, len);
    }
    else
        s_xml_elem (w->out, key, s, len);
}

void
qn_sqs_w_cstr (qn_sqs_w_t *w, const char *key, const char *s)
{
    qn_sqs_w_str (w, key, s, strlen (s));
}

void
qn_sqs_w_int (qn_sqs_w_t *w, const char *key, int64_t v)
{
    if (w->proto == QN_SQS_JSON) {
        s_jkey (w, key);
        qn_buf_printf (w->out, "%lld", (long long) v);
    }
    else
        qn_buf_printf (w->out, "<%s>%lld</%s>", key, (long long) v, key);
}

void
qn_sqs_w_bool (qn_sqs_w_t *w, const char *key, bool v)
{
    if (w->proto == QN_SQS_JSON) {
        s_jkey (w, key);
        qn_buf_puts (w->out, v? "true": "false");
    }
    else
        qn_buf_printf (w->out, "<%s>%s</%s>", key, v? "true": "false", key);
}

void
qn_sqs_w_list (qn_sqs_w_t *w, const char *json_key, const char *xml_item)
{
    if (w->proto == QN_SQS_JSON) {
        s_jkey (w, json_key);
        qn_buf_putc (w->out, '[');
    }
    s_push (w, F_LIST, xml_item);
}

void
qn_sqs_w_item_str (qn_sqs_w_t *w, const char *s, size_t len)
{
    assert (w->stack [w->depth].kind == F_LIST);
    if (w->proto == QN_SQS_JSON) {
        s_sep (w);
        s_json_str (w->out, s, len);
    }
    else
        s_xml_elem (w->out, w->stack [w->depth].xml, s, len);
}

void
qn_sqs_w_item_obj (qn_sqs_w_t *w)
{
    assert (w->stack [w->depth].kind == F_LIST);
    const char *xml = w->stack [w->depth].xml;
    if (w->proto == QN_SQS_JSON) {
        s_sep (w);
        qn_buf_putc (w->out, '{');
    }
    else
        qn_buf_printf (w->out, "<%s>", xml);
    s_push (w, F_OBJ, xml);
}

void
qn_sqs_w_item_obj_end (qn_sqs_w_t *w)
{
    assert (w->stack [w->depth].kind == F_OBJ);
    if (w->proto == QN_SQS_JSON)
        qn_buf_putc (w->out, '}');
    else
        qn_buf_printf (w->out, "</%s>", w->stack [w->depth].xml);
    w->depth--;
}

void
qn_sqs_w_list_end (qn_sqs_w_t *w)
{
    assert (w->stack [w->depth].kind == F_LIST);
    if (w->proto == QN_SQS_JSON)
        qn_buf_putc (w->out, ']');
    w->depth--;
}

void
qn_sqs_w_map (qn_sqs_w_t *w, const char *json_key, const char *xml_entry)
{
    if (w->proto == QN_SQS_JSON) {
        s_jkey (w, json_key);
        qn_buf_putc (w->out, '{');
    }
    s_push (w, F_MAP, xml_entry);
}

void
qn_sqs_w_map_str (qn_sqs_w_t *w, const char *k, size_t klen, const char *v, size_t vlen)
{
    assert (w->stack [w->depth].kind == F_MAP);
    if (w->proto == QN_SQS_JSON) {
        s_sep (w);
        s_json_str (w->out, k, klen);
        qn_buf_putc (w->out, ':');
        s_json_str (w->out, v, vlen);
        return;
    }
    const char *xml = w->stack [w->depth].xml;
    //  Tags are <Tag><Key>..</Key><Value>..</Value></Tag>; the rest Name/Value.
    const char *kname = strcmp (xml, "Tag") == 0? "Key": "Name";
    qn_buf_printf (w->out, "<%s>", xml);
    s_xml_elem (w->out, kname, k, klen);
    s_xml_elem (w->out, "Value", v, vlen);
    qn_buf_printf (w->out, "</%s>", xml);
}

void
qn_sqs_w_map_attr (qn_sqs_w_t *w, const qn_sqs_attr_t *a)
{
    assert (w->stack [w->depth].kind == F_MAP);
    const char *vkey = a->binary? "BinaryValue": "StringValue";
    if (w->proto == QN_SQS_JSON) {
        s_sep (w);
        s_json_str (w->out, a->name.ptr, a->name.len);
        qn_buf_puts (w->out, ":{");
        s_json_str (w->out, vkey, strlen (vkey));
        qn_buf_putc (w->out, ':');
        if (a->binary) {
            qn_buf_putc (w->out, '"');
            s_base64 (w->out, a->value.ptr, a->value.len);
            qn_buf_putc (w->out, '"');
        }
        else
            s_json_str (w->out, a->value.ptr, a->value.len);
        qn_buf_puts (w->out, ",\"DataType\":");
        s_json_str (w->out, a->data_type.ptr, a->data_type.len);
        qn_buf_putc (w->out, '}');
        return;
    }
    const char *xml = w->stack [w->depth].xml;
    qn_buf_printf (w->out, "<%s>", xml);
    s_xml_elem (w->out, "Name", a->name.ptr, a->name.len);
    qn_buf_printf (w->out, "<Value><%s>", vkey);
    if (a->binary)
        s_base64 (w->out, a->value.ptr, a->value.len);
    else
        qn_sqs_xml_escape (w->out, a->value.ptr, a->value.len);
    qn_buf_printf (w->out, "</%s>", vkey);
    s_xml_elem (w->out, "DataType", a->data_type.ptr, a->data_type.len);
    qn_buf_printf (w->out, "</Value></%s>", xml);
}

void
qn_sqs_w_map_end (qn_sqs_w_t *w)
{
    assert (w->stack [w->depth].kind == F_MAP);
    if (w->proto == QN_SQS_JSON)
        qn_buf_putc (w->out, '}');
    w->depth--;
}

void
qn_sqs_w_failed (qn_sqs_w_t *w, const char *id, size_t id_len, const qn_sqs_error_t *err)
{
    qn_sqs_w_item_obj (w);
    qn_sqs_w_str (w, "Id", id, id_len);
    qn_sqs_w_bool (w, "SenderFault", qn_sqs_code_sender (err->code));
    qn_sqs_w_cstr (w, "Code", qn_sqs_code_query (err->code));
    qn_sqs_w_cstr (w, "Message", err->message);
    qn_sqs_w_item_obj_end (w);
}

int
qn_sqs_write_error (qn_sqs_proto_t proto, const qn_sqs_error_t *err, const char *request_id,
                    qn_buf_t *out, char *query_error, size_t query_error_len)
{
    bool sender = qn_sqs_code_sender (err->code);
    if (proto == QN_SQS_JSON) {
        qn_buf_puts (out, "{\"__type\":");
        char type [128];
        snprintf (type, sizeof type, "com.amazonaws.sqs#%s", qn_sqs_code_shape (err->code));
        s_json_str (out, type, strlen (type));
        qn_buf_puts (out, ",\"message\":");
        s_json_str (out, err->message, strlen (err->message));
        qn_buf_putc (out, '}');
        if (query_error)
            snprintf (query_error, query_error_len, "%s;%s", qn_sqs_code_query (err->code),
                      sender? "Sender": "Receiver");
    }
    else {
        qn_buf_puts (out, "<?xml version=\"1.0\"?><ErrorResponse xmlns=\"" S_XMLNS "\"><Error>");
        qn_buf_printf (out, "<Type>%s</Type>", sender? "Sender": "Receiver");
        const char *code = qn_sqs_code_query (err->code);
        s_xml_elem (out, "Code", code, strlen (code));
        s_xml_elem (out, "Message", err->message, strlen (err->message));
        qn_buf_puts (out, "<Detail/></Error>");
        s_xml_elem (out, "RequestId", request_id, strlen (request_id));
        qn_buf_puts (out, "</ErrorResponse>");
    }
    return qn_sqs_code_status (err->code);
}

const char *
qn_sqs_content_type (qn_sqs_proto_t proto)
{
    return proto == QN_SQS_JSON? "application/x-amz-json-1.0": "text/xml";
}
