/*  actors/http/write.c - helpers of the write routes
    Validation of push items and acknowledgments, packing them for
    pg_writer, reading result rows, and the failure classes of database
    results (see actors/http/write.h). Payload encryption is in
    actors/http/seal.c.
    Owns      nothing: pure helpers over the caller's request
*/
#include "actors/http/write.h"
#include "actors/pg/statements.h"
#include "wire/msg_push.h"
#include "wire/msg_timer_arm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

qn_hw_call_t *
qn_hw_call_new (const qn_http_ctx_t *ctx)
{
    qn_hw_call_t *c = qn_zalloc (sizeof *c);
    qn_json_doc_init (&c->doc);
    if (ctx && ctx->subject && ctx->subject [0])
        c->producer = qn_strdup (ctx->subject);
    return c;
}

void
qn_hw_call_free (qn_hw_call_t *c)
{
    if (!c)
        return;
    qn_json_doc_free (&c->doc);
    free (c->items);
    free (c->minted);
    free (c->acks);
    free (c->ops);
    for (uint32_t i = 0; c->sealed && i < c->count; i++)
        qn_buf_free (&c->sealed [i]);
    free (c->sealed);
    for (uint32_t i = 0; i < c->nextra; i++)
        qn_buf_free (&c->extra [i].sealed);
    free (c->extra);
    if (c->ext_free)
        c->ext_free (c->ext);
    free (c->queue);
    free (c->ns);
    free (c->task);
    free (c->producer);
    free (c);
}

// ------------------------------------------------------------------ JSON input
int
qn_hw_text (const qn_json_doc_t *doc, int tok, qn_buf_t *scratch, const char **p, size_t *len)
{
    if (qn_json_type (doc, tok) != QN_JSON_STRING)
        return -1;
    const qn_json_tok_t *t = &doc->toks [tok];
    if (!t->has_escapes) {
        *p = doc->buf + t->start + 1;
        *len = t->len - 2;
        return 0;
    }
    qn_buf_reset (scratch);
    int rc = qn_json_str (doc, tok, scratch);
    *p = scratch->data;
    *len = scratch->len;
    return rc;
}

int
qn_hw_field (const qn_json_doc_t *doc, int obj, const char *key)
{
    int tok = qn_json_get (doc, obj, key);
    return tok >= 0 && qn_json_is_null (doc, tok) ? -1 : tok;
}

int64_t
qn_hw_body_array (qn_http_ctx_t *ctx, const qn_json_doc_t *doc, const char *key, int *list)
{
    *list = qn_json_get (doc, 0, key);
    if (qn_json_type (doc, *list) != QN_JSON_ARRAY) {
        qn_http_reply_errorf (ctx, 400, "%s array is required", key);
        return -1;
    }
    int64_t n = qn_json_size (doc, *list);
    if (n > QN_HW_MAX_ITEMS) {
        qn_http_reply_errorf (ctx, 400, "%s array has %lld items; at most %d are allowed",
                              key, (long long) n, QN_HW_MAX_ITEMS);
        return -1;
    }
    return n;
}

bool
qn_hw_is_str (const qn_json_doc_t *doc, int tok)
{
    return qn_json_type (doc, tok) == QN_JSON_STRING;
}

bool
qn_hw_is_empty_str (const qn_json_doc_t *doc, int tok)
{
    return qn_hw_is_str (doc, tok) && doc->toks [tok].len == 2;
}

const char *
qn_hw_text_problem (const qn_json_doc_t *doc, int tok, qn_buf_t *scratch, size_t max)
{
    const char *p;
    size_t len;
    int rc = qn_hw_text (doc, tok, scratch, &p, &len);
    if (rc < 0)
        return "must be a string";
    if (rc == 1)
        return "must not contain NUL characters";
    if (len > max)
        return max == QN_HW_MAX_NAME ? "must be at most 255 bytes" : "is too long";
    if (!qn_utf8_valid (p, len))
        return "must be valid UTF-8";
    return NULL;
}

//  delayMs (integer ms, 0..one year) or deliverAt (ISO 8601, at most one
//  year ahead; an instant in the past means no delay), not both.
static int
s_delay_check (const qn_json_doc_t *doc, int tok, const char *label, int64_t now_us,
               qn_hw_item_t *it, qn_buf_t *scratch, char *err, size_t err_len)
{
    int delay = qn_hw_field (doc, tok, "delayMs");
    int at = qn_hw_field (doc, tok, "deliverAt");
    it->has_nb = false;
    it->nb_us = 0;
    if (delay >= 0 && at >= 0)
        return snprintf (err, err_len, "%s: delayMs and deliverAt are mutually exclusive", label), -1;
    if (delay >= 0) {
        int64_t ms;
        if (qn_json_int (doc, delay, &ms) || ms < 0 || ms > QN_HW_MAX_DELAY_MS)
            return snprintf (err, err_len, "%s.delayMs must be an integer between 0 and %lld (one year)",
                             label, (long long) QN_HW_MAX_DELAY_MS), -1;
        it->has_nb = ms > 0;
        it->nb_us = now_us + ms * 1000;
    }
    if (at >= 0) {
        const char *p;
        size_t len;
        int64_t us;
        if (qn_hw_text (doc, at, scratch, &p, &len) || qn_ts_parse (p, len, &us))
            return snprintf (err, err_len, "%s.deliverAt must be an ISO 8601 timestamp", label), -1;
        if (us > now_us + QN_HW_MAX_DELAY_MS * 1000)
            return snprintf (err, err_len, "%s.deliverAt must be at most one year ahead", label), -1;
        it->has_nb = us > now_us;
        it->nb_us = us;
    }
    return 0;
}

int
qn_hw_item_check (const qn_json_doc_t *doc, int tok, const char *label, int64_t now_us,
                  qn_hw_item_t *it, qn_buf_t *scratch, char *err, size_t err_len)
{
    it->queue = qn_json_get (doc, tok, "queue");
    it->partition = qn_hw_field (doc, tok, "partition");
    it->txn = qn_hw_field (doc, tok, "transactionId");
    it->trace = qn_hw_field (doc, tok, "traceId");
    it->payload = qn_json_get (doc, tok, "payload");
    const char *why;
    if (it->partition >= 0 && !qn_hw_is_str (doc, it->partition))
        return snprintf (err, err_len, "Partition must be a string"), -1;
    if (!qn_hw_is_str (doc, it->queue))
        return snprintf (err, err_len, "Queue must be a string"), -1;
    if (it->txn >= 0 && !qn_hw_is_str (doc, it->txn))
        return snprintf (err, err_len, "TransactionId must be a string"), -1;
    if (it->trace >= 0 && !qn_hw_is_str (doc, it->trace))
        return snprintf (err, err_len, "TraceId must be a string"), -1;
    if (qn_hw_is_empty_str (doc, it->trace))
        it->trace = -1;
    if (it->trace >= 0) {
        const char *p;
        size_t len;
        if (qn_hw_text (doc, it->trace, scratch, &p, &len) || !qn_uuid_valid (p, len))
            return snprintf (err, err_len, "TraceId must be a UUID (%s.traceId)", label), -1;
    }
    if ((why = qn_hw_text_problem (doc, it->queue, scratch, QN_HW_MAX_NAME)))
        return snprintf (err, err_len, "%s.queue %s", label, why), -1;
    if (it->partition >= 0 && (why = qn_hw_text_problem (doc, it->partition, scratch, QN_HW_MAX_NAME)))
        return snprintf (err, err_len, "%s.partition %s", label, why), -1;
    if (qn_hw_is_empty_str (doc, it->txn))
        it->txn = -1;
    if (it->txn >= 0 && (why = qn_hw_text_problem (doc, it->txn, scratch, QN_HW_MAX_NAME)))
        return snprintf (err, err_len, "%s.transactionId %s", label, why), -1;
    return s_delay_check (doc, tok, label, now_us, it, scratch, err, err_len);
}

int
qn_hw_ack_check (const qn_json_doc_t *doc, int tok, const qn_hw_ack_msgs_t *m, qn_hw_ack_t *a,
                 qn_buf_t *scratch, char *err, size_t err_len)
{
    const char *p, *why;
    size_t len;
    memset (a, 0, sizeof *a);
    a->txn = qn_hw_field (doc, tok, "transactionId");
    if (!qn_hw_is_str (doc, a->txn))
        return snprintf (err, err_len, "%s", m->no_txn), -1;
    int pid = qn_hw_field (doc, tok, "partitionId");
    if (!qn_hw_is_str (doc, pid))
        return snprintf (err, err_len, "%s", m->no_pid), -1;
    if (qn_hw_text (doc, a->txn, scratch, &p, &len) == 1)
        return snprintf (err, err_len, "%stransactionId must not contain NUL characters", m->prefix), -1;
    a->has_seq = qn_id_parse (QN_ID_MESSAGE, p, len, &a->seq) == 0;
    if (qn_hw_text (doc, pid, scratch, &p, &len) || qn_id_parse (QN_ID_PARTITION, p, len, &a->pid))
        return snprintf (err, err_len, "%spartitionId must be a valid UUID", m->prefix), -1;
    a->status = qn_hw_field (doc, tok, "status");
    if (a->status >= 0 && (why = qn_hw_text_problem (doc, a->status, scratch, QN_HW_MAX_NAME)))
        return snprintf (err, err_len, "%sstatus %s", m->prefix, why), -1;
    a->lease = qn_hw_field (doc, tok, "leaseId");
    if (a->lease >= 0 && !qn_hw_is_str (doc, a->lease))
        return snprintf (err, err_len, "%sleaseId must be a string", m->prefix), -1;
    if (qn_hw_is_empty_str (doc, a->lease))
        a->lease = -1;
    if (a->lease >= 0 && (qn_hw_text (doc, a->lease, scratch, &p, &len) || !qn_uuid_valid (p, len)))
        return snprintf (err, err_len, "%sleaseId must be a valid UUID", m->prefix), -1;
    a->error = qn_hw_field (doc, tok, "error");
    if (qn_hw_is_str (doc, a->error) && qn_hw_text (doc, a->error, scratch, &p, &len) == 1)
        return snprintf (err, err_len, "%serror must not contain NUL characters", m->prefix), -1;
    a->group = qn_hw_field (doc, tok, "consumerGroup");
    if (a->group >= 0 && (why = qn_hw_text_problem (doc, a->group, scratch, QN_HW_MAX_NAME)))
        return snprintf (err, err_len, "%sconsumerGroup %s", m->prefix, why), -1;
    return 0;
}

// ------------------------------------------------------------------ PG_EXEC parameters
void
qn_hw_args_tok (qn_pg_args_t *args, const qn_json_doc_t *doc, int tok, qn_buf_t *scratch)
{
    const char *p;
    size_t len;
    if (tok < 0 || qn_hw_text (doc, tok, scratch, &p, &len) < 0)
        qn_pg_args_null (args);
    else
        qn_pg_args_str (args, p, len);
}

void
qn_hw_args_error (qn_pg_args_t *args, const qn_json_doc_t *doc, int tok, qn_buf_t *scratch)
{
    if (tok >= 0 && !qn_hw_is_str (doc, tok)) {
        size_t len;
        const char *raw = qn_json_raw (doc, tok, &len);
        qn_pg_args_str (args, raw, len);
    }
    else
        qn_hw_args_tok (args, doc, tok, scratch);
}

void
qn_hw_args_payload (qn_pg_args_t *args, const qn_json_doc_t *doc, int tok, const char *dflt)
{
    size_t len = strlen (dflt);
    const char *raw = tok >= 0 ? qn_json_raw (doc, tok, &len) : dflt;
    qn_pg_args_bin (args, raw, len);
}

const qn_hw_item_t *
qn_hw_item_at (const qn_hw_call_t *c, uint32_t i)
{
    if (c->ops)
        return c->ops [i].is_push ? &c->ops [i].item : NULL;
    return &c->items [i];
}

bool
qn_hw_any_delay (const qn_hw_call_t *c)
{
    for (uint32_t i = 0; i < c->count; i++) {
        const qn_hw_item_t *it = qn_hw_item_at (c, i);
        if (it && it->has_nb)
            return true;
    }
    return false;
}

//  The sealed envelope of position i, or NULL.
static const qn_buf_t *
s_sealed_at (const qn_hw_call_t *c, uint32_t i)
{
    return c->sealed && c->sealed [i].len ? &c->sealed [i] : NULL;
}

//  String token tok unescaped into *p, *len (NULL when tok < 0 or not a
//  string).
static void
s_text_or_null (const qn_json_doc_t *doc, int tok, qn_buf_t *scratch, const char **p, size_t *len)
{
    if (tok < 0 || qn_hw_text (doc, tok, scratch, p, len) < 0) {
        *p = NULL;
        *len = 0;
    }
}

void
qn_hw_push_item (msgpack_packer *pk, const qn_json_doc_t *doc, const qn_hw_item_t *it,
                 const char *minted, const qn_buf_t *sealed, const char *producer)
{
    //  One scratch buffer per unescaped field: each may point into its own.
    qn_buf_t scratch [4] = { QN_BUF_INIT, QN_BUF_INIT, QN_BUF_INIT, QN_BUF_INIT };
    qn_msg_push_item_t m = { .has_not_before = it->has_nb, .not_before_us = it->nb_us };
    s_text_or_null (doc, it->queue, &scratch [0], &m.queue, &m.queue_len);
    if (!m.queue)
        m.queue = "";           //  Validated: never the case
    if (it->partition >= 0)
        s_text_or_null (doc, it->partition, &scratch [1], &m.partition, &m.partition_len);
    else
        m.partition = "Default", m.partition_len = 7;
    if (it->txn >= 0)
        s_text_or_null (doc, it->txn, &scratch [2], &m.txn, &m.txn_len);
    else
    if (minted)
        m.txn = minted, m.txn_len = strlen (minted);
    m.encrypted = sealed && sealed->len;
    if (m.encrypted) {
        m.payload = sealed->data;
        m.payload_len = sealed->len;
    }
    else
    if (it->payload >= 0)
        m.payload = qn_json_raw (doc, it->payload, &m.payload_len);
    else
        m.payload = "null", m.payload_len = 4;
    s_text_or_null (doc, it->trace, &scratch [3], &m.trace, &m.trace_len);
    if (producer)
        m.producer = producer, m.producer_len = strlen (producer);
    qn_msg_push_item (pk, &m);
    for (int i = 0; i < 4; i++)
        qn_buf_free (&scratch [i]);
}

//  The number of push items of the call.
static uint32_t
s_push_count (const qn_hw_call_t *c)
{
    return c->ops ? c->npush : c->count;
}

void
qn_hw_args_push_arrays (qn_pg_args_t *args, const qn_hw_call_t *c, const char *dflt,
                        qn_buf_t *scratch)
{
    const qn_json_doc_t *doc = &c->doc;
    for (int f = 0; f < 7; f++) {
        qn_pg_args_array (args, s_push_count (c));
        for (uint32_t i = 0; i < c->count; i++) {
            const qn_hw_item_t *it = qn_hw_item_at (c, i);
            const qn_buf_t *sealed = s_sealed_at (c, i);
            if (!it)
                continue;
            switch (f) {
                case 0: qn_hw_args_tok (args, doc, it->queue, scratch); break;
                case 1: if (it->partition >= 0)
                            qn_hw_args_tok (args, doc, it->partition, scratch);
                        else
                            qn_pg_args_cstr (args, "Default");
                        break;
                case 2: qn_hw_args_tok (args, doc, it->txn, scratch); break;
                case 3: if (sealed)
                            qn_pg_args_bin (args, sealed->data, sealed->len);
                        else
                            qn_hw_args_payload (args, doc, it->payload, dflt);
                        break;
                case 4: qn_hw_args_tok (args, doc, it->trace, scratch); break;
                case 5: qn_pg_args_cstr (args, c->producer); break;
                default: qn_pg_args_bool (args, sealed != NULL); break;
            }
        }
    }
}

void
qn_hw_args_not_before (qn_pg_args_t *args, const qn_hw_call_t *c)
{
    if (!qn_hw_any_delay (c)) {
        qn_pg_args_null (args);
        return;
    }
    qn_pg_args_array (args, s_push_count (c));
    for (uint32_t i = 0; i < c->count; i++) {
        const qn_hw_item_t *it = qn_hw_item_at (c, i);
        if (!it)
            continue;
        if (it->has_nb)
            qn_pg_args_int (args, it->nb_us);
        else
            qn_pg_args_null (args);
    }
}

//  Column `col` (0..6) of the acks as one array parameter: group,
//  partition id, txn, seq, status, lease, error.
static void
s_args_ack_column (qn_pg_args_t *args, const qn_json_doc_t *doc, const qn_hw_ack_t *const *acks,
                   uint32_t n, int group, qn_buf_t *scratch, int col)
{
    qn_pg_args_array (args, n);
    for (uint32_t i = 0; i < n; i++)
        switch (col) {
            case 0: qn_hw_args_tok (args, doc, group >= 0 ? group : acks [i]->group, scratch); break;
            case 1: qn_pg_args_int (args, acks [i]->pid); break;
            case 2: qn_hw_args_tok (args, doc, acks [i]->txn, scratch); break;
            case 3:
                if (acks [i]->has_seq)
                    qn_pg_args_int (args, acks [i]->seq);
                else
                    qn_pg_args_null (args);
                break;
            case 4:
                if (acks [i]->status >= 0)
                    qn_hw_args_tok (args, doc, acks [i]->status, scratch);
                else
                    qn_pg_args_cstr (args, "completed");
                break;
            case 5: qn_hw_args_tok (args, doc, acks [i]->lease, scratch); break;
            default: qn_hw_args_error (args, doc, acks [i]->error, scratch); break;
        }
}

void
qn_hw_args_acks (qn_pg_args_t *args, const qn_json_doc_t *doc, const qn_hw_ack_t *const *acks,
                 uint32_t n, int group, qn_buf_t *scratch)
{
    for (int col = 0; col < 7; col++)
        s_args_ack_column (args, doc, acks, n, group, scratch, col);
}

// ------------------------------------------------------------------ results
const msgpack_object *
qn_hw_col (const qn_pg_result_t *res, uint32_t r, uint32_t c)
{
    if (r >= res->row_count || res->rows [r].type != MSGPACK_OBJECT_ARRAY
    ||  c >= res->rows [r].via.array.size)
        return NULL;
    return &res->rows [r].via.array.ptr [c];
}

bool
qn_hw_col_int (const qn_pg_result_t *res, uint32_t r, uint32_t c, int64_t *out)
{
    const msgpack_object *o = qn_hw_col (res, r, c);
    if (o && o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
        *out = (int64_t) o->via.u64;
        return true;
    }
    if (o && o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
        *out = o->via.i64;
        return true;
    }
    return false;
}

int
qn_hw_col_bool (const qn_pg_result_t *res, uint32_t r, uint32_t c)
{
    const msgpack_object *o = qn_hw_col (res, r, c);
    return o && o->type == MSGPACK_OBJECT_BOOLEAN ? o->via.boolean : -1;
}

bool
qn_hw_col_str (const qn_pg_result_t *res, uint32_t r, uint32_t c, const char **p, size_t *len)
{
    const msgpack_object *o = qn_hw_col (res, r, c);
    if (!o || o->type != MSGPACK_OBJECT_STR)
        return false;
    *p = o->via.str.ptr;
    *len = o->via.str.size;
    return true;
}

void
qn_hw_jw_col_str (qn_jw_t *w, const char *key, const qn_pg_result_t *res, uint32_t r, uint32_t c)
{
    const char *p;
    size_t len;
    qn_jw_key (w, key);
    if (qn_hw_col_str (res, r, c, &p, &len))
        qn_jw_strn (w, p, len);
    else
        qn_jw_null (w);
}

void
qn_hw_jw_col_bool (qn_jw_t *w, const char *key, const qn_pg_result_t *res, uint32_t r, uint32_t c)
{
    int b = qn_hw_col_bool (res, r, c);
    if (b < 0)
        qn_jw_knull (w, key);
    else
        qn_jw_kbool (w, key, b);
}

void
qn_hw_jw_id (qn_jw_t *w, const char *key, qn_id_kind_t kind, int64_t id)
{
    char s [QN_ID_STR_LEN + 1];
    qn_id_format (kind, id, s);
    qn_jw_kstr (w, key, s);
}

void
qn_hw_jw_tok (qn_jw_t *w, const char *key, const qn_json_doc_t *doc, int tok, const char *dflt)
{
    if (tok >= 0) {
        size_t len;
        const char *raw = qn_json_raw (doc, tok, &len);
        qn_jw_kraw (w, key, raw, len);
    }
    else
    if (dflt)
        qn_jw_kstr (w, key, dflt);
    else
        qn_jw_knull (w, key);
}

void
qn_hw_jw_trace (qn_jw_t *w, const char *key, const qn_json_doc_t *doc, int tok, qn_buf_t *scratch)
{
    const char *p;
    size_t len;
    uint8_t u [16];
    char trace [QN_ID_STR_LEN + 1];
    qn_jw_key (w, key);
    if (tok >= 0 && !qn_hw_text (doc, tok, scratch, &p, &len) && !qn_uuid_parse (p, len, u)) {
        qn_uuid_format (u, trace);
        qn_jw_str (w, trace);
    }
    else
        qn_jw_null (w);
}

void
qn_hw_reply_buf (qn_http_ctx_t *ctx, int status, qn_buf_t *b)
{
    qn_http_reply_json (ctx, status, b->data, b->len);
    qn_buf_free (b);
}

void
qn_hw_committed_once (qn_codec_t *codec, qn_hashmap_t *seen, const char *tenant,
                      const char *queue, size_t len)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t) queue [i]) * 1099511628211ULL;
    h = h ? h : 1;
    if (qn_hashmap_get (seen, h))
        return;
    qn_hashmap_put (seen, h, (void *) 1);
    qn_codec_committed (codec, tenant, queue, len);
}

//  Connection failures, operator intervention (shutdown, crash recovery),
//  no connection slot, and no answer in time: PostgreSQL is unavailable
//  rather than the request wrong. A statement timeout (57014) is not: the
//  server is up and rolled the statement back, and a replay would time
//  out the same way; it is answered 503 and the client retries.
bool
qn_hw_db_unavailable (const qn_pg_result_t *res)
{
    const char *s = res->sqlstate;
    return res->timed_out || !strncmp (s, "08", 2)
        || (!strncmp (s, "57", 2) && strcmp (s, "57014")) || !strcmp (s, "53300");
}

bool
qn_hw_systemic (const qn_pg_result_t *res)
{
    return !res->ok && (qn_hw_db_unavailable (res) || !strncmp (res->sqlstate, "57", 2)
                    ||  !strncmp (res->sqlstate, "53", 2) || !strncmp (res->sqlstate, "40", 2));
}

int
qn_hw_exec_args (qn_codec_t *codec, qn_http_ctx_t *ctx, uint32_t stmt, const qn_pg_args_t *args,
                 qn_codec_result_fn *cb, void *arg)
{
    int rc = qn_codec_exec_args (codec, ctx, "pg_writer", stmt, NULL, args, cb, arg);
    if (rc) {
        qn_http_reply_errorf (ctx, 503, "database unavailable: %s", qn_strerror (rc));
        return -1;
    }
    return 0;
}

void
qn_hw_timer_arm (qn_codec_t *codec, int64_t id, int64_t due_us)
{
    qn_buf_t b = QN_BUF_INIT;
    qn_msg_timer_arm_encode (&(qn_msg_timer_arm_t) { .id = id, .due_us = due_us }, &b);
    qn_send_body (qn_codec_kernel (codec), "timers", QN_MSG_TIMER_ARM, 0, b.data, b.len);
    qn_buf_free (&b);
}
