/*  actors/http/streams.c - state endpoints of the streaming SDK
    POST /streams/v1/queries, /streams/v1/cycle and /streams/v1/state/get
    (contract §3.22; schema/040_streams.sql). Registration is one
    queen_streams.register call; a cycle -- state upserts/deletes, sink
    pushes and the source ack -- is one queen_streams.cycle call, so it
    commits as one transaction or not at all; state reads are one
    queen_streams.state_get call on pg_reader. Field names are snake_case,
    as the SDK sends them.
    Receives  the requests of its routes (from codec_http) and the replies
              of its calls
    Sends     QN_MSG_PG_EXEC to pg_writer (register, cycle) and pg_reader
              (state/get); "committed" events for the queues a cycle pushed
              to or acked on
    Owns      one call state per request, freed by the call's callback
    Failure   a malformed request gets a 400 naming the field; a cycle that
              fails (not found, bad lease, unknown op type or ack status,
              any database error) rolls back and answers 200 success:false
              with the error, as the contract says (the SDK decides whether
              to retry); an unavailable database answers 503
*/
#include "actors/http/write.h"
#include "actors/pg/statements.h"
#include "wire/json_compact.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_MAX_TEXT   1024       //  Bytes of a config hash or a state key

// ------------------------------------------------------------------ common
//  Parses the body and checks that it is a JSON object. Returns 0, or -1
//  after answering 400.
static int
s_object_body (qn_http_ctx_t *ctx, qn_json_doc_t *doc)
{
    if (qn_http_parse_body (ctx, doc))
        return -1;
    if (qn_json_type (doc, 0) != QN_JSON_OBJECT) {
        qn_http_reply_error (ctx, 400, "request body must be a JSON object");
        return -1;
    }
    return 0;
}

//  Answers 400 {"success": false, "error": msg(, "rows": [])}.
static void
s_reply_fail (qn_http_ctx_t *ctx, int status, const char *msg, bool rows)
{
    qn_buf_t b = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &b);
    qn_jw_obj (&w);
    qn_jw_kbool (&w, "success", false);
    qn_jw_kstr (&w, "error", msg);
    if (rows) {
        qn_jw_key (&w, "rows");
        qn_jw_arr (&w);
        qn_jw_arr_end (&w);
    }
    qn_jw_obj_end (&w);
    qn_hw_reply_buf (ctx, status, &b);
}

//  query_id / partition_id: a string (else 400 "<key> is required") that
//  is a UUID (else 400 success:false). Canonical lowercase into out.
static int
s_uuid_field (qn_http_ctx_t *ctx, const qn_json_doc_t *doc, const char *key, bool rows,
              qn_buf_t *scratch, char out [QN_ID_STR_LEN + 1])
{
    int tok = qn_hw_field (doc, 0, key);
    const char *p;
    size_t len;
    uint8_t u [16];
    if (!qn_hw_is_str (doc, tok) || qn_hw_is_empty_str (doc, tok)) {
        qn_http_reply_errorf (ctx, 400, "%s is required", key);
        return -1;
    }
    if (qn_hw_text (doc, tok, scratch, &p, &len) || qn_uuid_parse (p, len, u)) {
        char msg [64];
        snprintf (msg, sizeof msg, "%s must be a UUID", key);
        s_reply_fail (ctx, 400, msg, rows);
        return -1;
    }
    qn_uuid_format (u, out);
    return 0;
}

//  A required non-empty string field (400 "<key> is required", or what is
//  wrong with it). The text goes to *out (owned).
static int
s_required_text (qn_http_ctx_t *ctx, const qn_json_doc_t *doc, const char *key, size_t max,
                 qn_buf_t *scratch, char **out)
{
    int tok = qn_hw_field (doc, 0, key);
    const char *p, *why;
    size_t len;
    if (!qn_hw_is_str (doc, tok) || qn_hw_is_empty_str (doc, tok)) {
        qn_http_reply_errorf (ctx, 400, "%s is required", key);
        return -1;
    }
    if ((why = qn_hw_text_problem (doc, tok, scratch, max))) {
        qn_http_reply_errorf (ctx, 400, "%s %s", key, why);
        return -1;
    }
    qn_hw_text (doc, tok, scratch, &p, &len);
    *out = qn_strndup (p, len);
    return 0;
}

//  A systemic failure (unavailable, timed out, out of resources): 503.
static bool
s_unavailable (qn_http_ctx_t *ctx, const qn_pg_result_t *res)
{
    if (!qn_hw_systemic (res))
        return false;
    qn_http_reply_errorf (ctx, 503, "%s", res->timed_out ? "database did not answer in time"
                          : res->message && res->message [0] ? res->message : "database unavailable");
    return true;
}

// ------------------------------------------------------------------ queries
typedef struct {
    qn_json_doc_t doc;
    char *name, *source, *sink, *hash;      //  Owned
} s_reg_t;

static void
s_reg_free (s_reg_t *r)
{
    if (!r)
        return;
    qn_json_doc_free (&r->doc);
    free (r->name);
    free (r->source);
    free (r->sink);
    free (r->hash);
    free (r);
}

static void
s_on_registered (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    (void) codec;
    s_reg_t *r = arg;
    const char *status, *qid, *old;
    size_t slen, qlen, olen;
    if (!ctx)
        ;
    else
    if (!res->ok) {
        if (!s_unavailable (ctx, res))
            qn_http_reply_pg_error (ctx, res);
    }
    else
    if (!qn_hw_col_str (res, 0, 0, &status, &slen) || !qn_hw_col_str (res, 0, 1, &qid, &qlen))
        qn_http_reply_error (ctx, 500, "register returned no row");
    else {
        bool ok = slen == 2 && !memcmp (status, "ok", 2);
        qn_buf_t b = QN_BUF_INIT;
        qn_jw_t w;
        qn_jw_init (&w, &b);
        qn_jw_obj (&w);
        qn_jw_kbool (&w, "success", ok);
        qn_jw_key (&w, "query_id");
        qn_jw_strn (&w, qid, qlen);
        qn_jw_kstr (&w, "name", r->name);
        if (ok) {
            qn_jw_kstr (&w, "config_hash", r->hash);
            qn_jw_kbool (&w, "fresh", qn_hw_col_bool (res, 0, 2) == 1);
            qn_jw_kbool (&w, "reset", qn_hw_col_bool (res, 0, 3) == 1);
        }
        else {
            qn_buf_t msg = QN_BUF_INIT;
            qn_buf_puts (&msg, "config_hash mismatch: query '");
            qn_buf_puts (&msg, r->name);
            qn_buf_puts (&msg, "' is registered with config_hash '");
            if (qn_hw_col_str (res, 0, 4, &old, &olen))
                qn_buf_append (&msg, old, olen);
            qn_buf_puts (&msg, "', not '");
            qn_buf_puts (&msg, r->hash);
            qn_buf_puts (&msg, "'; register with reset:true to discard its state, or use a new query name");
            qn_jw_key (&w, "error");
            qn_jw_strn (&w, msg.data, msg.len);
            qn_buf_free (&msg);
        }
        qn_jw_obj_end (&w);
        qn_hw_reply_buf (ctx, ok ? 200 : 409, &b);
    }
    s_reg_free (r);
}

static void
s_queries (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    s_reg_t *r = qn_zalloc (sizeof *r);
    qn_json_doc_init (&r->doc);
    qn_json_doc_t *doc = &r->doc;
    qn_buf_t scratch = QN_BUF_INIT;
    const char *p, *why;
    size_t len;
    bool reset = false;
    if (s_object_body (ctx, doc)
    ||  s_required_text (ctx, doc, "name", QN_HW_MAX_NAME, &scratch, &r->name)
    ||  s_required_text (ctx, doc, "source_queue", QN_HW_MAX_NAME, &scratch, &r->source)
    ||  s_required_text (ctx, doc, "config_hash", S_MAX_TEXT, &scratch, &r->hash))
        goto done;
    int sink = qn_hw_field (doc, 0, "sink_queue");
    if (sink >= 0 && (why = qn_hw_text_problem (doc, sink, &scratch, QN_HW_MAX_NAME))) {
        qn_http_reply_errorf (ctx, 400, "sink_queue %s", why);
        goto done;
    }
    if (sink >= 0) {
        qn_hw_text (doc, sink, &scratch, &p, &len);
        r->sink = qn_strndup (p, len);
    }
    int tok = qn_hw_field (doc, 0, "reset");
    if (tok >= 0 && qn_json_bool (doc, tok, &reset)) {
        qn_http_reply_error (ctx, 400, "reset must be a boolean");
        goto done;
    }
    qn_pg_args_t args;
    qn_pg_args_init (&args);
    qn_pg_args_cstr (&args, ctx->tenant);
    qn_pg_args_cstr (&args, r->name);
    qn_pg_args_cstr (&args, r->source);
    qn_pg_args_cstr (&args, r->sink);           //  NULL: no sink
    qn_pg_args_cstr (&args, r->hash);
    qn_pg_args_bool (&args, reset);
    if (qn_hw_exec_args (codec, ctx, QN_SQL_STREAMS_REGISTER, &args, s_on_registered, r) == 0)
        r = NULL;
    qn_pg_args_free (&args);
done:
    qn_buf_free (&scratch);
    s_reg_free (r);
}

// ------------------------------------------------------------------ cycle
//  What a cycle call keeps besides the push items (qn_hw_call_t.ext).
typedef struct {
    char query [QN_ID_STR_LEN + 1];
    char partition [QN_ID_STR_LEN + 1];
    int group;                  //  consumer_group token, or -1
    int ops;                    //  state_ops array token, or -1
    uint32_t nops;
    int ack;                    //  ack object token, or -1
    qn_hw_ack_t a;              //  txn, has_seq/seq, status, lease, error (pid unused)
    int64_t count;              //  ack.count
    bool release;
} s_cycle_t;

//  Writes a push result like /api/v1/push (§3.6) for item i and row r.
static void
s_push_result (qn_jw_t *w, const qn_hw_call_t *c, uint32_t i, const qn_pg_result_t *res,
               uint32_t r, qn_buf_t *scratch)
{
    const qn_hw_item_t *it = &c->items [i];
    int64_t seq = 0, pid = 0;
    qn_hw_col_int (res, r, 2, &seq);
    qn_hw_col_int (res, r, 3, &pid);
    bool dup = qn_hw_col_bool (res, r, 4) == 1;
    char mid [QN_ID_STR_LEN + 1];
    qn_id_format (QN_ID_MESSAGE, seq, mid);
    qn_jw_obj (w);
    qn_jw_kint (w, "index", i);
    qn_hw_jw_tok (w, "transaction_id", &c->doc, it->txn, mid);
    qn_jw_kstr (w, "status", dup ? "duplicate" : "queued");
    qn_jw_kstr (w, "message_id", mid);
    if (!dup) {
        qn_hw_jw_id (w, "partition_id", QN_ID_PARTITION, pid);
        qn_hw_jw_trace (w, "trace_id", &c->doc, it->trace, scratch);
    }
    qn_hw_jw_tok (w, "queueName", &c->doc, it->queue, NULL);
    qn_jw_obj_end (w);
}

static void
s_on_cycle (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    qn_hw_call_t *c = arg;
    s_cycle_t *cy = c->ext;
    if (!ctx)
        ;
    else
    if (!res->ok) {
        if (!s_unavailable (ctx, res))
            s_reply_fail (ctx, 200, res->message && res->message [0] ? res->message : "database error",
                          false);
    }
    else {
        qn_buf_t b = QN_BUF_INIT, scratch = QN_BUF_INIT;
        qn_hashmap_t *seen = qn_hashmap_new ();
        qn_jw_t w;
        qn_jw_init (&w, &b);
        qn_jw_obj (&w);
        qn_jw_kbool (&w, "success", true);
        qn_jw_kstr (&w, "query_id", cy->query);
        qn_jw_kstr (&w, "partition_id", cy->partition);
        int ack_row = -1;
        for (uint32_t r = 0; r < res->row_count; r++) {
            const char *kind, *q;
            size_t klen, qlen;
            if (!qn_hw_col_str (res, r, 0, &kind, &klen))
                continue;
            if (klen == 6 && !memcmp (kind, "source", 6))
                qn_hw_jw_col_str (&w, "queueName", res, r, 5);
            if (klen == 3 && !memcmp (kind, "ack", 3)) {
                ack_row = (int) r;
                if (qn_hw_col_str (res, r, 5, &q, &qlen))
                    qn_hw_committed_once (codec, seen, ctx->tenant, q, qlen);
            }
        }
        qn_jw_kint (&w, "state_ops_applied", cy->nops);
        qn_jw_key (&w, "push_results");
        qn_jw_arr (&w);
        int64_t pushed = 0;
        for (uint32_t r = 0; r < res->row_count; r++) {
            const char *kind, *q;
            size_t klen, qlen;
            int64_t ord = 0;
            if (!qn_hw_col_str (res, r, 0, &kind, &klen) || klen != 4 || memcmp (kind, "push", 4)
            ||  !qn_hw_col_int (res, r, 1, &ord) || ord < 1 || ord > (int64_t) c->count)
                continue;
            s_push_result (&w, c, (uint32_t) ord - 1, res, r, &scratch);
            if (qn_hw_col_bool (res, r, 4) != 1 && qn_hw_col_str (res, r, 5, &q, &qlen)) {
                qn_hw_committed_once (codec, seen, ctx->tenant, q, qlen);
                pushed++;
            }
        }
        qn_jw_arr_end (&w);
        qn_jw_key (&w, "ack_result");
        if (ack_row >= 0) {
            qn_jw_obj (&w);
            qn_jw_kbool (&w, "success", true);
            qn_jw_kint (&w, "count", cy->count);
            qn_jw_kbool (&w, "lease_released", qn_hw_col_bool (res, (uint32_t) ack_row, 6) == 1);
            qn_jw_kbool (&w, "dlq", qn_hw_col_bool (res, (uint32_t) ack_row, 7) == 1);
            qn_jw_obj_end (&w);
        }
        else
            qn_jw_null (&w);
        qn_jw_obj_end (&w);
        qn_hashmap_destroy (&seen);
        qn_buf_free (&scratch);
        qn_count (qn_codec_kernel (codec), "messages_pushed", pushed);
        qn_hw_reply_buf (ctx, 200, &b);
    }
    qn_hw_call_free (c);
}

//  state_ops: an array of {"type", "key"(, "value")} objects. Returns 0,
//  1 when a type is unknown (soft: `soft` names it), -1 after a 400.
static int
s_ops_check (qn_http_ctx_t *ctx, const qn_json_doc_t *doc, s_cycle_t *cy, qn_buf_t *scratch,
             char *soft, size_t soft_len)
{
    cy->ops = qn_hw_field (doc, 0, "state_ops");
    if (cy->ops < 0)
        return 0;
    if (qn_json_type (doc, cy->ops) != QN_JSON_ARRAY) {
        qn_http_reply_error (ctx, 400, "state_ops must be an array");
        return -1;
    }
    if (qn_json_size (doc, cy->ops) > QN_HW_MAX_ITEMS) {
        qn_http_reply_errorf (ctx, 400, "state_ops has more than %d operations", QN_HW_MAX_ITEMS);
        return -1;
    }
    int rc = 0;
    const char *p, *why;
    size_t len;
    for (int t = qn_json_first (doc, cy->ops); t >= 0; t = qn_json_next_sibling (doc, cy->ops, t)) {
        uint32_t i = cy->nops++;
        if (qn_json_type (doc, t) != QN_JSON_OBJECT) {
            qn_http_reply_errorf (ctx, 400, "state_ops[%u] must be an object", i);
            return -1;
        }
        int type = qn_hw_field (doc, t, "type"), key = qn_hw_field (doc, t, "key");
        if (!qn_hw_is_str (doc, type)) {
            qn_http_reply_errorf (ctx, 400, "state_ops[%u].type must be a string", i);
            return -1;
        }
        if (key < 0 || (why = qn_hw_text_problem (doc, key, scratch, S_MAX_TEXT))) {
            qn_http_reply_errorf (ctx, 400, "state_ops[%u].key %s", i, key < 0 ? "is required" : why);
            return -1;
        }
        bool upsert = qn_json_str_eq (doc, type, "upsert");
        if (upsert && qn_json_get (doc, t, "value") < 0) {
            qn_http_reply_errorf (ctx, 400, "state_ops[%u].value is required", i);
            return -1;
        }
        if (!upsert && !qn_json_str_eq (doc, type, "delete") && rc == 0) {
            qn_hw_text (doc, type, scratch, &p, &len);
            snprintf (soft, soft_len, "Unknown state_op type: %.*s", (int) (len > 200 ? 200 : len), p);
            rc = 1;
        }
    }
    return rc;
}

//  ack: null/absent or an object. Returns 0, 1 for a soft failure (no
//  transactionId, unknown status; `soft` names it), -1 after a 400.
static int
s_ack_check (qn_http_ctx_t *ctx, const qn_json_doc_t *doc, s_cycle_t *cy, qn_buf_t *scratch,
             char *soft, size_t soft_len)
{
    cy->ack = qn_hw_field (doc, 0, "ack");
    if (cy->ack < 0)
        return 0;
    if (qn_json_type (doc, cy->ack) != QN_JSON_OBJECT) {
        qn_http_reply_error (ctx, 400, "ack must be an object or null");
        return -1;
    }
    qn_hw_ack_t *a = &cy->a;
    const char *p, *why;
    size_t len;
    a->txn = qn_hw_field (doc, cy->ack, "transactionId");
    if (a->txn >= 0 && (why = qn_hw_text_problem (doc, a->txn, scratch, QN_HW_MAX_NAME))) {
        qn_http_reply_errorf (ctx, 400, "ack.transactionId %s", why);
        return -1;
    }
    if (a->txn >= 0 && !qn_hw_text (doc, a->txn, scratch, &p, &len))
        a->has_seq = qn_id_parse (QN_ID_MESSAGE, p, len, &a->seq) == 0;
    a->lease = qn_hw_field (doc, cy->ack, "leaseId");
    if (qn_hw_is_empty_str (doc, a->lease))
        a->lease = -1;
    if (a->lease >= 0 && (qn_hw_text (doc, a->lease, scratch, &p, &len) || !qn_uuid_valid (p, len))) {
        qn_http_reply_error (ctx, 400, "ack.leaseId must be a valid UUID");
        return -1;
    }
    a->status = qn_hw_field (doc, cy->ack, "status");
    if (a->status >= 0 && (why = qn_hw_text_problem (doc, a->status, scratch, QN_HW_MAX_NAME))) {
        qn_http_reply_errorf (ctx, 400, "ack.status %s", why);
        return -1;
    }
    a->error = qn_hw_field (doc, cy->ack, "error");
    if (qn_hw_is_str (doc, a->error) && qn_hw_text (doc, a->error, scratch, &p, &len) == 1) {
        qn_http_reply_error (ctx, 400, "ack.error must not contain NUL characters");
        return -1;
    }
    cy->count = 1;
    int count = qn_hw_field (doc, cy->ack, "count");
    if (count >= 0 && (qn_json_int (doc, count, &cy->count) || cy->count < 0)) {
        qn_http_reply_error (ctx, 400, "ack.count must be a non-negative integer");
        return -1;
    }
    if (a->txn < 0 || qn_hw_is_empty_str (doc, a->txn)) {
        snprintf (soft, soft_len, "ack.transactionId is required");
        return 1;
    }
    if (a->status >= 0 && !qn_json_str_eq (doc, a->status, "completed")
    &&  !qn_json_str_eq (doc, a->status, "success") && !qn_json_str_eq (doc, a->status, "failed")
    &&  !qn_json_str_eq (doc, a->status, "dlq")) {
        qn_hw_text (doc, a->status, scratch, &p, &len);
        snprintf (soft, soft_len, "Unknown ack.status: %.*s", (int) len, p);
        return 1;
    }
    return 0;
}

//  push_items: like /api/v1/push items, into c->items. Returns 0 or -1
//  after a 400.
static int
s_items_check (qn_http_ctx_t *ctx, qn_hw_call_t *c, qn_buf_t *scratch)
{
    const qn_json_doc_t *doc = &c->doc;
    int items = qn_hw_field (doc, 0, "push_items");
    if (items < 0)
        return 0;
    if (qn_json_type (doc, items) != QN_JSON_ARRAY) {
        qn_http_reply_error (ctx, 400, "push_items must be an array");
        return -1;
    }
    int64_t n = qn_json_size (doc, items);
    if (n > QN_HW_MAX_ITEMS) {
        qn_http_reply_errorf (ctx, 400, "push_items has %lld items; at most %d are allowed",
                              (long long) n, QN_HW_MAX_ITEMS);
        return -1;
    }
    c->items = qn_malloc ((size_t) (n ? n : 1) * sizeof *c->items);
    int64_t now_us = qn_wall_us ();
    char err [256];
    for (int t = qn_json_first (doc, items); t >= 0; t = qn_json_next_sibling (doc, items, t)) {
        char label [32];
        snprintf (label, sizeof label, "push_items[%u]", c->count);
        if (qn_json_type (doc, t) != QN_JSON_OBJECT) {
            qn_http_reply_errorf (ctx, 400, "%s must be an object", label);
            return -1;
        }
        if (qn_hw_item_check (doc, t, label, now_us, &c->items [c->count], scratch, err, sizeof err)) {
            qn_http_reply_error (ctx, 400, err);
            return -1;
        }
        c->count++;
    }
    return 0;
}

//  The op arrays as three parameters (types, keys, values as JSON text).
static void
s_args_ops (qn_pg_args_t *args, const qn_json_doc_t *doc, const s_cycle_t *cy, qn_buf_t *scratch)
{
    for (int f = 0; f < 3; f++) {
        qn_pg_args_array (args, cy->nops);
        for (int t = cy->ops >= 0 ? qn_json_first (doc, cy->ops) : -1; t >= 0;
             t = qn_json_next_sibling (doc, cy->ops, t)) {
            int v = qn_json_get (doc, t, "value");
            size_t len;
            const char *raw;
            if (f == 0)
                qn_hw_args_tok (args, doc, qn_hw_field (doc, t, "type"), scratch);
            else
            if (f == 1)
                qn_hw_args_tok (args, doc, qn_hw_field (doc, t, "key"), scratch);
            else
            if (v >= 0 && qn_json_str_eq (doc, qn_hw_field (doc, t, "type"), "upsert")) {
                raw = qn_json_raw (doc, v, &len);
                qn_pg_args_str (args, raw, len);
            }
            else
                qn_pg_args_null (args);
        }
    }
}

//  Packs the validated (and sealed) cycle into one queen_streams.cycle
//  call. Takes c.
static void
s_cycle_send (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_hw_call_t *c)
{
    s_cycle_t *cy = c->ext;
    const qn_json_doc_t *doc = &c->doc;
    qn_buf_t scratch = QN_BUF_INIT;
    qn_pg_args_t args;
    qn_pg_args_init (&args);
    qn_pg_args_cstr (&args, ctx->tenant);
    qn_pg_args_cstr (&args, cy->query);
    qn_pg_args_cstr (&args, cy->partition);
    qn_hw_args_tok (&args, doc, cy->group, &scratch);
    s_args_ops (&args, doc, cy, &scratch);
    qn_hw_args_push_arrays (&args, c, "null", &scratch);
    qn_hw_args_not_before (&args, c);
    qn_hw_args_tok (&args, doc, cy->ack >= 0 ? cy->a.txn : -1, &scratch);
    if (cy->ack >= 0 && cy->a.has_seq)
        qn_pg_args_int (&args, cy->a.seq);
    else
        qn_pg_args_null (&args);
    qn_hw_args_tok (&args, doc, cy->ack >= 0 ? cy->a.lease : -1, &scratch);
    qn_hw_args_tok (&args, doc, cy->ack >= 0 ? cy->a.status : -1, &scratch);
    qn_hw_args_error (&args, doc, cy->ack >= 0 ? cy->a.error : -1, &scratch);
    qn_pg_args_bool (&args, cy->release);
    qn_buf_free (&scratch);
    assert (args.count == 21);
    if (qn_hw_exec_args (codec, ctx, QN_SQL_STREAMS_CYCLE, &args, s_on_cycle, c))
        qn_hw_call_free (c);
    qn_pg_args_free (&args);
}

static void
s_cycle (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    qn_hw_call_t *c = qn_hw_call_new (ctx);
    s_cycle_t *cy = qn_zalloc (sizeof *cy);
    c->ext = cy;
    c->ext_free = free;
    qn_json_doc_t *doc = &c->doc;
    qn_buf_t scratch = QN_BUF_INIT;
    char soft [300] = "";
    const char *why;
    if (s_object_body (ctx, doc)
    ||  s_uuid_field (ctx, doc, "query_id", false, &scratch, cy->query)
    ||  s_uuid_field (ctx, doc, "partition_id", false, &scratch, cy->partition))
        goto done;
    cy->group = qn_hw_field (doc, 0, "consumer_group");
    if (qn_hw_is_empty_str (doc, cy->group))
        cy->group = -1;
    if (cy->group >= 0 && (why = qn_hw_text_problem (doc, cy->group, &scratch, QN_HW_MAX_NAME))) {
        qn_http_reply_errorf (ctx, 400, "consumer_group %s", why);
        goto done;
    }
    cy->release = true;
    int rel = qn_hw_field (doc, 0, "release_lease");
    if (rel >= 0 && qn_json_bool (doc, rel, &cy->release)) {
        qn_http_reply_error (ctx, 400, "release_lease must be a boolean");
        goto done;
    }
    int ops = s_ops_check (ctx, doc, cy, &scratch, soft, sizeof soft);
    if (ops < 0)
        goto done;
    int ack = s_ack_check (ctx, doc, cy, &scratch, ops ? NULL : soft, ops ? 0 : sizeof soft);
    if (ack < 0 || s_items_check (ctx, c, &scratch))
        goto done;
    if (ops || ack) {
        //  The contract's failures that need no database: nothing applied.
        s_reply_fail (ctx, 200, soft, false);
        goto done;
    }
    //  Sink payloads of encrypted queues are sealed first (§2.10).
    qn_hw_seal_then (codec, ctx, c, s_cycle_send);
    c = NULL;
done:
    qn_buf_free (&scratch);
    qn_hw_call_free (c);
}

// ------------------------------------------------------------------ state/get
//  "2026-05-16T08:41:27.123456+00:00" (the contract's updated_at form).
static void
s_ts_offset (int64_t us, char out [40])
{
    char z [32];
    qn_ts_us (us, z);
    size_t n = strlen (z);
    if (n && z [n - 1] == 'Z')
        z [n - 1] = 0;
    snprintf (out, 40, "%s+00:00", z);
}

static void
s_on_state (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    (void) codec;
    (void) arg;
    if (!ctx)
        return;
    if (!res->ok) {
        if (!s_unavailable (ctx, res))
            s_reply_fail (ctx, 500, res->message && res->message [0] ? res->message : "database error", true);
        return;
    }
    qn_buf_t b = QN_BUF_INIT, scratch = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &b);
    qn_jw_obj (&w);
    qn_jw_kbool (&w, "success", true);
    qn_jw_key (&w, "rows");
    qn_jw_arr (&w);
    for (uint32_t r = 0; r < res->row_count; r++) {
        const char *key, *value;
        size_t klen, vlen;
        int64_t at = 0;
        char ts [40];
        if (!qn_hw_col_str (res, r, 0, &key, &klen) || !qn_hw_col_str (res, r, 1, &value, &vlen))
            continue;
        qn_jw_obj (&w);
        qn_jw_key (&w, "key");
        qn_jw_strn (&w, key, klen);
        //  jsonb text ({"a": 1}) in the broker's compact spelling.
        qn_buf_reset (&scratch);
        if (qn_json_compact (value, vlen, NULL, &scratch))
            qn_jw_knull (&w, "value");
        else
            qn_jw_kraw (&w, "value", scratch.data, scratch.len);
        if (qn_hw_col_int (res, r, 2, &at)) {
            s_ts_offset (at, ts);
            qn_jw_kstr (&w, "updated_at", ts);
        }
        else
            qn_jw_knull (&w, "updated_at");
        qn_jw_obj_end (&w);
    }
    qn_jw_arr_end (&w);
    qn_jw_obj_end (&w);
    qn_buf_free (&scratch);
    qn_hw_reply_buf (ctx, 200, &b);
}

static void
s_state_get (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    qn_buf_t scratch = QN_BUF_INIT;
    char query [QN_ID_STR_LEN + 1], partition [QN_ID_STR_LEN + 1];
    const char *why;
    qn_pg_args_t args;
    qn_pg_args_init (&args);
    if (s_object_body (ctx, &doc)
    ||  s_uuid_field (ctx, &doc, "query_id", true, &scratch, query)
    ||  s_uuid_field (ctx, &doc, "partition_id", true, &scratch, partition))
        goto done;
    int keys = qn_hw_field (&doc, 0, "keys");
    if (keys >= 0 && qn_json_type (&doc, keys) != QN_JSON_ARRAY) {
        qn_http_reply_error (ctx, 400, "keys must be an array of strings");
        goto done;
    }
    uint32_t i = 0;
    for (int t = keys >= 0 ? qn_json_first (&doc, keys) : -1; t >= 0;
         t = qn_json_next_sibling (&doc, keys, t), i++)
        if ((why = qn_hw_text_problem (&doc, t, &scratch, S_MAX_TEXT))) {
            qn_http_reply_errorf (ctx, 400, "keys[%u] %s", i, why);
            goto done;
        }
    int prefix = qn_hw_field (&doc, 0, "key_prefix");
    if (prefix >= 0 && (why = qn_hw_text_problem (&doc, prefix, &scratch, S_MAX_TEXT))) {
        qn_http_reply_errorf (ctx, 400, "key_prefix %s", why);
        goto done;
    }
    int ripe = qn_hw_field (&doc, 0, "ripe_at_or_before");
    if (ripe >= 0 && qn_json_type (&doc, ripe) != QN_JSON_NUMBER) {
        qn_http_reply_error (ctx, 400, "ripe_at_or_before must be a number (epoch ms)");
        goto done;
    }
    qn_pg_args_cstr (&args, ctx->tenant);
    qn_pg_args_cstr (&args, query);
    qn_pg_args_cstr (&args, partition);
    if (keys >= 0) {
        qn_pg_args_array (&args, (uint32_t) qn_json_size (&doc, keys));
        for (int t = qn_json_first (&doc, keys); t >= 0; t = qn_json_next_sibling (&doc, keys, t))
            qn_hw_args_tok (&args, &doc, t, &scratch);
    }
    else
        qn_pg_args_null (&args);
    qn_hw_args_tok (&args, &doc, prefix, &scratch);
    size_t ripe_len = 0;
    const char *ripe_raw = ripe >= 0 ? qn_json_raw (&doc, ripe, &ripe_len) : NULL;
    qn_pg_args_str (&args, ripe_raw, ripe_len);
    int rc = qn_codec_exec_args (codec, ctx, "pg_reader", QN_SQL_STREAMS_STATE_GET, NULL, &args,
                                 s_on_state, NULL);
    if (rc)
        qn_http_reply_errorf (ctx, 503, "database unavailable: %s", qn_strerror (rc));
done:
    qn_pg_args_free (&args);
    qn_buf_free (&scratch);
    qn_json_doc_free (&doc);
}

const qn_http_route_t qn_http_routes_streams [] = {
    { "POST", "/streams/v1/queries", s_queries, QN_AUTH_READ_WRITE },
    { "POST", "/streams/v1/cycle", s_cycle, QN_AUTH_READ_WRITE },
    { "POST", "/streams/v1/state/get", s_state_get, QN_AUTH_READ_ONLY },
    { NULL, NULL, NULL, 0 }
};
