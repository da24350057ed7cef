/*  actors/http/timers.c - the timer routes (see state.c for the whole area)
      POST   /api/v1/timers
      GET    /api/v1/timers[?queue=&after=&limit=]
      GET    /api/v1/timers/:timerId
      DELETE /api/v1/timers/:timerId
    A created timer is armed on the "timers" actor (qn_hw_timer_arm); the
    payload of a timer whose queue is encrypted is sealed before it is
    stored and decrypted for the read routes (actors/http/seal.c).
*/
#include "actors/http/state.h"
#include "actors/pg/statements.h"
#include "wire/crypto.h"
#include "wire/ids.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ------------------------------------------------------------------ timers
//  Row: status (created | exists | fired | conflict), id, due_at, fired_at.
static void
s_on_timer_created (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    qn_hs_call_t *call = arg;
    int64_t id = 0, due = 0;
    bool created = res->ok && qn_hs_col_is (res, 0, 0, "created");
    if (created && qn_hs_col_int (res, 0, 1, &id) && qn_hs_col_int (res, 0, 2, &due))
        qn_hw_timer_arm (codec, id, due);
    if (!ctx || qn_hs_failed (ctx, res)) {
        free (call);
        return;
    }
    if (qn_hs_col_is (res, 0, 0, "conflict")) {
        qn_http_reply_errorf (ctx, 409, "timerId %s is taken by a different timer", call->timer_id);
        free (call);
        return;
    }
    qn_buf_t b = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &b);
    qn_jw_obj (&w);
    qn_jw_kstr (&w, "timerId", call->timer_id);
    qn_hs_jw_ts (&w, "fireAt", res, 0, 2);
    qn_jw_kbool (&w, "created", created);
    qn_jw_kbool (&w, "fired", qn_hs_col_is (res, 0, 0, "fired"));
    qn_jw_obj_end (&w);
    qn_hs_reply_buf (ctx, created ? 201 : 200, &b);
    free (call);
}

//  A validated POST /api/v1/timers (c->ext of its call): tokens of the
//  body, -1 when absent.
typedef struct {
    char timer_id [QN_HS_NAME_MAX + 1];
    char minted_txn [QN_ID_STR_LEN + 1];    //  When the body has no transactionId
    int queue, partition, txn, payload;
    bool has_at;                //  fireAt given, else delayMs
    int64_t at_us, delay_ms;
    uint32_t extra;             //  The payload's index in c->extra (qn_hw_seal_add)
} s_timer_t;

//  The timing of a timer request: exactly one of fireAt (ISO-8601 string
//  or integer milliseconds since the Unix epoch) and delayMs, into tm.
//  False after answering 400.
static bool
s_timing (qn_http_ctx_t *ctx, const qn_json_doc_t *doc, s_timer_t *tm, qn_buf_t *scratch)
{
    int at = qn_hs_field (doc, "fireAt"), delay = qn_hs_field (doc, "delayMs");
    int64_t v;
    if (at >= 0 && delay >= 0) {
        qn_http_reply_error (ctx, 400, "give either fireAt or delayMs, not both");
        return false;
    }
    if (at < 0 && delay < 0) {
        qn_http_reply_error (ctx, 400, "fireAt or delayMs is required");
        return false;
    }
    if (delay >= 0) {
        if (qn_json_int (doc, delay, &v) || v < 0 || v > QN_HS_DELAY_MAX_MS) {
            qn_http_reply_errorf (ctx, 400, "delayMs must be an integer between 0 and %lld",
                                  (long long) QN_HS_DELAY_MAX_MS);
            return false;
        }
        tm->has_at = false;
        tm->delay_ms = v;
        return true;
    }
    int64_t us;
    if (qn_json_type (doc, at) == QN_JSON_STRING) {
        if (qn_hs_json_text (doc, at, scratch) || qn_ts_parse (scratch->data, scratch->len, &us)) {
            qn_http_reply_error (ctx, 400, "fireAt must be an ISO-8601 timestamp or milliseconds since the epoch");
            return false;
        }
    }
    else
    if (qn_json_int (doc, at, &v) == 0 && v >= 0 && v <= INT64_MAX / 1000)
        us = v * 1000;
    else {
        qn_http_reply_error (ctx, 400, "fireAt must be an ISO-8601 timestamp or milliseconds since the epoch");
        return false;
    }
    if (us < 0 || us > qn_wall_us () + QN_HS_DELAY_MAX_MS * 1000) {
        qn_http_reply_error (ctx, 400, "fireAt must be after 1970 and at most 10 years ahead");
        return false;
    }
    tm->has_at = true;
    tm->at_us = us;
    return true;
}

//  Optional string field `name` checked as a name; *tok -1 when absent or
//  null (or empty, for empty_is_absent). False after answering 400.
static bool
s_body_name (qn_http_ctx_t *ctx, const qn_json_doc_t *doc, const char *name, bool empty_is_absent,
             int *tok, qn_buf_t *out)
{
    *tok = qn_hs_field (doc, name);
    if (*tok < 0)
        return true;
    int rc = qn_hs_json_text (doc, *tok, out);
    if (rc < 0) {
        qn_http_reply_errorf (ctx, 400, "%s must be a string", name);
        return false;
    }
    if (!out->len && empty_is_absent) {
        *tok = -1;
        return true;
    }
    if (rc == 1) {
        qn_http_reply_errorf (ctx, 400, "%s must not contain NUL characters", name);
        return false;
    }
    return qn_hs_name_ok (ctx, name, out->data, out->len, false);
}

//  Packs queen.timer_create's arguments for a validated (and sealed) timer
//  and calls it. Takes c.
static void
s_timer_send (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_hw_call_t *c)
{
    const s_timer_t *tm = c->ext;
    const qn_hw_extra_t *x = &c->extra [tm->extra];
    bool sealed = x->sealed.len > 0;
    qn_buf_t scratch = QN_BUF_INIT;
    qn_pg_args_t args;
    qn_pg_args_init (&args);
    qn_pg_args_cstr (&args, ctx->tenant);
    qn_pg_args_cstr (&args, tm->timer_id);
    qn_hw_args_tok (&args, &c->doc, tm->queue, &scratch);
    qn_hw_args_tok (&args, &c->doc, tm->partition, &scratch);
    if (sealed)
        qn_pg_args_bin (&args, x->sealed.data, x->sealed.len);
    else {
        size_t len;
        const char *raw = qn_json_raw (&c->doc, tm->payload, &len);
        qn_pg_args_bin (&args, raw, len);
    }
    if (tm->txn >= 0)
        qn_hw_args_tok (&args, &c->doc, tm->txn, &scratch);
    else
        qn_pg_args_cstr (&args, tm->minted_txn);
    qn_pg_args_bool (&args, tm->txn >= 0);
    tm->has_at ? qn_pg_args_int (&args, tm->at_us) : qn_pg_args_null (&args);
    tm->has_at ? qn_pg_args_null (&args) : qn_pg_args_int (&args, tm->delay_ms);
    //  Sealed: the keyed digest of the plaintext stands for the payload in
    //  the fingerprint (the envelope differs at every create).
    if (sealed)
        qn_pg_args_bin (&args, x->digest, sizeof x->digest);
    else
        qn_pg_args_null (&args);
    qn_hs_call_t *call = qn_zalloc (sizeof *call);
    memcpy (call->timer_id, tm->timer_id, sizeof call->timer_id);
    qn_hs_exec (codec, ctx, QN_SQL_TIMER_CREATE, &args, s_on_timer_created, call);
    qn_pg_args_free (&args);
    qn_buf_free (&scratch);
    qn_hw_call_free (c);
}

//  Validates the body, then seals the payload when the target queue is
//  encrypted (§2.10, as a push to it would be) and sends.
void
qn_hs_timer_create (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    qn_hw_call_t *c = qn_hw_call_new (ctx);
    qn_json_doc_t *doc = &c->doc;
    qn_buf_t scratch = QN_BUF_INIT;
    s_timer_t *tm = qn_zalloc (sizeof *tm);
    c->ext = tm;
    c->ext_free = free;
    if (qn_http_parse_body (ctx, doc))
        goto done;
    if (qn_json_type (doc, 0) != QN_JSON_OBJECT) {
        qn_http_reply_error (ctx, 400, "Request body must be a JSON object");
        goto done;
    }
    int tid;
    if (!s_body_name (ctx, doc, "timerId", false, &tid, &scratch))
        goto done;
    if (tid >= 0)
        snprintf (tm->timer_id, sizeof tm->timer_id, "%s", scratch.data);
    else
        qn_uuid_v7 (tm->timer_id);
    if (!s_body_name (ctx, doc, "queue", false, &tm->queue, &scratch))
        goto done;
    if (tm->queue < 0) {
        qn_http_reply_error (ctx, 400, "queue is required");
        goto done;
    }
    if (!s_body_name (ctx, doc, "partition", false, &tm->partition, &scratch)
    ||  !s_body_name (ctx, doc, "transactionId", true, &tm->txn, &scratch))
        goto done;
    tm->payload = qn_json_get (doc, 0, "payload");
    if (tm->payload < 0) {
        qn_http_reply_error (ctx, 400, "payload is required");
        goto done;
    }
    if (!s_timing (ctx, doc, tm, &scratch))
        goto done;
    if (tm->txn < 0)
        qn_uuid_v7 (tm->minted_txn);
    tm->extra = qn_hw_seal_add (c, tm->queue, tm->payload);
    qn_hw_seal_then (codec, ctx, c, s_timer_send);
    c = NULL;
done:
    qn_buf_free (&scratch);
    qn_hw_call_free (c);
}

//  Row: status (cancelled | fired | not_found), fired_at.
static void
s_on_timer_cancelled (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    (void) codec;
    (void) arg;
    if (!ctx || qn_hs_failed (ctx, res))
        return;
    if (qn_hs_col_is (res, 0, 0, "not_found")) {
        qn_http_reply_error (ctx, 404, "timer not found");
        return;
    }
    bool cancelled = qn_hs_col_is (res, 0, 0, "cancelled");
    qn_buf_t b = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &b);
    qn_jw_obj (&w);
    if (!cancelled)
        qn_jw_kstr (&w, "error", "timer already fired");
    qn_jw_key (&w, "timerId");
    qn_jw_strn (&w, qn_http_param (ctx, 0), ctx->param_len [0]);
    qn_jw_kbool (&w, "cancelled", cancelled);
    qn_jw_kbool (&w, "fired", !cancelled);
    if (!cancelled)
        qn_hs_jw_ts (&w, "firedAt", res, 0, 1);
    qn_jw_obj_end (&w);
    qn_hs_reply_buf (ctx, cancelled ? 200 : 409, &b);
}

//  Calls stmt with (tenant, :timerId) for the routes on one timer; cb
//  answers. A missing timerId is answered here.
static void
s_timer_exec (qn_codec_t *codec, qn_http_ctx_t *ctx, uint32_t stmt, qn_codec_result_fn *cb)
{
    size_t len;
    const char *id = qn_hs_param (ctx, 0, "timerId", &len);
    if (!id)
        return;
    qn_pg_args_t args;
    qn_pg_args_init (&args);
    qn_pg_args_cstr (&args, ctx->tenant);
    qn_pg_args_str (&args, id, len);
    qn_hs_exec (codec, ctx, stmt, &args, cb, NULL);
    qn_pg_args_free (&args);
}

void
qn_hs_timer_cancel (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    s_timer_exec (codec, ctx, QN_SQL_TIMER_CANCEL, s_on_timer_cancelled);
}

//  Row: queue, partition, txn_id, payload, due_at, created_at, fired_at,
//  seq, partition_id, is_encrypted.
static void
s_on_timer_get (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    (void) arg;
    if (!qn_hs_found (ctx, res, "timer not found"))
        return;
    int64_t fired_at, seq, pid;
    bool fired = qn_hs_col_int (res, 0, 6, &fired_at);
    qn_buf_t b = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &b);
    qn_jw_obj (&w);
    qn_jw_key (&w, "timerId");
    qn_jw_strn (&w, qn_http_param (ctx, 0), ctx->param_len [0]);
    qn_jw_kstr (&w, "status", fired ? "fired" : "pending");
    qn_hs_jw_text (&w, "queue", res, 0, 0);
    qn_hs_jw_text (&w, "partition", res, 0, 1);
    qn_hs_jw_text (&w, "transactionId", res, 0, 2);
    qn_hs_jw_payload (codec, &w, res, 0, 3, 9);
    qn_hs_jw_ts (&w, "fireAt", res, 0, 4);
    qn_hs_jw_ts (&w, "createdAt", res, 0, 5);
    qn_hs_jw_ts (&w, "firedAt", res, 0, 6);
    char id [QN_ID_STR_LEN + 1];
    if (fired && qn_hs_col_int (res, 0, 7, &seq) && qn_hs_col_int (res, 0, 8, &pid)) {
        qn_id_format (QN_ID_MESSAGE, seq, id);
        qn_jw_kstr (&w, "messageId", id);
        qn_id_format (QN_ID_PARTITION, pid, id);
        qn_jw_kstr (&w, "partitionId", id);
    }
    else {
        qn_jw_knull (&w, "messageId");
        qn_jw_knull (&w, "partitionId");
    }
    qn_jw_obj_end (&w);
    qn_hs_reply_buf (ctx, 200, &b);
}

void
qn_hs_timer_get (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    s_timer_exec (codec, ctx, QN_SQL_TIMER_GET, s_on_timer_get);
}

//  Rows: timer_id, queue, partition, txn_id, payload, due_at, created_at,
//  id, is_encrypted; one more than shown when a next page exists. The
//  cursor is "<due_us>.<id>" of the last row shown.
static void
s_on_timer_list (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    qn_hs_call_t *call = arg;
    if (ctx && !res->ok)
        qn_http_reply_pg_error (ctx, res);
    else
    if (ctx) {
        uint32_t shown = res->row_count > call->limit ? (uint32_t) call->limit : res->row_count;
        qn_buf_t b = QN_BUF_INIT;
        qn_jw_t w;
        qn_jw_init (&w, &b);
        qn_jw_obj (&w);
        qn_jw_key (&w, "timers");
        qn_jw_arr (&w);
        for (uint32_t r = 0; r < shown; r++) {
            qn_jw_obj (&w);
            qn_hs_jw_text (&w, "timerId", res, r, 0);
            qn_hs_jw_text (&w, "queue", res, r, 1);
            qn_hs_jw_text (&w, "partition", res, r, 2);
            qn_hs_jw_text (&w, "transactionId", res, r, 3);
            qn_hs_jw_payload (codec, &w, res, r, 4, 8);
            qn_hs_jw_ts (&w, "fireAt", res, r, 5);
            qn_hs_jw_ts (&w, "createdAt", res, r, 6);
            qn_jw_obj_end (&w);
        }
        qn_jw_arr_end (&w);
        int64_t due, id;
        if (res->row_count > shown && shown
        &&  qn_hs_col_int (res, shown - 1, 5, &due) && qn_hs_col_int (res, shown - 1, 7, &id)) {
            char cursor [48];
            snprintf (cursor, sizeof cursor, "%" PRId64 ".%" PRId64, due, id);
            qn_jw_kstr (&w, "next", cursor);
        }
        else
            qn_jw_knull (&w, "next");
        qn_jw_obj_end (&w);
        qn_hs_reply_buf (ctx, 200, &b);
    }
    free (call);
}

//  Parses a list cursor "<due_us>.<id>". 0, or -1.
static int
s_cursor (const char *s, int64_t *due, int64_t *id)
{
    char tail;
    long long a, b;
    if (sscanf (s, "%lld.%lld%c", &a, &b, &tail) != 2 || b < 0)
        return -1;
    *due = a;
    *id = b;
    return 0;
}

void
qn_hs_timer_list (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    size_t queue_len, after_len;
    bool ok, has_limit;
    int64_t limit = QN_HS_LIMIT_DEFAULT, due = 0, id = 0;
    const char *queue = qn_hs_query_text (ctx, "queue", &queue_len, &ok);
    if (!ok || !qn_hs_query_int (ctx, "limit", 1, QN_HS_LIMIT_MAX, &limit, &has_limit))
        return;
    const char *after = qn_url_param (&ctx->url, "after", &after_len);
    if (after && after_len && s_cursor (after, &due, &id)) {
        qn_http_reply_error (ctx, 400, "after must be a cursor returned as next");
        return;
    }
    qn_hs_call_t *call = qn_zalloc (sizeof *call);
    call->limit = limit;
    qn_pg_args_t args;
    qn_pg_args_init (&args);
    qn_pg_args_cstr (&args, ctx->tenant);
    qn_pg_args_str (&args, queue && queue_len ? queue : NULL, queue_len);
    if (after && after_len) {
        qn_pg_args_int (&args, due);
        qn_pg_args_int (&args, id);
    }
    else {
        qn_pg_args_null (&args);
        qn_pg_args_null (&args);
    }
    qn_pg_args_int (&args, limit + 1);
    qn_hs_exec (codec, ctx, QN_SQL_TIMER_LIST, &args, s_on_timer_list, call);
    qn_pg_args_free (&args);
}
