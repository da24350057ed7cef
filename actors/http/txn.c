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
    Size      a little past STYLE §12's ~800 lines: the contract's route plus
              four riders; the natural split is codec_http_txn_riders.c
              (the riders' validation, packing and result entries)
*/
#include "actors/http/write.h"
#include "actors/pg/statements.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_VALUE_MAX     (1024 * 1024)   //  Bytes of a kv value (as PUT /api/v1/kv)
#define S_TTL_MAX       315360000       //  kv ttl: 10 years, in seconds
#define S_DELAY_MAX_MS  (S_TTL_MAX * 1000LL)    //  Timers: at most 10 years ahead

//  Operation kinds; s_kind_names spells them as the client does.
typedef enum {
    S_PUSH, S_ACK, S_KV_SET, S_KV_DELETE, S_TIMER_SCHEDULE, S_TIMER_CANCEL
} s_kind_t;

static const char *s_kind_names [] = {
    "push", "ack", "kv.set", "kv.delete", "timer.schedule", "timer.cancel"
};

//  A validated rider: tokens of its fields (-1 when absent).
typedef struct {
    int bucket, key, value;     //  kv
    int64_t if_version, ttl_s;
    bool has_if, has_ttl;
    int timer;                  //  timerId token; -1: minted_id
    int queue, partition, payload, txn;     //  timer.schedule; txn -1: minted_txn
    int64_t at_us, delay_ms;    //  One of them, by has_at
    bool has_at;
    char minted_id [QN_ID_STR_LEN + 1];
    char minted_txn [QN_ID_STR_LEN + 1];
    uint32_t extra;             //  timer.schedule: its payload's index in c->extra
} s_rider_t;

//  The route's part of the call state (c->ext). Rider ops of c->ops have
//  is_push false and ord = their position in `riders`.
typedef struct {
    uint8_t *kind;              //  Owned: s_kind_t per flattened operation
    s_rider_t *riders;          //  Owned
    uint32_t nriders, nkv, ntimer;
    char *tenant;               //  Owned: for the commit work when the client is gone
} s_bundle_t;

static void
s_bundle_free (void *arg)
{
    s_bundle_t *b = arg;
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
s_jw_timer_id (qn_jw_t *w, const qn_hw_call_t *c, const s_rider_t *r)
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
s_rider_fields (qn_jw_t *w, const qn_hw_call_t *c, s_kind_t kind, const s_rider_t *r,
                const qn_pg_result_t *res, int row)
{
    int64_t v;
    if (kind == S_KV_SET || kind == S_KV_DELETE) {
        qn_hw_jw_tok (w, "bucket", &c->doc, r->bucket, NULL);
        qn_hw_jw_tok (w, "key", &c->doc, r->key, NULL);
        if (row >= 0 && qn_hw_col_int (res, (uint32_t) row, 6, &v))
            qn_jw_kint (w, "version", v);
        else
            qn_jw_knull (w, "version");
        s_jw_ts_col (w, "expiresAt", res, kind == S_KV_SET ? row : -1, 7);
        if (kind == S_KV_DELETE && row >= 0)
            qn_jw_kbool (w, "deleted", s_col_is (res, row, 8, "deleted"));
        else
        if (kind == S_KV_DELETE)
            qn_jw_knull (w, "deleted");
    }
    else {
        s_jw_timer_id (w, c, r);
        if (kind == S_TIMER_SCHEDULE) {
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
    const s_bundle_t *b = c->ext;
    s_kind_t kind = b->kind [i];
    qn_jw_obj (w);
    qn_jw_kint (w, "index", i);
    qn_jw_kstr (w, "type", s_kind_names [kind]);
    qn_jw_kbool (w, "success", true);
    if (kind == S_PUSH) {
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
    if (kind == S_ACK) {
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
    const s_bundle_t *b = c->ext;
    s_kind_t kind = b->kind [failed];
    qn_jw_obj (w);
    qn_jw_kint (w, "index", failed);
    qn_jw_kstr (w, "type", s_kind_names [kind]);
    qn_jw_kbool (w, "success", false);
    if (kind == S_ACK) {
        const char *prefix = "ACK operation failed: ";
        if (!strncmp (msg, prefix, strlen (prefix)))
            msg += strlen (prefix);
        qn_hw_jw_tok (w, "transactionId", &c->doc, c->ops [failed].ack.txn, NULL);
        qn_jw_kstr (w, "error", msg);
        qn_jw_kbool (w, "dlq", false);
        qn_jw_obj_end (w);
        return;
    }
    const s_rider_t *r = &b->riders [c->ops [failed].ord];
    const char *at;
    long long v;
    if (kind == S_KV_SET || kind == S_KV_DELETE) {
        qn_hw_jw_tok (w, "bucket", &c->doc, r->bucket, NULL);
        qn_hw_jw_tok (w, "key", &c->doc, r->key, NULL);
    }
    else
        s_jw_timer_id (w, c, r);
    qn_jw_kstr (w, "error", msg);
    if ((at = strstr (detail, "currentVersion=")) && sscanf (at, "currentVersion=%lld", &v) == 1)
        qn_jw_kint (w, "currentVersion", v);
    if (kind == S_TIMER_CANCEL) {
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
    const s_bundle_t *b = c->ext;
    const char *msg = res->message && res->message [0] ? res->message : "database error";
    const char *detail = res->detail ? res->detail : "";
    const char *at = strstr (detail, "index=");
    long failed = -1;
    if (!at || sscanf (at, "index=%ld", &failed) != 1 || failed < 0 || failed >= (long) c->count)
        failed = -1;
    s_kind_t kind = failed >= 0 ? b->kind [failed] : S_PUSH;
    int status = 200;
    if (failed >= 0 && kind != S_PUSH && kind != S_ACK)
        status = !strcmp (res->sqlstate, "QN404") ? 404 : !strcmp (res->sqlstate, "QN409") ? 409 : 400;
    qn_buf_t out = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &out);
    s_txn_head (&w, false);
    qn_jw_kstr (&w, "error", msg);
    if (failed >= 0) {
        qn_jw_kint (&w, "failedIndex", failed);
        qn_jw_kstr (&w, "failedType", s_kind_names [kind]);
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
    if (failed >= 0 && kind != S_PUSH)
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
static void
s_txn_unknown (qn_http_ctx_t *ctx, const qn_hw_call_t *c, int type_tok)
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

// ------------------------------------------------------------------ riders: input
//  Member `field` of operation k as a name (1..255 bytes of UTF-8, no NUL).
//  Returns its token; -1 when absent (or null, or "" with empty_is_absent)
//  and not required; -2 after answering 400.
static int
s_name (qn_http_ctx_t *ctx, const qn_json_doc_t *doc, int op, uint32_t k, const char *field,
        bool required, bool empty_is_absent, qn_buf_t *scratch)
{
    int tok = qn_hw_field (doc, op, field);
    if (tok >= 0 && empty_is_absent && qn_hw_is_empty_str (doc, tok))
        tok = -1;
    if (tok < 0 && !required)
        return -1;
    const char *why = tok < 0 ? "is required"
                    : qn_hw_is_empty_str (doc, tok) ? "must not be empty"
                    : qn_hw_text_problem (doc, tok, scratch, QN_HW_MAX_NAME);
    if (!why)
        return tok;
    qn_http_reply_errorf (ctx, 400, "operations[%u].%s %s", k, field, why);
    return -2;
}

//  Optional integer member `field` in [min, max]: 1 present, 0 absent (or
//  null), -1 after answering 400.
static int
s_int (qn_http_ctx_t *ctx, const qn_json_doc_t *doc, int op, uint32_t k, const char *field,
       int64_t min, int64_t max, int64_t *out)
{
    int tok = qn_hw_field (doc, op, field);
    if (tok < 0)
        return 0;
    if (qn_json_int (doc, tok, out) == 0 && *out >= min && *out <= max)
        return 1;
    qn_http_reply_errorf (ctx, 400, "operations[%u].%s must be an integer between %" PRId64
                          " and %" PRId64, k, field, min, max);
    return -1;
}

//  kv.set {bucket, key, value, ifVersion?, ttl?}, kv.delete {bucket, key,
//  ifVersion?}. Returns 0, or 1 after answering.
static int
s_kv_check (qn_http_ctx_t *ctx, const qn_json_doc_t *doc, int op, uint32_t k, bool set,
            s_rider_t *r, qn_buf_t *scratch)
{
    int rc;
    if ((r->bucket = s_name (ctx, doc, op, k, "bucket", true, false, scratch)) < 0
    ||  (r->key = s_name (ctx, doc, op, k, "key", true, false, scratch)) < 0)
        return 1;
    if (set) {
        r->value = qn_json_get (doc, op, "value");
        size_t len = 0;
        if (r->value >= 0)
            qn_json_raw (doc, r->value, &len);
        if (r->value < 0) {
            qn_http_reply_errorf (ctx, 400, "operations[%u].value is required", k);
            return 1;
        }
        if (len > S_VALUE_MAX) {
            qn_http_reply_errorf (ctx, 413, "operations[%u].value must be at most %d bytes", k, S_VALUE_MAX);
            return 1;
        }
        if ((rc = s_int (ctx, doc, op, k, "ttl", 0, S_TTL_MAX, &r->ttl_s)) < 0)
            return 1;
        r->has_ttl = rc;
    }
    if ((rc = s_int (ctx, doc, op, k, "ifVersion", 0, INT64_MAX, &r->if_version)) < 0)
        return 1;
    r->has_if = rc;
    return 0;
}

//  The timing of timer.schedule, as POST /api/v1/timers: exactly one of
//  fireAt (ISO-8601 string or integer ms since the Unix epoch; in the past:
//  fires at once) and delayMs. Returns 0, or 1 after answering 400.
static int
s_timing (qn_http_ctx_t *ctx, const qn_json_doc_t *doc, int op, uint32_t k, s_rider_t *r,
          qn_buf_t *scratch)
{
    int at = qn_hw_field (doc, op, "fireAt"), delay = qn_hw_field (doc, op, "delayMs");
    int64_t v;
    const char *p;
    size_t len;
    if (at >= 0 && delay >= 0)
        qn_http_reply_errorf (ctx, 400, "operations[%u]: give either fireAt or delayMs, not both", k);
    else
    if (at < 0 && delay < 0)
        qn_http_reply_errorf (ctx, 400, "operations[%u]: fireAt or delayMs is required", k);
    else
    if (delay >= 0) {
        if (!qn_json_int (doc, delay, &r->delay_ms) && r->delay_ms >= 0 && r->delay_ms <= S_DELAY_MAX_MS)
            return 0;
        qn_http_reply_errorf (ctx, 400, "operations[%u].delayMs must be an integer between 0 and %lld",
                              k, (long long) S_DELAY_MAX_MS);
    }
    else {
        r->has_at = true;
        bool ok;
        if (qn_hw_is_str (doc, at))
            ok = !qn_hw_text (doc, at, scratch, &p, &len) && !qn_ts_parse (p, len, &r->at_us);
        else {
            ok = !qn_json_int (doc, at, &v) && v >= 0 && v <= INT64_MAX / 1000;
            r->at_us = ok ? v * 1000 : 0;
        }
        if (!ok)
            qn_http_reply_errorf (ctx, 400, "operations[%u].fireAt must be an ISO-8601 timestamp or"
                                  " milliseconds since the epoch", k);
        else
        if (r->at_us < 0 || r->at_us > qn_wall_us () + S_DELAY_MAX_MS * 1000)
            qn_http_reply_errorf (ctx, 400, "operations[%u].fireAt must be after 1970 and at most"
                                  " 10 years ahead", k);
        else
            return 0;
    }
    return 1;
}

//  timer.schedule {timerId?, queue, partition?, payload, transactionId?,
//  fireAt | delayMs}, timer.cancel {timerId}. Returns 0, or 1 after answering.
static int
s_timer_check (qn_http_ctx_t *ctx, const qn_json_doc_t *doc, int op, uint32_t k, bool schedule,
               s_rider_t *r, qn_buf_t *scratch)
{
    if ((r->timer = s_name (ctx, doc, op, k, "timerId", !schedule, false, scratch)) == -2)
        return 1;
    if (!schedule)
        return 0;
    if (r->timer < 0)
        qn_uuid_v7 (r->minted_id);
    if ((r->queue = s_name (ctx, doc, op, k, "queue", true, false, scratch)) < 0
    ||  (r->partition = s_name (ctx, doc, op, k, "partition", false, false, scratch)) == -2
    ||  (r->txn = s_name (ctx, doc, op, k, "transactionId", false, true, scratch)) == -2)
        return 1;
    if (r->txn < 0)
        qn_uuid_v7 (r->minted_txn);
    r->payload = qn_json_get (doc, op, "payload");
    if (r->payload < 0) {
        qn_http_reply_errorf (ctx, 400, "operations[%u].payload is required", k);
        return 1;
    }
    return s_timing (ctx, doc, op, k, r, scratch);
}

//  The kind named by type token `type`, or -1.
static int
s_kind_of (const qn_json_doc_t *doc, int type)
{
    for (int kind = S_PUSH; kind <= S_TIMER_CANCEL; kind++)
        if (qn_json_str_eq (doc, type, s_kind_names [kind]))
            return kind;
    return -1;
}

//  Validates operations into c->ops (and the riders into c->ext). Returns
//  0; 1 when it answered (bad input or an unknown type).
static int
s_txn_parse (qn_http_ctx_t *ctx, qn_hw_call_t *c, int ops, qn_buf_t *scratch)
{
    static const qn_hw_ack_msgs_t msgs = {
        "transactionId is required", "partitionId is required to ensure message uniqueness", ""
    };
    const qn_json_doc_t *doc = &c->doc;
    char err [256];
    //  Count the flattened operations first: the limit comes before the work.
    int64_t total = 0;
    for (int t = qn_json_first (doc, ops); t >= 0; t = qn_json_next_sibling (doc, ops, t)) {
        int items = qn_json_get (doc, t, "items");
        total += qn_json_str_eq (doc, qn_json_get (doc, t, "type"), "push")
              && qn_json_type (doc, items) == QN_JSON_ARRAY ? qn_json_size (doc, items) : 1;
    }
    if (total > QN_HW_MAX_ITEMS) {
        qn_http_reply_errorf (ctx, 400, "transaction has %lld operations; at most %d are allowed",
                              (long long) total, QN_HW_MAX_ITEMS);
        return 1;
    }
    s_bundle_t *b = qn_zalloc (sizeof *b);
    b->tenant = qn_strdup (ctx->tenant);
    c->ext = b;
    c->ext_free = s_bundle_free;
    size_t n = (size_t) (total ? total : 1);
    c->ops = qn_zalloc (n * sizeof *c->ops);
    b->kind = qn_zalloc (n);
    b->riders = qn_zalloc ((size_t) qn_json_size (doc, ops) * sizeof *b->riders);
    int64_t now_us = qn_wall_us ();
    uint32_t k = 0;
    for (int t = qn_json_first (doc, ops); t >= 0; t = qn_json_next_sibling (doc, ops, t), k++) {
        int type = qn_json_get (doc, t, "type");
        if (!qn_hw_is_str (doc, type)) {
            qn_http_reply_errorf (ctx, 400, "operations[%u].type must be a string", k);
            return 1;
        }
        int kind = s_kind_of (doc, type);
        if (kind == S_PUSH) {
            int items = qn_json_get (doc, t, "items");
            if (qn_json_type (doc, items) != QN_JSON_ARRAY) {
                qn_http_reply_errorf (ctx, 400, "operations[%u].items array is required", k);
                return 1;
            }
            for (int i = qn_json_first (doc, items); i >= 0; i = qn_json_next_sibling (doc, items, i)) {
                qn_hw_op_t *op = &c->ops [c->count];
                char label [32];
                snprintf (label, sizeof label, "items[%u]", c->count);
                if (qn_hw_item_check (doc, i, label, now_us, &op->item, scratch, err, sizeof err)) {
                    qn_http_reply_error (ctx, 400, err);
                    return 1;
                }
                op->is_push = true;
                op->ord = c->npush++;
                b->kind [c->count++] = S_PUSH;
            }
            continue;
        }
        if (kind < 0) {
            s_txn_unknown (ctx, c, type);
            return 1;
        }
        qn_hw_op_t *op = &c->ops [c->count];
        if (kind == S_ACK) {
            if (qn_hw_ack_check (doc, t, &msgs, &op->ack, scratch, err, sizeof err)) {
                qn_http_reply_errorf (ctx, 400, "operations[%u]: %s", k, err);
                return 1;
            }
            op->ord = c->nack++;
        }
        else {
            s_rider_t *r = &b->riders [b->nriders];
            bool kv = kind == S_KV_SET || kind == S_KV_DELETE;
            if (kv ? s_kv_check (ctx, doc, t, k, kind == S_KV_SET, r, scratch)
                   : s_timer_check (ctx, doc, t, k, kind == S_TIMER_SCHEDULE, r, scratch))
                return 1;
            if (kind == S_TIMER_SCHEDULE)
                r->extra = qn_hw_seal_add (c, r->queue, r->payload);
            op->ord = b->nriders++;
            kv ? b->nkv++ : b->ntimer++;
        }
        b->kind [c->count++] = (uint8_t) kind;
    }
    return 0;
}

//  requiredLeases: absent/null -> NULL; else an array of lease UUIDs
//  (empty strings skipped). Returns 0, or -1 after answering 400.
static int
s_args_required (qn_http_ctx_t *ctx, const qn_json_doc_t *doc, qn_pg_args_t *args,
                 qn_buf_t *scratch)
{
    int leases = qn_hw_field (doc, 0, "requiredLeases");
    if (leases < 0) {
        qn_pg_args_null (args);
        return 0;
    }
    if (qn_json_type (doc, leases) != QN_JSON_ARRAY) {
        qn_http_reply_error (ctx, 400, "requiredLeases must be an array of lease ids");
        return -1;
    }
    uint32_t n = 0;
    for (int t = qn_json_first (doc, leases); t >= 0; t = qn_json_next_sibling (doc, leases, t)) {
        const char *p;
        size_t len;
        if (qn_hw_text (doc, t, scratch, &p, &len) || (len && !qn_uuid_valid (p, len))) {
            qn_http_reply_errorf (ctx, 400, "requiredLeases[%u] must be a valid UUID", n);
            return -1;
        }
        n += len > 0;
    }
    qn_pg_args_array (args, n);
    for (int t = qn_json_first (doc, leases); t >= 0; t = qn_json_next_sibling (doc, leases, t))
        if (!qn_hw_is_empty_str (doc, t))
            qn_hw_args_tok (args, doc, t, scratch);
    return 0;
}

// ------------------------------------------------------------------ riders: parameters
static void
s_args_opt_int (qn_pg_args_t *args, bool has, int64_t v)
{
    has ? qn_pg_args_int (args, v) : qn_pg_args_null (args);
}

//  Adds the raw JSON text of tok as bytes (the bytes stored).
static void
s_args_raw (qn_pg_args_t *args, const qn_json_doc_t *doc, int tok)
{
    size_t len;
    const char *raw = qn_json_raw (doc, tok, &len);
    qn_pg_args_bin (args, raw, len);
}

//  The five kv array parameters of queen.bundle: buckets, keys, values
//  (NULL for a delete), ifVersion, ttl.
static void
s_args_kv (qn_pg_args_t *args, const qn_hw_call_t *c, qn_buf_t *scratch)
{
    const s_bundle_t *b = c->ext;
    for (int f = 0; f < 5; f++) {
        qn_pg_args_array (args, b->nkv);
        for (uint32_t i = 0; i < c->count; i++) {
            if (b->kind [i] != S_KV_SET && b->kind [i] != S_KV_DELETE)
                continue;
            const s_rider_t *r = &b->riders [c->ops [i].ord];
            switch (f) {
                case 0: qn_hw_args_tok (args, &c->doc, r->bucket, scratch); break;
                case 1: qn_hw_args_tok (args, &c->doc, r->key, scratch); break;
                case 2: if (b->kind [i] == S_KV_SET)
                            s_args_raw (args, &c->doc, r->value);
                        else
                            qn_pg_args_null (args);
                        break;
                case 3: s_args_opt_int (args, r->has_if, r->if_version); break;
                default: s_args_opt_int (args, r->has_ttl, r->ttl_s); break;
            }
        }
    }
}

//  The nine timer array parameters of queen.bundle: timerIds, then for a
//  schedule (NULL for a cancel) queue, partition, payload (the envelope
//  when its queue is encrypted), transaction id, given, fire-at us, delay
//  ms, and the keyed digest of a sealed payload's plaintext (NULL:
//  plaintext).
static void
s_args_timers (qn_pg_args_t *args, const qn_hw_call_t *c, qn_buf_t *scratch)
{
    const s_bundle_t *b = c->ext;
    for (int f = 0; f < 9; f++) {
        qn_pg_args_array (args, b->ntimer);
        for (uint32_t i = 0; i < c->count; i++) {
            if (b->kind [i] != S_TIMER_SCHEDULE && b->kind [i] != S_TIMER_CANCEL)
                continue;
            const s_rider_t *r = &b->riders [c->ops [i].ord];
            if (f > 0 && b->kind [i] == S_TIMER_CANCEL) {
                qn_pg_args_null (args);
                continue;
            }
            const qn_hw_extra_t *x = b->kind [i] == S_TIMER_SCHEDULE
                                   ? &c->extra [r->extra] : NULL;
            switch (f) {
                case 0: if (r->timer >= 0)
                            qn_hw_args_tok (args, &c->doc, r->timer, scratch);
                        else
                            qn_pg_args_cstr (args, r->minted_id);
                        break;
                case 1: qn_hw_args_tok (args, &c->doc, r->queue, scratch); break;
                case 2: qn_hw_args_tok (args, &c->doc, r->partition, scratch); break;
                case 3: if (x->sealed.len)
                            qn_pg_args_bin (args, x->sealed.data, x->sealed.len);
                        else
                            s_args_raw (args, &c->doc, r->payload);
                        break;
                case 4: if (r->txn >= 0)
                            qn_hw_args_tok (args, &c->doc, r->txn, scratch);
                        else
                            qn_pg_args_cstr (args, r->minted_txn);
                        break;
                case 5: qn_pg_args_bool (args, r->txn >= 0); break;
                case 6: s_args_opt_int (args, r->has_at, r->at_us); break;
                case 7: s_args_opt_int (args, !r->has_at, r->delay_ms); break;
                default: if (x->sealed.len)
                            qn_pg_args_bin (args, x->digest, QN_CRYPTO_DIGEST_LEN);
                        else
                            qn_pg_args_null (args);
                        break;
            }
        }
    }
}

//  Sends a validated (and sealed) transaction as one queen.bundle call.
//  Takes c.
static void
s_txn_send (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_hw_call_t *c)
{
    const qn_json_doc_t *doc = &c->doc;
    const s_bundle_t *b = c->ext;
    qn_buf_t scratch = QN_BUF_INIT;
    //  queen.bundle: tenant, kinds, 7 push arrays, not-before instants,
    //  7 ack arrays, required leases, 5 kv arrays, 9 timer arrays.
    qn_pg_args_t args;
    qn_pg_args_init (&args);
    qn_pg_args_cstr (&args, ctx->tenant);
    qn_pg_args_array (&args, c->count);
    for (uint32_t i = 0; i < c->count; i++)
        qn_pg_args_cstr (&args, s_kind_names [b->kind [i]]);
    qn_hw_args_push_arrays (&args, c, "{}", &scratch);
    qn_hw_args_not_before (&args, c);
    const qn_hw_ack_t **list = qn_malloc ((c->nack + 1) * sizeof *list);
    for (uint32_t i = 0, j = 0; i < c->count; i++)
        if (b->kind [i] == S_ACK)
            list [j++] = &c->ops [i].ack;
    qn_hw_args_acks (&args, doc, list, c->nack, -1, &scratch);
    free (list);
    if (s_args_required (ctx, doc, &args, &scratch))
        goto done;
    s_args_kv (&args, c, &scratch);
    s_args_timers (&args, c, &scratch);
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
    if (s_txn_parse (ctx, c, ops, &scratch))
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
