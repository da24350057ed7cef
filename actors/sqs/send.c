/*  actors/sqs/send.c - SendMessage and SendMessageBatch
    Native pushes with metadata (sqs_send; sealed on queues with
    encryptionEnabled): FIFO messages go to their group's partition,
    standard ones to one of 128 stripe partitions (a delayed one to its
    due second's partition).
    Receives  requests from ops.c's dispatch, PG_RESULT through a callback
    Sends     QN_MSG_PG_EXEC to pg_writer (through qn_sqs_exec)
    Owns      nothing beyond the request
    Failure   every path answers exactly once: an SQS error, or the result
*/
#include "actors/sqs/sqs_int.h"
#include "actors/pg/statements.h"
#include "actors/seal/seal.h"
#include "wire/crypto.h"
#include "wire/ids.h"
#include "wire/sigv4.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>

#define S_STRIPES       128

// ------------------------------------------------------------------ SendMessage(Batch)
//  Queue-dependent checks of one message (§5 SendMessage).
static int
s_send_check (const qn_sqs_req_t *r, const qn_sqs_entry_t *e, qn_sqs_error_t *err)
{
    if (qn_sqs_validate_message (e, (size_t) r->q.max_bytes, err))
        return -1;
    if (r->q.fifo) {
        if (!e->group_id.ptr)
            return qn_sqs_fail (err, QN_SQS_E_MISSING_PARAMETER,
                                "The request must contain the parameter MessageGroupId.");
        if (!e->dedup_id.ptr && !r->q.content_dedup)
            return qn_sqs_fail (err, QN_SQS_E_INVALID_PARAMETER_VALUE,
                                "The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly");
        if (e->delay_seconds > 0)
            return qn_sqs_fail (err, QN_SQS_E_INVALID_PARAMETER_VALUE,
                                "Value %lld for parameter DelaySeconds is invalid. Reason: The request include parameter that is not valid for this queue type.",
                                (long long) e->delay_seconds);
    }
    else
    if (e->dedup_id.ptr)
        return qn_sqs_fail (err, QN_SQS_E_INVALID_PARAMETER_VALUE,
                            "The request include parameter MessageDeduplicationId that is not valid for this queue type");
    return 0;
}

static void
s_on_sent (qn_sqs_codec_t *codec, qn_sqs_req_t *r, qn_pg_result_t *res)
{
    (void) codec;
    if (!res->ok) {
        qn_sqs_reply_pg_error (r, res);
        return;
    }
    int64_t ord;
    if (res->row_count == 0 || (qn_sqs_col_int (res, 0, 0, &ord) && ord == 0)) {
        qn_sqs_no_queue (r);
        return;
    }
    //  seq of each entry by its index (-1: not sent)
    int64_t seqs [QN_SQS_MAX_ENTRIES];
    for (uint32_t i = 0; i < QN_SQS_MAX_ENTRIES; i++)
        seqs [i] = -1;
    for (uint32_t row = 0; row < res->row_count; row++) {
        int64_t seq;
        if (qn_sqs_col_int (res, row, 0, &ord) && ord >= 1 && (uint32_t) ord <= r->batch_sent
            && qn_sqs_col_int (res, row, 1, &seq))
            seqs [r->batch_map [ord - 1]] = seq;
    }
    qn_count (qn_sqs_kernel (codec), "sqs_messages_sent", res->row_count);
    bool batch = r->req.batch;
    qn_buf_t b = QN_BUF_INIT;
    qn_sqs_w_t w;
    qn_sqs_w_begin (&w, r->req.proto, &b, r->req.op);
    if (batch)
        qn_sqs_w_list (&w, "Successful", "SendMessageBatchResultEntry");
    for (uint32_t i = 0; i < r->req.entry_count; i++) {
        const qn_sqs_entry_t *e = &r->req.entries [i];
        if (e->error.code || seqs [i] < 0)
            continue;
        char id [QN_ID_STR_LEN + 1], md5 [33], sn [24];
        if (batch) {
            qn_sqs_w_item_obj (&w);
            qn_sqs_w_str (&w, "Id", e->id.ptr, e->id.len);
        }
        qn_id_format (QN_ID_MESSAGE, seqs [i], id);
        qn_sqs_w_cstr (&w, "MessageId", id);
        qn_sqs_md5_hex (e->body.ptr, e->body.len, md5);
        qn_sqs_w_cstr (&w, "MD5OfMessageBody", md5);
        if (e->attr_count) {
            qn_sqs_md5_attrs (e->attrs, e->attr_count, md5);
            qn_sqs_w_cstr (&w, "MD5OfMessageAttributes", md5);
        }
        if (e->sys_attr_count) {
            qn_sqs_md5_attrs (e->sys_attrs, e->sys_attr_count, md5);
            qn_sqs_w_cstr (&w, "MD5OfMessageSystemAttributes", md5);
        }
        if (r->q.fifo) {
            snprintf (sn, sizeof sn, "%020lld", (long long) seqs [i]);
            qn_sqs_w_cstr (&w, "SequenceNumber", sn);
        }
        if (batch)
            qn_sqs_w_item_obj_end (&w);
    }
    if (batch) {
        qn_sqs_w_list_end (&w);
        qn_sqs_w_list (&w, "Failed", "BatchResultErrorEntry");
        for (uint32_t i = 0; i < r->req.entry_count; i++) {
            const qn_sqs_entry_t *e = &r->req.entries [i];
            if (e->error.code)
                qn_sqs_w_failed (&w, e->id.ptr, e->id.len, &e->error);
        }
        qn_sqs_w_list_end (&w);
    }
    qn_sqs_w_end (&w, r->request_id);
    qn_sqs_reply (r, &b);
    qn_buf_free (&b);
}

//  Sends the entries without errors; a single send with an error answers it.
void
qn_sqs_send (qn_sqs_codec_t *codec, qn_sqs_req_t *r)
{
    qn_sqs_request_t *q = &r->req;
    for (uint32_t i = 0; i < q->entry_count; i++)
        if (!q->entries [i].error.code)
            s_send_check (r, &q->entries [i], &q->entries [i].error);
    if (!q->batch && q->entries [0].error.code) {
        qn_sqs_reply_error (r, &q->entries [0].error);
        return;
    }
    r->batch_sent = 0;
    for (uint32_t i = 0; i < q->entry_count; i++)
        if (!q->entries [i].error.code)
            r->batch_map [r->batch_sent++] = i;
    if (r->batch_sent == 0) {
        //  Nothing to push: every entry failed. Answer through the same writer.
        qn_buf_t b = QN_BUF_INIT;
        qn_sqs_w_t w;
        qn_sqs_w_begin (&w, q->proto, &b, q->op);
        qn_sqs_w_list (&w, "Successful", "SendMessageBatchResultEntry");
        qn_sqs_w_list_end (&w);
        qn_sqs_w_list (&w, "Failed", "BatchResultErrorEntry");
        for (uint32_t i = 0; i < q->entry_count; i++)
            qn_sqs_w_failed (&w, q->entries [i].id.ptr, q->entries [i].id.len, &q->entries [i].error);
        qn_sqs_w_list_end (&w);
        qn_sqs_w_end (&w, r->request_id);
        qn_sqs_reply (r, &b);
        qn_buf_free (&b);
        return;
    }
    uint32_t n = r->batch_sent;
    int64_t now_us = qn_wall_us ();
    qn_pg_args_t a;
    qn_pg_args_init (&a);
    qn_pg_args_cstr (&a, r->tenant);
    qn_pg_args_cstr (&a, r->queue);
    //  Partitions: FIFO group; a delayed standard message its due second
    //  (_sqs-due-<s>, §7.4); else one of the stripes (§7.2).
    qn_pg_args_array (&a, n);
    for (uint32_t k = 0; k < n; k++) {
        const qn_sqs_entry_t *e = &q->entries [r->batch_map [k]];
        char part [64];
        if (r->q.fifo)
            qn_sqs_args_str (&a, &e->group_id);
        else {
            if (e->delay_seconds > 0)
                snprintf (part, sizeof part, "_sqs-due-%lld",
                          (long long) (now_us / 1000000 + e->delay_seconds));
            else
                snprintf (part, sizeof part, "_sqs-%u", randombytes_uniform (S_STRIPES));
            qn_pg_args_cstr (&a, part);
        }
    }
    //  Payloads: the body's bytes, sealed on a queue with encryptionEnabled
    //  when a key is configured, as native pushes are.
    //  (actors/seal/seal.h: the same sealing as the Kafka door's Produce).
    qn_crypto_keys_t *ring = r->q.encrypted? qn_sqs_keys (codec): NULL;
    bool seal = ring && qn_crypto_keys_can_seal (ring);
    qn_buf_t sealed = QN_BUF_INIT;
    qn_pg_args_array (&a, n);
    for (uint32_t k = 0; k < n; k++) {
        const qn_sqs_entry_t *e = &q->entries [r->batch_map [k]];
        if (qn_seal_arg (&a, seal? ring: NULL, e->body.ptr, e->body.len, &sealed) != 0) {
            qn_buf_free (&sealed);
            qn_pg_args_free (&a);
            qn_sqs_reply_errorf (r, QN_SQS_E_INTERNAL_FAILURE, "The message could not be encrypted.");
            return;
        }
    }
    qn_buf_free (&sealed);
    qn_pg_args_array (&a, n);
    for (uint32_t k = 0; k < n; k++) {
        const qn_sqs_entry_t *e = &q->entries [r->batch_map [k]];
        if (!r->q.fifo && e->delay_seconds > 0)
            qn_pg_args_int (&a, now_us + e->delay_seconds * 1000000);
        else
            qn_pg_args_null (&a);
    }
    qn_buf_t j = QN_BUF_INIT;
    qn_pg_args_array (&a, n);
    for (uint32_t k = 0; k < n; k++) {
        const qn_sqs_entry_t *e = &q->entries [r->batch_map [k]];
        if (!e->attr_count) {
            qn_pg_args_null (&a);
            continue;
        }
        qn_buf_reset (&j);
        qn_sqs_attrs_to_json (e->attrs, e->attr_count, &j);
        qn_pg_args_str (&a, j.data, j.len);
    }
    qn_pg_args_array (&a, n);
    for (uint32_t k = 0; k < n; k++) {
        const qn_sqs_entry_t *e = &q->entries [r->batch_map [k]];
        if (!e->sys_attr_count) {
            qn_pg_args_null (&a);
            continue;
        }
        qn_buf_reset (&j);
        qn_sqs_attrs_to_json (e->sys_attrs, e->sys_attr_count, &j);
        qn_pg_args_str (&a, j.data, j.len);
    }
    qn_buf_free (&j);
    qn_pg_args_array (&a, n);
    for (uint32_t k = 0; k < n; k++)
        qn_sqs_args_str (&a, &q->entries [r->batch_map [k]].group_id);
    qn_pg_args_array (&a, n);
    for (uint32_t k = 0; k < n; k++) {
        const qn_sqs_entry_t *e = &q->entries [r->batch_map [k]];
        if (!r->q.fifo)
            qn_pg_args_null (&a);
        else
        if (e->dedup_id.ptr)
            qn_sqs_args_str (&a, &e->dedup_id);
        else {
            char hex [65];
            qn_sigv4_sha256_hex (e->body.ptr, e->body.len, hex);
            qn_pg_args_cstr (&a, hex);
        }
    }
    qn_pg_args_cstr (&a, r->access_key [0]? QN_SQS_ACCOUNT: "anonymous");
    qn_pg_args_bool (&a, r->q.scope_group);
    qn_pg_args_bool (&a, seal);
    qn_sqs_exec_or_fail (codec, r, QN_SQL_SQS_SEND, &a, s_on_sent);
}

