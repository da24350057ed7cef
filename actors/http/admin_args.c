/*  actors/http/admin_args.c - the arguments of the admin and read API
    (actors/http/admin.c, the routes; admin.h): each route's argument spec
    turns path parameters, query parameters and body members into the text
    SQL parameters of its function, checked before any SQL runs.
    Receives  nothing: called by admin.c with one request
    Sends     a 400 naming the field, through the codec, on bad input
    Owns      the request's parameter copies (qn_ha_req_t), freed by
              qn_ha_req_free
    Failure   never crashes on input: bad input is a 400 and -1
*/
#include "actors/http/admin.h"
#include "wire/ids.h"

#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

// ------------------------------------------------------------------ parameters
//  Appends one SQL parameter (a copy of val, or SQL NULL) with its cast.
void
qn_ha_emit (qn_ha_req_t *req, const char *val, size_t len, const char *cast)
{
    assert (req->n < QN_HA_MAX_SQL);
    req->vals [req->n] = val ? qn_strndup (val, len) : NULL;
    req->casts [req->n] = cast;
    req->n++;
}

//  Appends an integer parameter.
static void
s_emit_int (qn_ha_req_t *req, int64_t v, const char *cast)
{
    char num [32];
    int len = snprintf (num, sizeof num, "%" PRId64, v);
    qn_ha_emit (req, num, (size_t) len, cast);
}

//  Frees what the request's parameters own.
void
qn_ha_req_free (qn_ha_req_t *req)
{
    for (int i = 0; i < req->n; i++)
        free (req->vals [i]);
    free (req->wake_queue);
    free (req->group);
}

//  The raw input of an argument: text (path, query, or an unescaped body
//  string in `tmp`) or a body token. Returns false when absent.
typedef struct {
    const char *text;           //  NUL-terminated, or NULL for a non-string body value
    size_t len;
    int tok;                    //  Body token, or -1
    bool has_nul;               //  Body string held a \u0000
} s_in_t;

static bool
s_input (qn_http_ctx_t *ctx, const qn_ha_arg_t *arg, const qn_json_doc_t *doc, qn_buf_t *tmp, s_in_t *in)
{
    memset (in, 0, sizeof *in);
    in->tok = -1;
    if (arg->src == QN_HA_PATH) {
        in->text = qn_http_param (ctx, arg->index);
        in->len = ctx->param_len [arg->index];
        return in->text != NULL;
    }
    if (arg->src == QN_HA_QUERY || arg->src == QN_HA_ANY) {
        size_t len = 0;
        const char *v = qn_url_param (&ctx->url, arg->name, &len);
        if (v && len) {
            in->text = v;
            in->len = len;
            return true;
        }
    }
    if ((arg->src == QN_HA_BODY || arg->src == QN_HA_ANY) && doc) {
        int tok = qn_json_get (doc, 0, arg->name);
        if (tok < 0 || qn_json_is_null (doc, tok))
            return false;
        in->tok = tok;
        if (qn_json_type (doc, tok) == QN_JSON_STRING) {
            qn_buf_reset (tmp);
            in->has_nul = qn_json_str (doc, tok, tmp) == 1;
            in->text = tmp->data ? tmp->data : "";
            in->len = tmp->len;
        }
        return true;
    }
    return false;
}

//  A name or free text: a string of at most `max` bytes of UTF-8.
static int
s_check_text (qn_http_ctx_t *ctx, const qn_ha_arg_t *arg, const s_in_t *in, size_t max)
{
    if (!in->text) {
        qn_http_reply_errorf (ctx, 400, "Invalid %s: must be a string", arg->name);
        return -1;
    }
    if (in->len > max) {
        qn_http_reply_errorf (ctx, 400, "Invalid %s: longer than %zu bytes", arg->name, max);
        return -1;
    }
    if (in->has_nul || !qn_utf8_valid (in->text, in->len)) {
        qn_http_reply_errorf (ctx, 400, "Invalid %s: not valid UTF-8 text", arg->name);
        return -1;
    }
    return 0;
}

//  Decimal integer from text ("12", "-3"); false if not one.
static bool
s_parse_int (const char *s, size_t len, int64_t *out)
{
    if (!len || len > (size_t) (19 + (s [0] == '-' || s [0] == '+')))
        return false;
    char tmp [24];
    memcpy (tmp, s, len);
    tmp [len] = 0;
    char *end;
    long long v = strtoll (tmp, &end, 10);
    if (*end || end == tmp || !((tmp [0] >= '0' && tmp [0] <= '9') || tmp [0] == '-' || tmp [0] == '+'))
        return false;
    *out = v;
    return true;
}

//  An integer within the argument's bounds -> int.
static int
s_arg_int (qn_http_ctx_t *ctx, qn_ha_req_t *req, const qn_ha_arg_t *arg, const qn_json_doc_t *doc, const s_in_t *in)
{
    int64_t v = 0;
    bool ok;
    if (in->tok >= 0 && !in->text)
        ok = qn_json_int (doc, in->tok, &v) == 0;
    else
        ok = s_parse_int (in->text, in->len, &v);
    if (!ok && arg->src != QN_HA_BODY && arg->dflt) {
        //  Spec 1.5: an unparsable query integer means "use the default".
        s_parse_int (arg->dflt, strlen (arg->dflt), &v);
        ok = true;
    }
    if (!ok) {
        qn_http_reply_errorf (ctx, 400, "Invalid %s: must be an integer", arg->name);
        return -1;
    }
    if (v < arg->min || v > arg->max) {
        qn_http_reply_errorf (ctx, 400, "Invalid %s: must be between %" PRId64 " and %" PRId64,
                              arg->name, arg->min, arg->max);
        return -1;
    }
    s_emit_int (req, v, "int");
    return 0;
}

//  A JSON boolean (body) or a spec 1.5 query boolean -> bool.
static int
s_arg_bool (qn_http_ctx_t *ctx, qn_ha_req_t *req, const qn_ha_arg_t *arg, const qn_json_doc_t *doc, const s_in_t *in)
{
    bool v;
    if (in->tok >= 0) {
        if (qn_json_bool (doc, in->tok, &v)) {
            qn_http_reply_errorf (ctx, 400, "Invalid %s: must be a boolean", arg->name);
            return -1;
        }
    }
    else
        //  Spec 1.5: "true" or "1" is true, any other value false.
        v = (in->len == 4 && !strcmp (in->text, "true")) || (in->len == 1 && in->text [0] == '1');
    qn_ha_emit (req, v ? "true" : "false", v ? 4 : 5, "bool");
    return 0;
}

//  An ISO-8601 timestamp -> timestamptz (and, when `sent`, the text as
//  sent first).
static int
s_arg_ts (qn_http_ctx_t *ctx, qn_ha_req_t *req, const qn_ha_arg_t *arg, const s_in_t *in, bool sent)
{
    int64_t us;
    if (!in->text) {
        qn_http_reply_errorf (ctx, 400, "Invalid %s: must be a timestamp string", arg->name);
        return -1;
    }
    if (in->len > 64 || qn_ts_parse (in->text, in->len, &us)) {
        qn_http_reply_errorf (ctx, 400, "Invalid %s: not a timestamp", arg->name);
        return -1;
    }
    if (sent) {
        if (s_check_text (ctx, arg, in, 64))
            return -1;
        qn_ha_emit (req, in->text, in->len, "text");
    }
    char ts [32];
    qn_ts_us (us, ts);
    qn_ha_emit (req, ts, strlen (ts), "timestamptz");
    return 0;
}

//  One of the argument's choices -> text.
static int
s_arg_enum (qn_http_ctx_t *ctx, qn_ha_req_t *req, const qn_ha_arg_t *arg, const s_in_t *in)
{
    if (s_check_text (ctx, arg, in, QN_HA_TEXT_MAX))
        return -1;
    for (const char *c = arg->choices; *c; ) {
        const char *bar = strchr (c, '|');
        size_t len = bar ? (size_t) (bar - c) : strlen (c);
        if (len == in->len && !memcmp (c, in->text, len)) {
            qn_ha_emit (req, in->text, in->len, "text");
            return 0;
        }
        c += len + (bar ? 1 : 0);
    }
    char list [128];
    snprintf (list, sizeof list, "%s", arg->choices);
    for (char *p = list; *p; p++)
        if (*p == '|')
            *p = ',';
    qn_http_reply_errorf (ctx, 400, "Invalid %s: must be one of %s", arg->name, list);
    return -1;
}

//  One element of an id list: a message id (seq) or a dead-letter id.
static int
s_id_add (const char *s, size_t len, qn_buf_t *seqs, qn_buf_t *dlq, int *count)
{
    int64_t id;
    if (len == QN_ID_STR_LEN && !qn_id_parse (QN_ID_MESSAGE, s, len, &id))
        qn_buf_printf (seqs, "%s%" PRId64, seqs->len > 1 ? "," : "", id);
    else
    if (len == QN_ID_STR_LEN && !qn_id_parse (QN_ID_DEAD_LETTER, s, len, &id))
        qn_buf_printf (dlq, "%s%" PRId64, dlq->len > 1 ? "," : "", id);
    else
        return -1;
    return ++*count > QN_HA_MAX_IDS ? -1 : 0;
}

//  ids: a JSON array of id strings, or a comma-separated query value.
static int
s_arg_ids (qn_http_ctx_t *ctx, qn_ha_req_t *req, const qn_ha_arg_t *arg, const qn_json_doc_t *doc, const s_in_t *in)
{
    qn_buf_t seqs = QN_BUF_INIT, dlq = QN_BUF_INIT;
    qn_buf_putc (&seqs, '{');
    qn_buf_putc (&dlq, '{');
    int count = 0, rc = 0;
    if (in->tok >= 0 && !in->text) {
        if (qn_json_type (doc, in->tok) != QN_JSON_ARRAY)
            rc = -1;
        for (int t = rc ? -1 : qn_json_first (doc, in->tok); t >= 0 && !rc;
             t = qn_json_next_sibling (doc, in->tok, t)) {
            size_t len;
            const char *raw = qn_json_raw (doc, t, &len);
            //  Ids never need escapes: take the text between the quotes.
            if (qn_json_type (doc, t) != QN_JSON_STRING || len < 2
            ||  s_id_add (raw + 1, len - 2, &seqs, &dlq, &count))
                rc = -1;
        }
    }
    else
        for (const char *p = in->text, *end = in->text + in->len; p < end && !rc; ) {
            const char *comma = memchr (p, ',', (size_t) (end - p));
            const char *stop = comma ? comma : end;
            if (s_id_add (p, (size_t) (stop - p), &seqs, &dlq, &count))
                rc = -1;
            p = stop + 1;
        }
    if (rc)
        qn_http_reply_errorf (ctx, 400, "Invalid %s: must be a list of at most %d message or "
                              "dead-letter ids", arg->name, QN_HA_MAX_IDS);
    else {
        qn_buf_putc (&seqs, '}');
        qn_buf_putc (&dlq, '}');
        qn_ha_emit (req, seqs.data, seqs.len, "bigint[]");
        qn_ha_emit (req, dlq.data, dlq.len, "bigint[]");
    }
    qn_buf_free (&seqs);
    qn_buf_free (&dlq);
    return rc;
}

//  A partition seek offset: a message id, or the offset as a number or
//  decimal string.
static int
s_arg_offset (qn_http_ctx_t *ctx, qn_ha_req_t *req, const qn_ha_arg_t *arg, const qn_json_doc_t *doc, const s_in_t *in)
{
    int64_t v;
    bool ok;
    if (in->tok >= 0 && !in->text)
        ok = qn_json_int (doc, in->tok, &v) == 0;
    else
        ok = (in->len == QN_ID_STR_LEN && !qn_id_parse (QN_ID_MESSAGE, in->text, in->len, &v))
          || s_parse_int (in->text, in->len, &v);
    if (!ok || v < 0) {
        qn_http_reply_errorf (ctx, 400, "Invalid %s: must be a message id or a non-negative integer",
                              arg->name);
        return -1;
    }
    s_emit_int (req, v, "bigint");
    return 0;
}

//  Validates one argument and appends its SQL parameter(s). Returns 0, or
//  -1 after answering 400.
int
qn_ha_arg (qn_http_ctx_t *ctx, qn_ha_req_t *req, const qn_ha_arg_t *arg, const qn_json_doc_t *doc, qn_buf_t *tmp)
{
    s_in_t in;
    if (arg->type == QN_HA_CONST) {
        qn_ha_emit (req, arg->choices, strlen (arg->choices), "text");
        return 0;
    }
    if (!s_input (ctx, arg, doc, tmp, &in)) {
        if (arg->required) {
            if (arg->missing)
                qn_http_reply_error (ctx, 400, arg->missing);
            else
                qn_http_reply_errorf (ctx, 400, "%s is required", arg->name);
            return -1;
        }
        if (arg->dflt) {
            in.text = arg->dflt;
            in.len = strlen (arg->dflt);
        }
        else {
            //  Absent, no default: SQL NULL (twice for two-parameter types).
            const char *cast = arg->type == QN_HA_INT ? "int" : arg->type == QN_HA_BOOL ? "bool"
                             : arg->type == QN_HA_TS ? "timestamptz" : arg->type == QN_HA_OFFSET ? "bigint" : "text";
            if (arg->type == QN_HA_IDS) {
                qn_ha_emit (req, NULL, 0, "bigint[]");
                qn_ha_emit (req, NULL, 0, "bigint[]");
            }
            else
            if (arg->type == QN_HA_TS_SENT) {
                qn_ha_emit (req, NULL, 0, "text");
                qn_ha_emit (req, NULL, 0, "timestamptz");
            }
            else
                qn_ha_emit (req, NULL, 0, cast);
            return 0;
        }
    }
    if (in.has_nul) {
        qn_http_reply_errorf (ctx, 400, "Invalid %s: contains a NUL character", arg->name);
        return -1;
    }
    switch (arg->type) {
        case QN_HA_NAME:
            if (s_check_text (ctx, arg, &in, arg->max > 0 ? (size_t) arg->max : QN_HA_NAME_MAX))
                return -1;
            qn_ha_emit (req, in.text, in.len, "text");
            return 0;
        case QN_HA_INT:
            return s_arg_int (ctx, req, arg, doc, &in);
        case QN_HA_BOOL:
            return s_arg_bool (ctx, req, arg, doc, &in);
        case QN_HA_TS:
            return s_arg_ts (ctx, req, arg, &in, false);
        case QN_HA_TS_SENT:
            return s_arg_ts (ctx, req, arg, &in, true);
        case QN_HA_ENUM:
            return s_arg_enum (ctx, req, arg, &in);
        case QN_HA_PARTITION_ID: {
            int64_t id;
            if (!in.text || !qn_uuid_valid (in.text, in.len)) {
                qn_http_reply_errorf (ctx, 400, "Invalid %s: not a UUID", arg->name);
                return -1;
            }
            if (qn_id_parse (QN_ID_PARTITION, in.text, in.len, &id))
                id = -1;            //  A UUID, but none of ours: not found
            s_emit_int (req, id, "bigint");
            return 0;
        }
        case QN_HA_TXN: {
            int64_t seq;
            if (s_check_text (ctx, arg, &in, QN_HA_TEXT_MAX))
                return -1;
            qn_ha_emit (req, in.text, in.len, "text");
            if (in.len == QN_ID_STR_LEN && !qn_id_parse (QN_ID_MESSAGE, in.text, in.len, &seq))
                s_emit_int (req, seq, "bigint");
            else
                qn_ha_emit (req, NULL, 0, "bigint");
            return 0;
        }
        case QN_HA_IDS:
            return s_arg_ids (ctx, req, arg, doc, &in);
        case QN_HA_OFFSET:
            return s_arg_offset (ctx, req, arg, doc, &in);
        default:
            qn_http_reply_error (ctx, 500, "bad route table");
            return -1;
    }
}
