/*  actors/http/txn_riders.c - the riders of POST /api/v1/transaction
    (actors/http/txn.c, txn.h; docs/transactions.md): kv.set, kv.delete,
    timer.schedule and timer.cancel operations validated (qn_htx_parse,
    which also takes the push and ack operations apart) and packed into the
    kv and timer arrays of the queen.bundle call.
    Receives  nothing: called by txn.c with one request
    Sends     a 4xx naming the field through the codec on bad input (413
              for an oversized kv value), or the 200 success:false of an
              unknown operation type
    Owns      nothing: the riders live in the call state (c->ext, freed by
              qn_htx_bundle_free)
    Failure   never crashes on input; bad input answers and returns < 0
*/
#include "actors/http/txn.h"
#include "actors/pg/statements.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
            qn_htx_rider_t *r, qn_buf_t *scratch)
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
        if (len > QN_HTX_VALUE_MAX) {
            qn_http_reply_errorf (ctx, 413, "operations[%u].value must be at most %d bytes", k, QN_HTX_VALUE_MAX);
            return 1;
        }
        if ((rc = s_int (ctx, doc, op, k, "ttl", 0, QN_HTX_TTL_MAX, &r->ttl_s)) < 0)
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
s_timing (qn_http_ctx_t *ctx, const qn_json_doc_t *doc, int op, uint32_t k, qn_htx_rider_t *r,
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
        if (!qn_json_int (doc, delay, &r->delay_ms) && r->delay_ms >= 0 && r->delay_ms <= QN_HTX_DELAY_MAX_MS)
            return 0;
        qn_http_reply_errorf (ctx, 400, "operations[%u].delayMs must be an integer between 0 and %lld",
                              k, (long long) QN_HTX_DELAY_MAX_MS);
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
        if (r->at_us < 0 || r->at_us > qn_wall_us () + QN_HTX_DELAY_MAX_MS * 1000)
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
               qn_htx_rider_t *r, qn_buf_t *scratch)
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
    for (int kind = QN_HTX_PUSH; kind <= QN_HTX_TIMER_CANCEL; kind++)
        if (qn_json_str_eq (doc, type, qn_htx_kind_names [kind]))
            return kind;
    return -1;
}

//  Validates operations into c->ops (and the riders into c->ext). Returns
//  0; 1 when it answered (bad input or an unknown type).
int
qn_htx_parse (qn_http_ctx_t *ctx, qn_hw_call_t *c, int ops, qn_buf_t *scratch)
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
    qn_htx_bundle_t *b = qn_zalloc (sizeof *b);
    b->tenant = qn_strdup (ctx->tenant);
    c->ext = b;
    c->ext_free = qn_htx_bundle_free;
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
        if (kind == QN_HTX_PUSH) {
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
                b->kind [c->count++] = QN_HTX_PUSH;
            }
            continue;
        }
        if (kind < 0) {
            qn_htx_unknown (ctx, c, type);
            return 1;
        }
        qn_hw_op_t *op = &c->ops [c->count];
        if (kind == QN_HTX_ACK) {
            if (qn_hw_ack_check (doc, t, &msgs, &op->ack, scratch, err, sizeof err)) {
                qn_http_reply_errorf (ctx, 400, "operations[%u]: %s", k, err);
                return 1;
            }
            op->ord = c->nack++;
        }
        else {
            qn_htx_rider_t *r = &b->riders [b->nriders];
            bool kv = kind == QN_HTX_KV_SET || kind == QN_HTX_KV_DELETE;
            if (kv ? s_kv_check (ctx, doc, t, k, kind == QN_HTX_KV_SET, r, scratch)
                   : s_timer_check (ctx, doc, t, k, kind == QN_HTX_TIMER_SCHEDULE, r, scratch))
                return 1;
            if (kind == QN_HTX_TIMER_SCHEDULE)
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
int
qn_htx_args_required (qn_http_ctx_t *ctx, const qn_json_doc_t *doc, qn_pg_args_t *args,
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
void
qn_htx_args_kv (qn_pg_args_t *args, const qn_hw_call_t *c, qn_buf_t *scratch)
{
    const qn_htx_bundle_t *b = c->ext;
    for (int f = 0; f < 5; f++) {
        qn_pg_args_array (args, b->nkv);
        for (uint32_t i = 0; i < c->count; i++) {
            if (b->kind [i] != QN_HTX_KV_SET && b->kind [i] != QN_HTX_KV_DELETE)
                continue;
            const qn_htx_rider_t *r = &b->riders [c->ops [i].ord];
            switch (f) {
                case 0: qn_hw_args_tok (args, &c->doc, r->bucket, scratch); break;
                case 1: qn_hw_args_tok (args, &c->doc, r->key, scratch); break;
                case 2: if (b->kind [i] == QN_HTX_KV_SET)
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
void
qn_htx_args_timers (qn_pg_args_t *args, const qn_hw_call_t *c, qn_buf_t *scratch)
{
    const qn_htx_bundle_t *b = c->ext;
    for (int f = 0; f < 9; f++) {
        qn_pg_args_array (args, b->ntimer);
        for (uint32_t i = 0; i < c->count; i++) {
            if (b->kind [i] != QN_HTX_TIMER_SCHEDULE && b->kind [i] != QN_HTX_TIMER_CANCEL)
                continue;
            const qn_htx_rider_t *r = &b->riders [c->ops [i].ord];
            if (f > 0 && b->kind [i] == QN_HTX_TIMER_CANCEL) {
                qn_pg_args_null (args);
                continue;
            }
            const qn_hw_extra_t *x = b->kind [i] == QN_HTX_TIMER_SCHEDULE
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
