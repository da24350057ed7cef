/*  actors/http/push.c - configure, push and lease extension
    POST /api/v1/configure, /api/v1/push and /api/v1/lease/:leaseId/extend
    (contract §3.5, §3.6, §3.13). A handler validates the whole request
    first (400 naming the field; nothing is written), seals the payloads
    of encrypted queues (actors/http/write.c), then makes one call: the
    protocol-neutral push operation (QN_MSG_PUSH to pg_writer, delayed
    items included; wire/msg_push.h) for a push, PG_EXEC of a catalogue
    statement for the others. Where a push is made durable (PostgreSQL or
    the disk spool) is the write path's decision, not ours: the answer
    says per item queued, duplicate or buffered, or refuses the push.
    Receives  the requests of its routes (from codec_http) and the replies
              of its calls (QN_MSG_PUSH_ANSWER, PG_RESULT)
    Sends     QN_MSG_PUSH / QN_MSG_PG_EXEC to pg_writer
    Owns      one call state per request (the parsed body's tokens, which
              point into the request body), freed by the call's callback
    Failure   bad input gets a 400; a refused push is mapped by SQLSTATE
              (58030, the spool could not sync: 503 "File buffer write
              failed"); no answer in time: 503. A push is never
              acknowledged and then lost
*/
#include "actors/http/write.h"
#include "actors/pg/statements.h"
#include "wire/json_compact.h"
#include "wire/msg_push.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_SPOOL_WAIT_MS 15000   //  A push handed to the spool is answered after fsync

// ------------------------------------------------------------------ configure
static void
s_on_configured (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    (void) codec;
    qn_hw_call_t *c = arg;
    int64_t qid, pid;
    const char *opts;
    size_t opts_len;
    if (!ctx)
        ;
    else
    if (!res->ok)
        qn_http_reply_pg_error (ctx, res);
    else
    if (!qn_hw_col_int (res, 0, 0, &qid) || !qn_hw_col_int (res, 0, 1, &pid)
    ||  !qn_hw_col_str (res, 0, 2, &opts, &opts_len))
        qn_http_reply_error (ctx, 500, "configure returned no row");
    else {
        qn_buf_t b = QN_BUF_INIT;
        qn_jw_t w;
        qn_jw_init (&w, &b);
        qn_jw_obj (&w);
        qn_jw_kbool (&w, "configured", true);
        qn_hw_jw_id (&w, "queueId", QN_ID_QUEUE, qid);
        qn_hw_jw_id (&w, "partitionId", QN_ID_PARTITION, pid);
        qn_jw_kstr (&w, "queue", c->queue);
        qn_jw_kstr (&w, "namespace", c->ns);
        qn_jw_kstr (&w, "task", c->task);
        //  PostgreSQL's json text, in the broker's compact spelling.
        qn_buf_t o = QN_BUF_INIT;
        if (qn_json_compact (opts, opts_len, NULL, &o))
            qn_jw_knull (&w, "options");
        else
            qn_jw_kraw (&w, "options", o.data, o.len);
        qn_buf_free (&o);
        qn_jw_obj_end (&w);
        qn_hw_configured_encryption (codec, ctx, c->queue, opts, opts_len);
        qn_hw_reply_buf (ctx, 200, &b);     //  Frees ctx
    }
    qn_hw_call_free (c);
}

//  namespace / task: a string (checked), anything else is "".
static int
s_configure_label (qn_http_ctx_t *ctx, const qn_json_doc_t *doc, const char *key,
                   qn_buf_t *scratch, char **out)
{
    int tok = qn_json_get (doc, 0, key);
    if (!qn_hw_is_str (doc, tok)) {
        *out = qn_strdup ("");
        return 0;
    }
    const char *why = qn_hw_text_problem (doc, tok, scratch, QN_HW_MAX_NAME);
    if (why) {
        qn_http_reply_errorf (ctx, 400, "%s %s", key, why);
        return -1;
    }
    const char *p;
    size_t len;
    qn_hw_text (doc, tok, scratch, &p, &len);
    *out = qn_strndup (p, len);
    return 0;
}

static void
s_configure (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    qn_hw_call_t *c = qn_hw_call_new (ctx);
    qn_json_doc_t *doc = &c->doc;
    qn_buf_t scratch = QN_BUF_INIT;
    const char *p, *why;
    size_t len;
    if (qn_http_parse_body (ctx, doc))
        goto done;
    int queue = qn_json_get (doc, 0, "queue");
    if (!qn_hw_is_str (doc, queue)) {
        qn_http_reply_error (ctx, 400, "queue is required");
        goto done;
    }
    if ((why = qn_hw_text_problem (doc, queue, &scratch, QN_HW_MAX_NAME))) {
        qn_http_reply_errorf (ctx, 400, "queue %s", why);
        goto done;
    }
    qn_hw_text (doc, queue, &scratch, &p, &len);
    c->queue = qn_strndup (p, len);
    if (s_configure_label (ctx, doc, "namespace", &scratch, &c->ns)
    ||  s_configure_label (ctx, doc, "task", &scratch, &c->task))
        goto done;
    int options = qn_json_get (doc, 0, "options");
    const char *opts = "{}";
    size_t opts_len = 2;
    if (qn_json_type (doc, options) == QN_JSON_OBJECT)
        opts = qn_json_raw (doc, options, &opts_len);

    qn_pg_args_t args;
    qn_pg_args_init (&args);
    qn_pg_args_cstr (&args, ctx->tenant);
    qn_pg_args_cstr (&args, c->queue);
    qn_pg_args_cstr (&args, c->ns);
    qn_pg_args_cstr (&args, c->task);
    qn_pg_args_str (&args, opts, opts_len);
    if (qn_hw_exec_args (codec, ctx, QN_SQL_CONFIGURE, &args, s_on_configured, c) == 0)
        c = NULL;
    qn_pg_args_free (&args);
done:
    qn_buf_free (&scratch);
    qn_hw_call_free (c);
}

// ------------------------------------------------------------------ push
//  A push waiting for its answer. The client may leave meanwhile: the
//  codec then frees the context (ctx->on_cancel) and the answer finds
//  nothing to answer.
typedef struct {
    qn_codec_t *codec;          //  Not owned
    uint64_t ctx_id;
    qn_hw_call_t *c;            //  Owned
} s_pushing_t;

static void
s_forget (qn_http_ctx_t *ctx)
{
    (void) ctx;
}

//  A refused push: the spool could not make it durable (58030), else the
//  database's SQLSTATE mapped as for any statement.
static void
s_refused (qn_http_ctx_t *ctx, const qn_msg_push_answer_t *a)
{
    if (!strcmp (a->sqlstate, "58030")) {
        qn_http_reply_errorf (ctx, 503, "File buffer write failed: %.*s", (int) a->message_len,
                              a->message);
        return;
    }
    qn_pg_result_t res;
    qn_msg_push_refusal_result (a, &res);
    qn_http_reply_pg_error (ctx, &res);
    qn_pg_result_free (&res);
}

//  §3.6's maintenance-mode shape, one result per item: made durable in
//  the spool, replayed later.
static void
s_buffered (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_hw_call_t *c, const qn_msg_push_answer_t *a)
{
    (void) codec;
    qn_buf_t b = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &b);
    qn_jw_arr (&w);
    for (uint32_t i = 0; i < c->count; i++) {
        const qn_hw_item_t *it = &c->items [i];
        qn_msg_push_result_t r;
        qn_msg_push_answer_at (a, i, &r);
        char txn [QN_HW_MAX_NAME + 1];
        snprintf (txn, sizeof txn, "%.*s", (int) r.txn_len, r.txn ? r.txn : "");
        qn_jw_obj (&w);
        qn_jw_kint (&w, "index", i);
        qn_jw_kstr (&w, "status", "buffered");
        qn_hw_jw_tok (&w, "queue", &c->doc, it->queue, NULL);
        qn_hw_jw_tok (&w, "partition", &c->doc, it->partition, "Default");
        qn_hw_jw_tok (&w, "transactionId", &c->doc, it->txn, txn);
        qn_jw_obj_end (&w);
    }
    qn_jw_arr_end (&w);
    qn_hw_reply_buf (ctx, 201, &b);
}

//  One result per item (§3.6): queued or duplicate.
static void
s_stored (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_hw_call_t *c, const qn_msg_push_answer_t *a)
{
    qn_buf_t b = QN_BUF_INIT, scratch = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &b);
    qn_jw_arr (&w);
    int64_t queued = 0;
    for (uint32_t i = 0; i < c->count; i++) {
        const qn_hw_item_t *it = &c->items [i];
        qn_msg_push_result_t r;
        qn_msg_push_answer_at (a, i, &r);
        bool dup = r.status == QN_PUSH_DUPLICATE;
        char mid [QN_ID_STR_LEN + 1];
        qn_id_format (QN_ID_MESSAGE, r.seq, mid);
        qn_jw_obj (&w);
        qn_jw_kint (&w, "index", i);
        qn_hw_jw_tok (&w, "transaction_id", &c->doc, it->txn, mid);
        qn_jw_kstr (&w, "status", dup ? "duplicate" : "queued");
        qn_jw_kstr (&w, "message_id", mid);
        if (!dup) {
            qn_hw_jw_id (&w, "partition_id", QN_ID_PARTITION, r.partition_id);
            qn_hw_jw_trace (&w, "trace_id", &c->doc, it->trace, &scratch);
            queued++;
        }
        qn_hw_jw_tok (&w, "queueName", &c->doc, it->queue, NULL);
        qn_jw_obj_end (&w);
    }
    qn_jw_arr_end (&w);
    qn_buf_free (&scratch);
    qn_count (qn_codec_kernel (codec), "messages_pushed", queued);
    qn_hw_reply_buf (ctx, 201, &b);
}

static void
s_answer (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_hw_call_t *c, const qn_env_t *env)
{
    if (!env) {
        qn_http_reply_error (ctx, 503, "push did not complete in time");
        return;
    }
    msgpack_unpacked holder;
    msgpack_unpacked_init (&holder);
    qn_msg_push_answer_t a;
    if (env->type != QN_MSG_PUSH_ANSWER
    ||  qn_msg_push_answer_decode (env->body.ptr, env->body.len, &holder, &a))
        qn_http_reply_error (ctx, 500, "push returned an unexpected result");
    else
    if (!a.ok)
        s_refused (ctx, &a);
    else
    if (a.count != c->count) {
        qn_warn ("push answer mismatch: items=%u results=%u", c->count, a.count);
        qn_http_reply_error (ctx, 500, "push returned an unexpected result");
    }
    else {
        qn_msg_push_result_t first;
        qn_msg_push_answer_at (&a, 0, &first);
        if (first.status == QN_PUSH_BUFFERED)
            s_buffered (codec, ctx, c, &a);
        else
            s_stored (codec, ctx, c, &a);
    }
    msgpack_unpacked_destroy (&holder);
}

static void
s_on_push_answer (void *self_, void *arg, const qn_env_t *env)
{
    (void) self_;
    s_pushing_t *p = arg;
    qn_http_ctx_t *ctx = qn_codec_request (p->codec, p->ctx_id);
    if (ctx) {
        ctx->on_cancel = NULL;
        s_answer (p->codec, ctx, p->c, env);
    }
    qn_hw_call_free (p->c);
    free (p);
}

//  Sends a validated (and sealed) push to the write path, which answers
//  once it is committed in PostgreSQL or fsync'd in the spool. Takes c.
static void
s_push_send (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_hw_call_t *c)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
    qn_msg_push_begin (&pk, ctx->tenant, strlen (ctx->tenant), false, c->count);
    for (uint32_t i = 0; i < c->count; i++)
        qn_hw_push_item (&pk, &c->doc, &c->items [i], NULL, c->sealed ? &c->sealed [i] : NULL,
                         c->producer);
    //  The write path answers within the statement timeout, or after a
    //  hand-off to the spool and its sync.
    uint32_t timeout = (uint32_t) qn_codec_config (codec)->db_statement_timeout_ms + 2000
                     + S_SPOOL_WAIT_MS;
    s_pushing_t *p = qn_zalloc (sizeof *p);
    p->codec = codec;
    p->ctx_id = ctx->id;
    p->c = c;
    qn_msg_t msg = { .to = "pg_writer", .type = QN_MSG_PUSH, .body = sb.data, .body_len = sb.size };
    int rc = qn_request (qn_codec_kernel (codec), &msg, timeout, s_on_push_answer, p);
    msgpack_sbuffer_destroy (&sb);
    if (rc) {
        qn_http_reply_errorf (ctx, 503, "database unavailable: %s", qn_strerror (rc));
        qn_hw_call_free (c);
        free (p);
        return;
    }
    ctx->on_cancel = s_forget;
}

static void
s_push (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    qn_hw_call_t *c = qn_hw_call_new (ctx);
    qn_json_doc_t *doc = &c->doc;
    qn_buf_t scratch = QN_BUF_INIT;
    char err [256];
    if (qn_http_parse_body (ctx, doc))
        goto done;
    int items;
    int64_t n = qn_hw_body_array (ctx, doc, "items", &items);
    if (n < 0)
        goto done;
    if (n == 0) {
        qn_http_reply_json (ctx, 201, "[]", 2);
        goto done;
    }
    c->items = qn_malloc ((size_t) n * sizeof *c->items);
    int64_t now_us = qn_wall_us ();
    for (int t = qn_json_first (doc, items); t >= 0; t = qn_json_next_sibling (doc, items, t)) {
        char label [32];
        snprintf (label, sizeof label, "items[%u]", c->count);
        if (qn_hw_item_check (doc, t, label, now_us, &c->items [c->count], &scratch, err, sizeof err)) {
            qn_http_reply_error (ctx, 400, err);
            goto done;
        }
        c->count++;
    }
    //  Encrypted queues' payloads are sealed first (§2.10), then sent.
    qn_hw_seal_then (codec, ctx, c, s_push_send);
    c = NULL;
done:
    qn_buf_free (&scratch);
    qn_hw_call_free (c);
}

// ------------------------------------------------------------------ lease extension
static void
s_on_extended (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    (void) codec;
    qn_hw_call_t *c = arg;
    const char *status;
    size_t slen;
    if (!ctx)
        ;
    else
    if (!res->ok)
        qn_http_reply_pg_error (ctx, res);
    else
    if (!qn_hw_col_str (res, 0, 0, &status, &slen))
        qn_http_reply_error (ctx, 500, "renew returned no row");
    else {
        bool ok = slen == 2 && !memcmp (status, "ok", 2);
        int64_t expires = 0;
        qn_buf_t b = QN_BUF_INIT;
        qn_jw_t w;
        qn_jw_init (&w, &b);
        qn_jw_arr (&w);
        qn_jw_obj (&w);
        qn_jw_kint (&w, "index", 0);
        qn_jw_kstr (&w, "leaseId", c->lease);
        qn_jw_kbool (&w, "success", ok);
        qn_jw_key (&w, "error");
        if (ok)
            qn_jw_null (&w);
        else
            qn_jw_strn (&w, status, slen);
        if (ok && qn_hw_col_int (res, 0, 1, &expires)) {
            char ts [32];
            qn_ts_ms (expires, ts);
            qn_jw_kstr (&w, "expiresAt", ts);
        }
        else
            qn_jw_knull (&w, "expiresAt");
        qn_jw_obj_end (&w);
        qn_jw_arr_end (&w);
        qn_hw_reply_buf (ctx, 200, &b);
    }
    qn_hw_call_free (c);
}

static void
s_extend (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    qn_hw_call_t *c = qn_hw_call_new (ctx);
    const char *lease = qn_http_param (ctx, 0);
    uint8_t u [16];
    if (!lease || qn_uuid_parse (lease, strlen (lease), u)) {
        qn_http_reply_error (ctx, 400, "leaseId must be a valid UUID");
        goto done;
    }
    qn_uuid_format (u, c->lease);
    if (qn_http_parse_body (ctx, &c->doc))
        goto done;
    if (qn_json_type (&c->doc, 0) != QN_JSON_OBJECT) {
        qn_http_reply_error (ctx, 400, "Request body must be a JSON object");
        goto done;
    }
    int64_t seconds = 60;
    int tok = qn_hw_field (&c->doc, 0, "seconds");
    if (tok >= 0 && (qn_json_int (&c->doc, tok, &seconds) || seconds < 1 || seconds > 86400)) {
        qn_http_reply_error (ctx, 400, "seconds must be an integer between 1 and 86400");
        goto done;
    }
    qn_pg_args_t args;
    qn_pg_args_init (&args);
    qn_pg_args_cstr (&args, c->lease);
    qn_pg_args_int (&args, seconds);
    qn_pg_args_cstr (&args, ctx->tenant);
    if (qn_hw_exec_args (codec, ctx, QN_SQL_RENEW, &args, s_on_extended, c) == 0)
        c = NULL;
    qn_pg_args_free (&args);
done:
    qn_hw_call_free (c);
}

const qn_http_route_t qn_http_routes_push [] = {
    { "POST", "/api/v1/configure", s_configure, QN_AUTH_READ_WRITE },
    { "POST", "/api/v1/push", s_push, QN_AUTH_READ_WRITE },
    { "POST", "/api/v1/lease/:leaseId/extend", s_extend, QN_AUTH_READ_WRITE },
    { NULL, NULL, NULL, 0 }
};
