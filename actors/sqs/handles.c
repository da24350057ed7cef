/*  actors/sqs/handles.c - DeleteMessage(Batch), ChangeMessageVisibility(Batch)
    Each entry's receipt handle is checked (HMAC, this queue), then one
    catalogue statement for the whole batch: sqs_ack (a native ack) or
    sqs_visibility (a lease change).
    Receives  requests from ops.c's dispatch, PG_RESULT through a callback
    Sends     QN_MSG_PG_EXEC to pg_writer (through qn_sqs_exec)
    Owns      nothing beyond the request
    Failure   every path answers exactly once: an SQS error, or the result
*/
#include "actors/sqs/sqs_int.h"
#include "actors/pg/statements.h"

#include <stdio.h>
#include <string.h>

// ------------------------------------------------------------------ DeleteMessage / ChangeMessageVisibility
static void
s_uuid_text (const uint8_t b [16], char out [37])
{
    snprintf (out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
              b [0], b [1], b [2], b [3], b [4], b [5], b [6], b [7], b [8], b [9], b [10], b [11],
              b [12], b [13], b [14], b [15]);
}

//  Decodes each entry's receipt handle; bad ones get ReceiptHandleIsInvalid.
static void
s_handles (qn_sqs_req_t *r)
{
    for (uint32_t i = 0; i < r->req.entry_count; i++) {
        qn_sqs_entry_t *e = &r->req.entries [i];
        if (e->error.code)
            continue;
        if (qn_sqs_handle_decode (e->receipt_handle.ptr, e->receipt_handle.len, r->q.key, &r->handles [i])
            || r->handles [i].queue_id != r->q.id)
            qn_sqs_fail (&e->error, QN_SQS_E_RECEIPT_HANDLE_INVALID,
                         "The input receipt handle \"%.*s\" is not a valid receipt handle.",
                         (int) (e->receipt_handle.len > 100? 100: e->receipt_handle.len),
                         e->receipt_handle.ptr);
    }
}

//  Batch answer (or the single one) after sqs_ack / sqs_visibility rows.
static void
s_on_handled (qn_sqs_codec_t *codec, qn_sqs_req_t *r, qn_pg_result_t *res)
{
    (void) codec;
    if (!res->ok) {
        qn_sqs_reply_pg_error (r, res);
        return;
    }
    bool visibility = r->req.op == QN_SQS_OP_CHANGE_MESSAGE_VISIBILITY
                   || r->req.op == QN_SQS_OP_CHANGE_MESSAGE_VISIBILITY_BATCH;
    for (uint32_t row = 0; row < res->row_count; row++) {
        int64_t ord;
        if (!qn_sqs_col_int (res, row, 0, &ord) || ord < 1 || (uint32_t) ord > r->batch_sent)
            continue;
        qn_sqs_entry_t *e = &r->req.entries [r->batch_map [ord - 1]];
        if (qn_sqs_col_is (res, row, 1, "not_inflight"))
            qn_sqs_fail (&e->error, QN_SQS_E_MESSAGE_NOT_INFLIGHT, "Message does not exist or is not available for visibility timeout change.");
        else
        if (qn_sqs_col_is (res, row, 1, "stale") && r->q.fifo && !visibility)
            qn_sqs_fail (&e->error, QN_SQS_E_INVALID_PARAMETER_VALUE,
                         "Value %.*s for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired.",
                         (int) (e->receipt_handle.len > 100? 100: e->receipt_handle.len), e->receipt_handle.ptr);
    }
    if (!r->req.batch) {
        if (r->req.entries [0].error.code)
            qn_sqs_reply_error (r, &r->req.entries [0].error);
        else
            qn_sqs_reply_empty_ok (r);
        return;
    }
    qn_buf_t b = QN_BUF_INIT;
    qn_sqs_w_t w;
    qn_sqs_w_begin (&w, r->req.proto, &b, r->req.op);
    qn_sqs_w_list (&w, "Successful", visibility? "ChangeMessageVisibilityBatchResultEntry":
                                                 "DeleteMessageBatchResultEntry");
    for (uint32_t i = 0; i < r->req.entry_count; i++) {
        const qn_sqs_entry_t *e = &r->req.entries [i];
        if (e->error.code)
            continue;
        qn_sqs_w_item_obj (&w);
        qn_sqs_w_str (&w, "Id", e->id.ptr, e->id.len);
        qn_sqs_w_item_obj_end (&w);
    }
    qn_sqs_w_list_end (&w);
    qn_sqs_w_list (&w, "Failed", "BatchResultErrorEntry");
    for (uint32_t i = 0; i < r->req.entry_count; i++) {
        const qn_sqs_entry_t *e = &r->req.entries [i];
        if (e->error.code)
            qn_sqs_w_failed (&w, e->id.ptr, e->id.len, &e->error);
    }
    qn_sqs_w_list_end (&w);
    qn_sqs_w_end (&w, r->request_id);
    qn_sqs_reply (r, &b);
    qn_buf_free (&b);
}

void
qn_sqs_handle_op (qn_sqs_codec_t *codec, qn_sqs_req_t *r)
{
    bool visibility = r->req.op == QN_SQS_OP_CHANGE_MESSAGE_VISIBILITY
                   || r->req.op == QN_SQS_OP_CHANGE_MESSAGE_VISIBILITY_BATCH;
    s_handles (r);
    r->batch_sent = 0;
    for (uint32_t i = 0; i < r->req.entry_count; i++)
        if (!r->req.entries [i].error.code)
            r->batch_map [r->batch_sent++] = i;
    if (r->batch_sent == 0) {
        qn_pg_result_t none = { .ok = true };
        s_on_handled (codec, r, &none);
        return;
    }
    uint32_t n = r->batch_sent;
    qn_pg_args_t a;
    qn_pg_args_init (&a);
    qn_pg_args_cstr (&a, r->tenant);
    qn_pg_args_cstr (&a, r->queue);
    qn_pg_args_array (&a, n);
    for (uint32_t k = 0; k < n; k++)
        qn_pg_args_int (&a, r->handles [r->batch_map [k]].partition_id);
    qn_pg_args_array (&a, n);
    for (uint32_t k = 0; k < n; k++)
        qn_pg_args_int (&a, r->handles [r->batch_map [k]].seq);
    qn_pg_args_array (&a, n);
    for (uint32_t k = 0; k < n; k++) {
        char text [37];
        s_uuid_text (r->handles [r->batch_map [k]].lease_id, text);
        qn_pg_args_cstr (&a, text);
    }
    if (visibility) {
        qn_pg_args_array (&a, n);
        for (uint32_t k = 0; k < n; k++)
            qn_pg_args_int (&a, r->req.entries [r->batch_map [k]].visibility_timeout);
    }
    qn_sqs_exec_or_fail (codec, r, visibility? QN_SQL_SQS_VISIBILITY: QN_SQL_SQS_ACK, &a, s_on_handled);
}

