/*  actors/http/ack.c - acknowledgments
    POST /api/v1/ack and /api/v1/ack/batch (contract §3.10, §3.11). The
    handler validates every acknowledgment first (400 naming the field;
    nothing is written), then makes one queen.ack call on pg_writer and
    answers one result per item, in request order.
    Receives  the requests of its routes (from codec_http) and the replies
              of its calls
    Sends     QN_MSG_PG_EXEC to pg_writer (which publishes "committed" for
              the queues of successful items once they commit: a released
              lease may wake pops)
    Owns      one call state per request, freed by the call's callback
    Failure   bad input gets a 400; database errors are mapped by SQLSTATE
*/
#include "actors/http/write.h"
#include "actors/pg/statements.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  The §3.10 result array, in request order.
static void
s_on_acked (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    (void) codec;
    qn_hw_call_t *c = arg;
    if (!ctx)
        ;
    else
    if (!res->ok)
        qn_http_reply_pg_error (ctx, res);
    else {
        qn_buf_t b = QN_BUF_INIT;
        qn_jw_t w;
        qn_jw_init (&w, &b);
        qn_jw_arr (&w);
        for (uint32_t r = 0; r < res->row_count; r++) {
            int64_t ord = 0;
            qn_hw_col_int (res, r, 0, &ord);
            if (ord < 1 || ord > (int64_t) c->count)
                continue;
            const qn_hw_ack_t *a = &c->acks [ord - 1];
            bool ok = qn_hw_col_bool (res, r, 1) == 1;
            qn_jw_obj (&w);
            qn_jw_kint (&w, "index", ord - 1);
            qn_hw_jw_tok (&w, "transactionId", &c->doc, a->txn, NULL);
            qn_jw_kbool (&w, "success", ok);
            qn_hw_jw_col_str (&w, "error", res, r, 2);
            qn_hw_jw_col_str (&w, "queueName", res, r, 3);
            qn_hw_jw_col_str (&w, "partitionName", res, r, 4);
            qn_hw_jw_col_bool (&w, "leaseReleased", res, r, 5);
            qn_jw_kbool (&w, "dlq", qn_hw_col_bool (res, r, 6) == 1);
            qn_jw_obj_end (&w);
        }
        qn_jw_arr_end (&w);
        qn_hw_reply_buf (ctx, 200, &b);
    }
    qn_hw_call_free (c);
}

//  Validated acks -> one QN_SQL_ACK call. Takes c.
static void
s_ack_exec (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_hw_call_t *c, int group)
{
    qn_buf_t scratch = QN_BUF_INIT;
    const qn_hw_ack_t **list = qn_malloc ((c->count ? c->count : 1) * sizeof *list);
    for (uint32_t i = 0; i < c->count; i++)
        list [i] = &c->acks [i];
    qn_pg_args_t args;
    qn_pg_args_init (&args);
    qn_pg_args_cstr (&args, ctx->tenant);
    qn_hw_args_acks (&args, &c->doc, list, c->count, group, &scratch);
    free (list);
    qn_buf_free (&scratch);
    int rc = qn_codec_exec_args (codec, ctx, "pg_writer", QN_SQL_ACK, NULL, &args, s_on_acked, c);
    qn_pg_args_free (&args);
    if (rc) {
        qn_http_reply_errorf (ctx, 503, "database unavailable: %s", qn_strerror (rc));
        qn_hw_call_free (c);
    }
}

static void
s_ack (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    static const qn_hw_ack_msgs_t msgs = {
        "transactionId is required", "partitionId is required to ensure message uniqueness", ""
    };
    qn_hw_call_t *c = qn_hw_call_new (ctx);
    qn_buf_t scratch = QN_BUF_INIT;
    char err [256];
    if (qn_http_parse_body (ctx, &c->doc))
        goto done;
    c->acks = qn_malloc (sizeof *c->acks);
    if (qn_hw_ack_check (&c->doc, 0, &msgs, &c->acks [0], &scratch, err, sizeof err)) {
        qn_http_reply_error (ctx, 400, err);
        goto done;
    }
    c->count = 1;
    s_ack_exec (codec, ctx, c, -1);
    c = NULL;
done:
    qn_buf_free (&scratch);
    qn_hw_call_free (c);
}

static void
s_ack_batch (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    qn_hw_call_t *c = qn_hw_call_new (ctx);
    qn_json_doc_t *doc = &c->doc;
    qn_buf_t scratch = QN_BUF_INIT;
    char err [256];
    if (qn_http_parse_body (ctx, doc))
        goto done;
    int list;
    int64_t n = qn_hw_body_array (ctx, doc, "acknowledgments", &list);
    if (n < 0)
        goto done;
    int group = qn_hw_field (doc, 0, "consumerGroup");
    const char *why;
    if (group >= 0 && (why = qn_hw_text_problem (doc, group, &scratch, QN_HW_MAX_NAME))) {
        qn_http_reply_errorf (ctx, 400, "consumerGroup %s", why);
        goto done;
    }
    if (n == 0) {
        qn_http_reply_json (ctx, 200, "[]", 2);
        goto done;
    }
    c->acks = qn_malloc ((size_t) n * sizeof *c->acks);
    for (int t = qn_json_first (doc, list); t >= 0; t = qn_json_next_sibling (doc, list, t)) {
        char prefix [48];
        snprintf (prefix, sizeof prefix, "acknowledgments[%u].", c->count);
        qn_hw_ack_msgs_t msgs = {
            "Each acknowledgment must have a valid transactionId string",
            "Each acknowledgment must have a valid partitionId string to ensure message uniqueness",
            prefix
        };
        if (qn_hw_ack_check (doc, t, &msgs, &c->acks [c->count], &scratch, err, sizeof err)) {
            qn_http_reply_error (ctx, 400, err);
            goto done;
        }
        c->count++;
    }
    s_ack_exec (codec, ctx, c, group);
    c = NULL;
done:
    qn_buf_free (&scratch);
    qn_hw_call_free (c);
}

const qn_http_route_t qn_http_routes_ack [] = {
    { "POST", "/api/v1/ack", s_ack, QN_AUTH_READ_WRITE },
    { "POST", "/api/v1/ack/batch", s_ack_batch, QN_AUTH_READ_WRITE },
    { NULL, NULL, NULL, 0 }
};
