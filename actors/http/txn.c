/*  actors/http/txn.c - transactions and their riders
    POST /api/v1/transaction (contract §3.12, docs/transactions.md): pushes
    and acks, plus our riders kv.set, kv.delete, timer.schedule and
    timer.cancel, committed together or not at all, in one queen.bundle
    call (schema/functions/32_bundle.sql). The handler validates every operation
    first (4xx naming the field; an unknown type answers 200 success:false
    without touching the database, as the contract says), seals the
    payloads of encrypted queues (actors/http/seal.c: push items, and the
    payloads of timer.schedule riders, with the keyed digest of their
    plaintext for the timer's fingerprint), then calls pg_writer.
    Push operations accept delayMs / deliverAt like /api/v1/push.
    Receives  the requests of its route (from codec_http) and the replies
              of its calls
    Sends     QN_MSG_PG_EXEC to pg_writer (which publishes "committed"
              for the pushed and acked queues); after a commit, QN_MSG_TIMER_ARM
              [id, due_us] to timers for each timer it created (also
              when the client has gone away meanwhile)
    Owns      one call state per request (with the riders in c->ext),
              freed by the call's callback
    Failure   bad input gets a 400 (413 for an oversized kv value); a
              failing operation rolls everything back: the contract's
              failures (push, ack, requiredLeases, database errors) answer
              200 {"success": false, ...}, a failing rider 409 or 404, each
              naming the failing operation (failedIndex, failedType);
              systemic failures (database down, timeouts, deadlocks) answer
              503 (rolled back, or unknown when the call was cut off)
    Files     this one: the route, the call and its answers;
              actors/http/txn_riders.c: the riders' validation and their
              bundle parameters (txn.h)
*/
#include "actors/http/txn.h"
#include "actors/pg/statements.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const qn_htx_kind_names [] = {
    "push", "ack", "kv.set", "kv.delete", "timer.schedule", "timer.cancel"
};

void
qn_htx_bundle_free (void *arg)
{
    qn_htx_bundle_t *b = arg;
    if (b) {
        free (b->kind);
        free (b->riders);
        free (b->tenant);
        free (b);
    }
}

// ------------------------------------------------------------------ results
//  Writes "timerId" of a timer rider.
static void
s_jw_timer_id (qn_jw_t *w, const qn_hw_call_t *c, const qn_htx_rider_t *r)
{
    qn_hw_jw_tok (w, "timerId", &c->doc, r->timer, r->timer < 0 ? r->minted_id : NULL);
}

//  "key": ts-ms of timestamp column col of row, or null.
static void
s_jw_ts_col (qn_jw_t *w, const char *key, const qn_pg_result_t *res, int row, uint32_t col)
{
    int64_t us;
    char ts [32];
    if (row >= 0 && qn_hw_col_int (res, (uint32_t) row, col, &us)) {
        qn_ts_ms (us, ts);
        qn_jw_kstr (w, key, ts);
    }
    else
        qn_jw_knull (w, key);
}

//  True when text column col of row equals s.
static bool
s_col_is (const qn_pg_result_t *res, int row, uint32_t col, const char *s)
{
    const char *p;
    size_t len;
    return row >= 0 && qn_hw_col_str (res, (uint32_t) row, col, &p, &len)
        && len == strlen (s) && !memcmp (p, s, len);
}

//  The fields of a rider's result entry. Columns of queen.bundle: 0 idx,
//  1 kind, 2 seq, 3 partition_id, 4 queue_name, 5 dlq, 6 version, 7 at,
//  8 status, 9 timer_row. `row` < 0: not run, or rolled back.
static void
s_rider_fields (qn_jw_t *w, const qn_hw_call_t *c, qn_htx_kind_t kind, const qn_htx_rider_t *r,
                const qn_pg_result_t *res, int row)
{
    int64_t v;
    if (kind == QN_HTX_KV_SET || kind == QN_HTX_KV_DELETE) {
        qn_hw_jw_tok (w, "bucket", &c->doc, r->bucket, NULL);
        qn_hw_jw_tok (w, "key", &c->doc, r->key, NULL);
        if (row >= 0 && qn_hw_col_int (res, (uint32_t) row, 6, &v))
            qn_jw_kint (w, "version", v);
        else
            qn_jw_knull (w, "version");
        s_jw_ts_col (w, "expiresAt", res, kind == QN_HTX_KV_SET ? row : -1, 7);
        if (kind == QN_HTX_KV_DELETE && row >= 0)
            qn_jw_kbool (w, "deleted", s_col_is (res, row, 8, "deleted"));
        else
        if (kind == QN_HTX_KV_DELETE)
            qn_jw_knull (w, "deleted");
    }
    else {
        s_jw_timer_id (w, c, r);
        if (kind == QN_HTX_TIMER_SCHEDULE) {
            s_jw_ts_col (w, "fireAt", res, row, 7);
            if (row >= 0) {
                qn_jw_kbool (w, "created", s_col_is (res, row, 8, "created"));
                qn_jw_kbool (w, "fired", s_col_is (res, row, 8, "fired"));
            }
            else {
                qn_jw_knull (w, "created");
                qn_jw_knull (w, "fired");
            }
        }
        else
        if (row >= 0) {
            qn_jw_kbool (w, "cancelled", true);
            qn_jw_kbool (w, "fired", false);
        }
        else {
            qn_jw_knull (w, "cancelled");
            qn_jw_knull (w, "fired");
        }
    }
}

//  A successful result entry for op i (flattened index). `row` < 0: the op
//  ran before the failing one in a transaction that rolled back (no ids).
static void
s_txn_entry (qn_jw_t *w, const qn_hw_call_t *c, uint32_t i, const qn_pg_result_t *res, int row)
{
    const qn_hw_op_t *op = &c->ops [i];
    const qn_htx_bundle_t *b = c->ext;
    qn_htx_kind_t kind = b->kind [i];
    qn_jw_obj (w);
    qn_jw_kint (w, "index", i);
    qn_jw_kstr (w, "type", qn_htx_kind_names [kind]);
    qn_jw_kbool (w, "success", true);
    if (kind == QN_HTX_PUSH) {
        int64_t seq = 0, pid = 0;
        bool ran = row >= 0 && qn_hw_col_int (res, (uint32_t) row, 2, &seq)
                && qn_hw_col_int (res, (uint32_t) row, 3, &pid);
        char mid [QN_ID_STR_LEN + 1];
        qn_id_format (QN_ID_MESSAGE, seq, mid);
        qn_hw_jw_tok (w, "transactionId", &c->doc, op->item.txn, ran ? mid : NULL);
        if (ran) {
            qn_jw_kstr (w, "messageId", mid);
            qn_hw_jw_id (w, "partitionId", QN_ID_PARTITION, pid);
        }
        else {
            qn_jw_knull (w, "messageId");
            qn_jw_knull (w, "partitionId");
        }
        qn_hw_jw_tok (w, "queueName", &c->doc, op->item.queue, NULL);
    }
    else
    if (kind == QN_HTX_ACK) {
        qn_hw_jw_tok (w, "transactionId", &c->doc, op->ack.txn, NULL);
        qn_jw_knull (w, "error");
        qn_jw_kbool (w, "dlq", row >= 0 && qn_hw_col_bool (res, (uint32_t) row, 5) == 1);
    }
    else
        s_rider_fields (w, c, kind, &b->riders [op->ord], res, row);
    qn_jw_obj_end (w);
}

//  Starts {"transactionId": fresh, "success": ok, ...
static void
s_txn_head (qn_jw_t *w, bool ok)
{
    char id [QN_ID_STR_LEN + 1];
    qn_uuid_v4 (id);
    qn_jw_obj (w);
    qn_jw_kstr (w, "transactionId", id);
    qn_jw_kbool (w, "success", ok);
}

//  The failing entry of op `failed`: an ack (its error text without the
//  "ACK operation failed: " prefix) or a rider (the cause and its facts).
static void
s_failed_entry (qn_jw_t *w, const qn_hw_call_t *c, uint32_t failed, const char *msg,
                const char *detail)
{
    const qn_htx_bundle_t *b = c->ext;
    qn_htx_kind_t kind = b->kind [failed];
    qn_jw_obj (w);
    qn_jw_kint (w, "index", failed);
    qn_jw_kstr (w, "type", qn_htx_kind_names [kind]);
    qn_jw_kbool (w, "success", false);
    if (kind == QN_HTX_ACK) {
        const char *prefix = "ACK operation failed: ";
        if (!strncmp (msg, prefix, strlen (prefix)))
            msg += strlen (prefix);
        qn_hw_jw_tok (w, "transactionId", &c->doc, c->ops [failed].ack.txn, NULL);
        qn_jw_kstr (w, "error", msg);
        qn_jw_kbool (w, "dlq", false);
        qn_jw_obj_end (w);
        return;
    }
    const qn_htx_rider_t *r = &b->riders [c->ops [failed].ord];
    const char *at;
    long long v;
    if (kind == QN_HTX_KV_SET || kind == QN_HTX_KV_DELETE) {
        qn_hw_jw_tok (w, "bucket", &c->doc, r->bucket, NULL);
        qn_hw_jw_tok (w, "key", &c->doc, r->key, NULL);
    }
    else
        s_jw_timer_id (w, c, r);
    qn_jw_kstr (w, "error", msg);
    if ((at = strstr (detail, "currentVersion=")) && sscanf (at, "currentVersion=%lld", &v) == 1)
        qn_jw_kint (w, "currentVersion", v);
    if (kind == QN_HTX_TIMER_CANCEL) {
        bool fired = (at = strstr (detail, "firedAt=")) && sscanf (at, "firedAt=%lld", &v) == 1;
        qn_jw_kbool (w, "cancelled", false);
        qn_jw_kbool (w, "fired", fired);
        if (fired) {
            char ts [32];
            qn_ts_ms (v, ts);
            qn_jw_kstr (w, "firedAt", ts);
        }
    }
    qn_jw_obj_end (w);
}

//  A bundle that rolled back. DETAIL "index=<i> ..." names the failing
//  operation (none: a requiredLeases or database failure). The contract's
//  failures answer 200; a rider's answer 404 (QN404), 409 (QN409) or 400.
static void
s_txn_failed (qn_http_ctx_t *ctx, const qn_hw_call_t *c, const qn_pg_result_t *res)
{
    const qn_htx_bundle_t *b = c->ext;
    const char *msg = res->message && res->message [0] ? res->message : "database error";
    const char *detail = res->detail ? res->detail : "";
    const char *at = strstr (detail, "index=");
    long failed = -1;
    if (!at || sscanf (at, "index=%ld", &failed) != 1 || failed < 0 || failed >= (long) c->count)
        failed = -1;
    qn_htx_kind_t kind = failed >= 0 ? b->kind [failed] : QN_HTX_PUSH;
    int status = 200;
    if (failed >= 0 && kind != QN_HTX_PUSH && kind != QN_HTX_ACK)
        status = !strcmp (res->sqlstate, "QN404") ? 404 : !strcmp (res->sqlstate, "QN409") ? 409 : 400;
    qn_buf_t out = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &out);
    s_txn_head (&w, false);
    qn_jw_kstr (&w, "error", msg);
    if (failed >= 0) {
        qn_jw_kint (&w, "failedIndex", failed);
        qn_jw_kstr (&w, "failedType", qn_htx_kind_names [kind]);
    }
    else {
        qn_jw_knull (&w, "failedIndex");
        qn_jw_knull (&w, "failedType");
    }
    qn_jw_key (&w, "results");
    qn_jw_arr (&w);
    for (long i = 0; i < failed; i++)
        s_txn_entry (&w, c, (uint32_t) i, res, -1);
    //  A failing push leaves no entry (contract §3.12).
    if (failed >= 0 && kind != QN_HTX_PUSH)
        s_failed_entry (&w, c, (uint32_t) failed, msg, detail);
    qn_jw_arr_end (&w);
    qn_jw_obj_end (&w);
    qn_hw_reply_buf (ctx, status, &out);
}

//  After a commit: arms the created timers and maps operations to rows
//  (row_of, -1 for none). Runs whether or not the client is still there.
//  (The "committed" events of the pushed and acked queues are pg_writer's:
//  it publishes them when the bundle commits, actors/pg/statements.c.)
static void
s_committed (qn_codec_t *codec, const qn_hw_call_t *c,
             const qn_pg_result_t *res, int *row_of)
{
    int64_t pushed = 0;
    for (uint32_t r = 0; r < res->row_count; r++) {
        int64_t idx = -1, id, due;
        const char *kind;
        size_t klen;
        if (!qn_hw_col_int (res, r, 0, &idx) || idx < 0 || idx >= (int64_t) c->count
        ||  !qn_hw_col_str (res, r, 1, &kind, &klen))
            continue;
        if (row_of)
            row_of [idx] = (int) r;
        bool push = klen == 4 && !memcmp (kind, "push", 4);
        pushed += push;
        if (s_col_is (res, (int) r, 8, "created") && qn_hw_col_int (res, r, 9, &id)
        &&  qn_hw_col_int (res, r, 7, &due))
            qn_hw_timer_arm (codec, id, due);
    }
    qn_count (qn_codec_kernel (codec), "messages_pushed", pushed);
}

static void
s_on_txn (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    qn_hw_call_t *c = arg;
    if (res->ok && !ctx)
        s_committed (codec, c, res, NULL);
    else
    if (!ctx)
        ;
    else
    if (qn_hw_systemic (res))
        //  Systemic (unavailable, timed out, out of resources, serialisation
        //  failure or deadlock): 503, which the client retries. Rolled back,
        //  except after a broken connection or no answer in time: then the
        //  outcome is unknown, like a lost response (docs/transactions.md).
        qn_http_reply_errorf (ctx, 503, "%s", res->timed_out ? "database did not answer in time"
                              : res->message && res->message [0] ? res->message : "database unavailable");
    else
    if (!res->ok)
        s_txn_failed (ctx, c, res);
    else {
        int *row_of = qn_malloc (c->count * sizeof *row_of);
        for (uint32_t i = 0; i < c->count; i++)
            row_of [i] = -1;
        s_committed (codec, c, res, row_of);
        qn_buf_t out = QN_BUF_INIT;
        qn_jw_t w;
        qn_jw_init (&w, &out);
        s_txn_head (&w, true);
        qn_jw_key (&w, "results");
        qn_jw_arr (&w);
        for (uint32_t i = 0; i < c->count; i++)
            s_txn_entry (&w, c, i, res, row_of [i]);
        qn_jw_arr_end (&w);
        qn_jw_obj_end (&w);
        free (row_of);
        qn_hw_reply_buf (ctx, 200, &out);
    }
    qn_hw_call_free (c);
}

//  Unknown operation type: answered without touching the database.
void
qn_htx_unknown (qn_http_ctx_t *ctx, const qn_hw_call_t *c, int type_tok)
{
    qn_buf_t scratch = QN_BUF_INIT, msg = QN_BUF_INIT;
    const char *p;
    size_t len;
    qn_hw_text (&c->doc, type_tok, &scratch, &p, &len);
    qn_buf_puts (&msg, "Unknown operation type: ");
    qn_buf_append (&msg, p, len);
    qn_buf_t b = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &b);
    s_txn_head (&w, false);
    qn_jw_key (&w, "error");
    qn_jw_strn (&w, msg.data, msg.len);
    qn_jw_kint (&w, "failedIndex", c->count);
    qn_jw_key (&w, "failedType");
    qn_jw_strn (&w, p, len);
    qn_jw_key (&w, "results");
    qn_jw_arr (&w);
    for (uint32_t i = 0; i < c->count; i++)
        s_txn_entry (&w, c, i, NULL, -1);
    qn_jw_obj (&w);
    qn_jw_kint (&w, "index", c->count);
    qn_jw_key (&w, "type");
    qn_jw_strn (&w, p, len);
    qn_jw_kbool (&w, "success", false);
    qn_jw_key (&w, "error");
    qn_jw_strn (&w, msg.data, msg.len);
    qn_jw_obj_end (&w);
    qn_jw_arr_end (&w);
    qn_jw_obj_end (&w);
    qn_buf_free (&scratch);
    qn_buf_free (&msg);
    qn_hw_reply_buf (ctx, 200, &b);
}


//  Sends a validated (and sealed) transaction as one queen.bundle call.
//  Takes c.
static void
s_txn_send (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_hw_call_t *c)
{
    const qn_json_doc_t *doc = &c->doc;
    const qn_htx_bundle_t *b = c->ext;
    qn_buf_t scratch = QN_BUF_INIT;
    //  queen.bundle: tenant, kinds, 7 push arrays, not-before instants,
    //  7 ack arrays, required leases, 5 kv arrays, 9 timer arrays.
    qn_pg_args_t args;
    qn_pg_args_init (&args);
    qn_pg_args_cstr (&args, ctx->tenant);
    qn_pg_args_array (&args, c->count);
    for (uint32_t i = 0; i < c->count; i++)
        qn_pg_args_cstr (&args, qn_htx_kind_names [b->kind [i]]);
    qn_hw_args_push_arrays (&args, c, "{}", &scratch);
    qn_hw_args_not_before (&args, c);
    const qn_hw_ack_t **list = qn_malloc ((c->nack + 1) * sizeof *list);
    for (uint32_t i = 0, j = 0; i < c->count; i++)
        if (b->kind [i] == QN_HTX_ACK)
            list [j++] = &c->ops [i].ack;
    qn_hw_args_acks (&args, doc, list, c->nack, -1, &scratch);
    free (list);
    if (qn_htx_args_required (ctx, doc, &args, &scratch))
        goto done;
    qn_htx_args_kv (&args, c, &scratch);
    qn_htx_args_timers (&args, c, &scratch);
    assert (args.count == 32);
    if (qn_hw_exec_args (codec, ctx, QN_SQL_BUNDLE, &args, s_on_txn, c) == 0)
        c = NULL;
done:
    qn_pg_args_free (&args);
    qn_buf_free (&scratch);
    qn_hw_call_free (c);
}

static void
s_transaction (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    qn_hw_call_t *c = qn_hw_call_new (ctx);
    qn_json_doc_t *doc = &c->doc;
    qn_buf_t scratch = QN_BUF_INIT;
    if (qn_http_parse_body (ctx, doc))
        goto done;
    int ops = qn_json_get (doc, 0, "operations");
    if (qn_json_type (doc, ops) != QN_JSON_ARRAY) {
        qn_http_reply_error (ctx, 400, "operations array required");
        goto done;
    }
    if (qn_json_size (doc, ops) == 0) {
        qn_http_reply_error (ctx, 400, "operations array cannot be empty");
        goto done;
    }
    if (qn_htx_parse (ctx, c, ops, &scratch))
        goto done;
    //  Encrypted queues' payloads are sealed first (§2.10), then sent.
    qn_hw_seal_then (codec, ctx, c, s_txn_send);
    c = NULL;
done:
    qn_buf_free (&scratch);
    qn_hw_call_free (c);
}

const qn_http_route_t qn_http_routes_txn [] = {
    { "POST", "/api/v1/transaction", s_transaction, QN_AUTH_READ_WRITE },
    { NULL, NULL, NULL, 0 }
};
