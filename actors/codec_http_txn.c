/*  actors/codec_http_txn.c - transactions
    POST /api/v1/transaction (contract §3.12): pushes and acks committed
    together or not at all, in one queen.txn call. The handler validates
    every operation first (400 naming the field; an unknown type answers
    200 success:false without touching the database), seals the payloads
    of encrypted queues (codec_http_write.c), then calls pg_writer.
    Push operations accept delayMs / deliverAt like /api/v1/push.
    Receives  the requests of its route (from codec_http) and the replies
              of its calls
    Sends     QN_MSG_PG_EXEC to pg_writer, "committed" events
    Owns      one call state per request, freed by the call's callback
    Failure   bad input gets a 400; a failing operation rolls everything
              back and answers 200 {"success": false, "error", "results"}
              naming it; systemic failures (database down, timeouts,
              deadlocks) answer 503 and nothing was applied
*/
#include "codec_http_write.h"
#include "pg_statements.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  A result entry for op i (flattened index). `row` < 0: the op ran before
//  the failing one in a transaction that rolled back (no ids).
static void
s_txn_entry (qn_jw_t *w, const qn_hw_call_t *c, uint32_t i, const qn_pg_result_t *res, int row)
{
    const qn_hw_op_t *op = &c->ops [i];
    qn_jw_obj (w);
    qn_jw_kint (w, "index", i);
    qn_jw_kstr (w, "type", op->is_push ? "push" : "ack");
    qn_jw_kbool (w, "success", true);
    if (op->is_push) {
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
    else {
        qn_hw_jw_tok (w, "transactionId", &c->doc, op->ack.txn, NULL);
        qn_jw_knull (w, "error");
        qn_jw_kbool (w, "dlq", row >= 0 && qn_hw_col_bool (res, (uint32_t) row, 8) == 1);
    }
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

//  The flattened index of the op named by a DETAIL "op=<kind>:<ord>" (ord
//  1-based among that kind), or -1.
static int64_t
s_txn_failed_op (const qn_hw_call_t *c, const char *detail, bool *is_ack)
{
    const char *at = detail ? strstr (detail, "op=") : NULL;
    if (!at)
        return -1;
    long ord = 0;
    char kind [8];
    if (sscanf (at, "op=%7[a-z]:%ld", kind, &ord) != 2 || ord < 1)
        return -1;
    *is_ack = !strcmp (kind, "ack");
    if (!*is_ack && strcmp (kind, "push"))
        return -1;
    for (uint32_t i = 0; i < c->count; i++)
        if (c->ops [i].is_push == !*is_ack && c->ops [i].ord == (uint32_t) ord - 1)
            return i;
    return -1;
}

static void
s_txn_failed (qn_http_ctx_t *ctx, const qn_hw_call_t *c, const qn_pg_result_t *res)
{
    bool is_ack = false;
    int64_t failed = s_txn_failed_op (c, res->detail, &is_ack);
    const char *msg = res->message && res->message [0] ? res->message : "database error";
    qn_buf_t b = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &b);
    s_txn_head (&w, false);
    qn_jw_kstr (&w, "error", msg);
    qn_jw_key (&w, "results");
    qn_jw_arr (&w);
    for (int64_t i = 0; i < failed; i++)
        s_txn_entry (&w, c, (uint32_t) i, res, -1);
    if (failed >= 0 && is_ack) {
        const char *prefix = "ACK operation failed: ";
        if (!strncmp (msg, prefix, strlen (prefix)))
            msg += strlen (prefix);
        qn_jw_obj (&w);
        qn_jw_kint (&w, "index", failed);
        qn_jw_kstr (&w, "type", "ack");
        qn_jw_kbool (&w, "success", false);
        qn_hw_jw_tok (&w, "transactionId", &c->doc, c->ops [failed].ack.txn, NULL);
        qn_jw_kstr (&w, "error", msg);
        qn_jw_kbool (&w, "dlq", false);
        qn_jw_obj_end (&w);
    }
    qn_jw_arr_end (&w);
    qn_jw_obj_end (&w);
    qn_hw_reply_buf (ctx, 200, &b);
}

static void
s_on_txn (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    qn_hw_call_t *c = arg;
    if (!ctx)
        ;
    else
    if (!res->ok && (qn_hw_db_unavailable (res) || !strncmp (res->sqlstate, "57", 2)
                 ||  !strncmp (res->sqlstate, "53", 2) || !strncmp (res->sqlstate, "40", 2)))
        //  Systemic (unavailable, timed out, out of resources, serialisation
        //  failure or deadlock): 503, which the client retries; nothing applied.
        qn_http_reply_errorf (ctx, 503, "%s", res->timed_out ? "database did not answer in time"
                              : res->message && res->message [0] ? res->message : "database unavailable");
    else
    if (!res->ok)
        s_txn_failed (ctx, c, res);
    else {
        //  Rows: pushes and acks by their 1-based ord; map them to ops.
        int *row_of = qn_malloc (c->count * sizeof *row_of);
        for (uint32_t i = 0; i < c->count; i++)
            row_of [i] = -1;
        int *push_op = qn_malloc ((c->npush + 1) * sizeof *push_op);
        int *ack_op = qn_malloc ((c->nack + 1) * sizeof *ack_op);
        for (uint32_t i = 0; i < c->count; i++)
            (c->ops [i].is_push ? push_op : ack_op) [c->ops [i].ord] = (int) i;
        qn_hashmap_t *seen = qn_hashmap_new ();
        int64_t pushed = 0;
        for (uint32_t r = 0; r < res->row_count; r++) {
            const char *kind, *q;
            size_t klen, qlen;
            int64_t ord = 0;
            if (!qn_hw_col_str (res, r, 0, &kind, &klen) || !qn_hw_col_int (res, r, 1, &ord) || ord < 1)
                continue;
            bool push = klen == 4 && !memcmp (kind, "push", 4);
            if (ord > (int64_t) (push ? c->npush : c->nack))
                continue;
            row_of [(push ? push_op : ack_op) [ord - 1]] = (int) r;
            pushed += push;
            if (qn_hw_col_str (res, r, 5, &q, &qlen))
                qn_hw_committed_once (codec, seen, ctx->tenant, q, qlen);
        }
        qn_buf_t b = QN_BUF_INIT;
        qn_jw_t w;
        qn_jw_init (&w, &b);
        s_txn_head (&w, true);
        qn_jw_key (&w, "results");
        qn_jw_arr (&w);
        for (uint32_t i = 0; i < c->count; i++)
            s_txn_entry (&w, c, i, res, row_of [i]);
        qn_jw_arr_end (&w);
        qn_jw_obj_end (&w);
        qn_hashmap_destroy (&seen);
        free (row_of);
        free (push_op);
        free (ack_op);
        qn_count (qn_codec_kernel (codec), "messages_pushed", pushed);
        qn_hw_reply_buf (ctx, 200, &b);
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

//  Validates operations into c->ops. Returns 0; 1 when it answered (bad
//  input or an unknown type).
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
    c->ops = qn_zalloc ((size_t) (total ? total : 1) * sizeof *c->ops);
    int64_t now_us = qn_wall_us ();
    uint32_t k = 0;
    for (int t = qn_json_first (doc, ops); t >= 0; t = qn_json_next_sibling (doc, ops, t), k++) {
        int type = qn_json_get (doc, t, "type");
        if (!qn_hw_is_str (doc, type)) {
            qn_http_reply_errorf (ctx, 400, "operations[%u].type must be a string", k);
            return 1;
        }
        if (qn_json_str_eq (doc, type, "push")) {
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
                c->count++;
            }
        }
        else
        if (qn_json_str_eq (doc, type, "ack")) {
            qn_hw_op_t *op = &c->ops [c->count];
            if (qn_hw_ack_check (doc, t, &msgs, &op->ack, scratch, err, sizeof err)) {
                qn_http_reply_errorf (ctx, 400, "operations[%u]: %s", k, err);
                return 1;
            }
            op->ord = c->nack++;
            c->count++;
        }
        else {
            s_txn_unknown (ctx, c, type);
            return 1;
        }
    }
    return 0;
}

//  requiredLeases: absent/null -> nil; else an array of lease UUIDs
//  (empty strings skipped). Returns 0, or -1 after answering 400.
static int
s_pack_required (qn_http_ctx_t *ctx, const qn_json_doc_t *doc, msgpack_packer *pk,
                 qn_buf_t *scratch)
{
    int leases = qn_hw_field (doc, 0, "requiredLeases");
    if (leases < 0) {
        msgpack_pack_nil (pk);
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
    msgpack_pack_array (pk, n);
    for (int t = qn_json_first (doc, leases); t >= 0; t = qn_json_next_sibling (doc, leases, t))
        if (!qn_hw_is_empty_str (doc, t))
            qn_hw_pack_tok (pk, doc, t, scratch);
    return 0;
}

//  Packs a validated (and sealed) transaction into one queen.txn call.
//  Takes c.
static void
s_txn_send (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_hw_call_t *c)
{
    const qn_json_doc_t *doc = &c->doc;
    qn_buf_t scratch = QN_BUF_INIT;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    //  queen.txn: tenant, 7 push arrays, 7 ack arrays, required leases,
    //  not-before instants.
    msgpack_packer pk;
    msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 17);
    qn_hw_pack_cstr (&pk, ctx->tenant);
    qn_hw_pack_push_arrays (&pk, c, "{}", &scratch);
    const qn_hw_ack_t **list = qn_malloc ((c->nack + 1) * sizeof *list);
    for (uint32_t i = 0, j = 0; i < c->count; i++)
        if (!c->ops [i].is_push)
            list [j++] = &c->ops [i].ack;
    qn_hw_pack_acks (&pk, doc, list, c->nack, -1, &scratch);
    free (list);
    if (s_pack_required (ctx, doc, &pk, &scratch))
        goto done;
    qn_hw_pack_not_before (&pk, c);
    int rc = qn_codec_exec (codec, ctx, "pg_writer", QN_SQL_TXN, NULL, sb.data, sb.size,
                            s_on_txn, c);
    if (rc == 0)
        c = NULL;
    else
        qn_http_reply_errorf (ctx, 503, "database unavailable: %s", qn_strerror (rc));
done:
    msgpack_sbuffer_destroy (&sb);
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
