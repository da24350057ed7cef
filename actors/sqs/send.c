/*  actors/sqs/send.c - SendMessage and SendMessageBatch
    A send is the push operation (QN_MSG_PUSH to pg_writer, as an HTTP
    push): its messages are merged with other pushes into one queen.push
    call, or made durable in the disk spool while PostgreSQL cannot take
    them and replayed after. Each message is a push item with its SQS
    metadata (attributes, group and deduplication ids, the send's instant:
    wire/msg_push.h, schema/functions/63_sqs_push.sql). FIFO messages go to
    their group's partition, standard ones to one of 128 stripe partitions
    (a delayed one to its due second's partition, with a not-before
    instant); bodies of queues with encryptionEnabled are sealed here.
    MessageId: the native message id once stored; for a message the spool
    took, the transaction id the spool gave it (stored as its MessageId
    when it is replayed).
    Receives  requests from ops.c's dispatch (the queue's settings read,
              or kept ones during an outage), PUSH_ANSWER through a callback
    Sends     QN_MSG_PUSH to pg_writer (through qn_sqs_push)
    Owns      nothing beyond the request
    Failure   every path answers exactly once: an SQS error, or the result;
              a push refused for a missing queue (QN404) is
              NonExistentQueue, one the spool could not sync (58030) or
              without an answer in time ServiceUnavailable
*/
#include "actors/sqs/sqs_int.h"
#include "wire/crypto.h"
#include "wire/ids.h"
#include "wire/json.h"
#include "wire/msg_push.h"
#include "wire/sigv4.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_STRIPES       128

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

//  The answer: one entry per message sent (the batch's Successful and
//  Failed lists). ids [i] is entry i's MessageId ("" when not sent), seqs
//  [i] its native seq (-1 when not known: the spool holds it).
static void
s_reply_sent (qn_sqs_req_t *r, char (*ids) [QN_ID_STR_LEN + 1], const int64_t *seqs)
{
    bool batch = r->req.batch;
    qn_buf_t b = QN_BUF_INIT;
    qn_sqs_w_t w;
    qn_sqs_w_begin (&w, r->req.proto, &b, r->req.op);
    if (batch)
        qn_sqs_w_list (&w, "Successful", "SendMessageBatchResultEntry");
    for (uint32_t i = 0; i < r->req.entry_count; i++) {
        const qn_sqs_entry_t *e = &r->req.entries [i];
        if (e->error.code || !ids [i][0])
            continue;
        char md5 [33], sn [24];
        if (batch) {
            qn_sqs_w_item_obj (&w);
            qn_sqs_w_str (&w, "Id", e->id.ptr, e->id.len);
        }
        qn_sqs_w_cstr (&w, "MessageId", ids [i]);
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
        if (r->q.fifo && seqs [i] >= 0) {
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

//  A refused push: the queue is gone (QN404), else by SQLSTATE as any
//  failed database call (the spool's 58030 is the database's trouble too).
static void
s_refused (qn_sqs_req_t *r, const qn_msg_push_answer_t *a)
{
    if (!strcmp (a->sqlstate, "QN404")) {
        qn_sqs_no_queue (r);
        return;
    }
    if (!strcmp (a->sqlstate, "58030")) {
        qn_sqs_reply_errorf (r, QN_SQS_E_SERVICE_UNAVAILABLE, "The message could not be made durable; retry.");
        return;
    }
    qn_pg_result_t res;
    qn_msg_push_refusal_result (a, &res);
    qn_sqs_reply_pg_error (r, &res);
    qn_pg_result_free (&res);
}

static void
s_on_pushed (qn_sqs_codec_t *codec, qn_sqs_req_t *r, const qn_env_t *env)
{
    if (!env) {
        qn_sqs_reply_errorf (r, QN_SQS_E_SERVICE_UNAVAILABLE, "The send did not complete in time; retry.");
        return;
    }
    msgpack_unpacked holder;
    msgpack_unpacked_init (&holder);
    qn_msg_push_answer_t a;
    if (env->type != QN_MSG_PUSH_ANSWER
    ||  qn_msg_push_answer_decode (env->body.ptr, env->body.len, &holder, &a)
    ||  (a.ok && a.count != r->batch_sent))
        qn_sqs_reply_errorf (r, QN_SQS_E_INTERNAL_FAILURE, "The send returned an unexpected result.");
    else
    if (!a.ok)
        s_refused (r, &a);
    else {
        char ids [QN_SQS_MAX_ENTRIES][QN_ID_STR_LEN + 1];
        int64_t seqs [QN_SQS_MAX_ENTRIES];
        uint32_t buffered = 0;
        for (uint32_t i = 0; i < QN_SQS_MAX_ENTRIES; i++) {
            ids [i][0] = 0;
            seqs [i] = -1;
        }
        for (uint32_t k = 0; k < a.count; k++) {
            qn_msg_push_result_t res;
            uint32_t i = r->batch_map [k];
            qn_msg_push_answer_at (&a, k, &res);        //  Checked by the decoder
            if (res.status == QN_PUSH_BUFFERED) {
                snprintf (ids [i], sizeof ids [i], "%.*s", (int) res.txn_len, res.txn ? res.txn : "");
                buffered++;
            }
            else {
                qn_id_format (QN_ID_MESSAGE, res.seq, ids [i]);
                seqs [i] = res.seq;
            }
        }
        qn_count (qn_sqs_kernel (codec), "sqs_messages_sent", a.count);
        qn_count (qn_sqs_kernel (codec), "sqs_messages_spooled", buffered);
        s_reply_sent (r, ids, seqs);
    }
    msgpack_unpacked_destroy (&holder);
}

//  Entry e's SQS metadata for its push item (the keys of queen.push_sqs).
static void
s_meta (const qn_sqs_req_t *r, const qn_sqs_entry_t *e, int64_t now_us, qn_buf_t *out)
{
    qn_buf_t j = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, out);
    qn_jw_obj (&w);
    if (e->attr_count) {
        qn_sqs_attrs_to_json (e->attrs, e->attr_count, &j);
        qn_jw_kraw (&w, "attrs", j.data, j.len);
    }
    if (e->sys_attr_count) {
        qn_buf_reset (&j);
        qn_sqs_attrs_to_json (e->sys_attrs, e->sys_attr_count, &j);
        qn_jw_kraw (&w, "sys", j.data, j.len);
    }
    if (e->group_id.ptr) {
        qn_jw_key (&w, "group");
        qn_jw_strn (&w, e->group_id.ptr, e->group_id.len);
    }
    //  FIFO: the deduplication id given, else the body's SHA-256.
    if (r->q.fifo) {
        qn_jw_key (&w, "dedup");
        if (e->dedup_id.ptr)
            qn_jw_strn (&w, e->dedup_id.ptr, e->dedup_id.len);
        else {
            char hex [65];
            qn_sigv4_sha256_hex (e->body.ptr, e->body.len, hex);
            qn_jw_strn (&w, hex, 64);
        }
        if (r->q.scope_group)
            qn_jw_kstr (&w, "scope", "group");
    }
    qn_jw_kint (&w, "sent", now_us);
    qn_jw_obj_end (&w);
    qn_buf_free (&j);
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
        char none [QN_SQS_MAX_ENTRIES][QN_ID_STR_LEN + 1] = { { 0 } };
        s_reply_sent (r, none, NULL);
        return;
    }
    int64_t now_us = qn_wall_us ();
    //  Bodies sealed on a queue with encryptionEnabled when a key is
    //  configured, as native pushes are (the same key ring as the Kafka
    //  door's Produce).
    qn_crypto_keys_t *ring = r->q.encrypted? qn_sqs_keys (codec): NULL;
    bool seal = ring && qn_crypto_keys_can_seal (ring);
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
    qn_msg_push_begin (&pk, r->tenant, strlen (r->tenant), false, r->batch_sent);
    qn_buf_t sealed = QN_BUF_INIT, meta = QN_BUF_INIT;
    const char *sender = r->access_key [0]? QN_SQS_ACCOUNT: "anonymous";
    int rc = 0;
    for (uint32_t k = 0; k < r->batch_sent && rc == 0; k++) {
        const qn_sqs_entry_t *e = &q->entries [r->batch_map [k]];
        qn_msg_push_item_t it = {
            .queue = r->queue, .queue_len = strlen (r->queue),
            .payload = e->body.len? e->body.ptr: "", .payload_len = e->body.len,
            .producer = sender, .producer_len = strlen (sender), .encrypted = seal
        };
        //  Partitions: FIFO group; a delayed standard message its due
        //  second (_sqs-due-<s>, §7.4) and not-before instant; else one of
        //  the stripes (§7.2).
        char part [64] = "";
        if (r->q.fifo) {
            it.partition = e->group_id.ptr;
            it.partition_len = e->group_id.len;
        }
        else
        if (e->delay_seconds > 0) {
            snprintf (part, sizeof part, "_sqs-due-%lld", (long long) (now_us / 1000000 + e->delay_seconds));
            it.has_not_before = true;
            it.not_before_us = now_us + e->delay_seconds * 1000000;
        }
        else
            snprintf (part, sizeof part, "_sqs-%u", randombytes_uniform (S_STRIPES));
        if (part [0]) {
            it.partition = part;
            it.partition_len = strlen (part);
        }
        if (seal) {
            qn_buf_reset (&sealed);
            rc = qn_crypto_seal (ring, it.payload, it.payload_len, &sealed);
            it.payload = sealed.data;
            it.payload_len = sealed.len;
        }
        qn_buf_reset (&meta);
        s_meta (r, e, now_us, &meta);
        it.sqs = meta.data;
        it.sqs_len = meta.len;
        if (rc == 0)
            qn_msg_push_item (&pk, &it);
    }
    qn_buf_free (&sealed);
    qn_buf_free (&meta);
    if (rc)
        qn_sqs_reply_errorf (r, QN_SQS_E_INTERNAL_FAILURE, "The message could not be encrypted.");
    else
    if (qn_sqs_push (codec, r, sb.data, sb.size, s_on_pushed))
        qn_sqs_reply_errorf (r, QN_SQS_E_SERVICE_UNAVAILABLE, "The service is busy; retry.");
    msgpack_sbuffer_destroy (&sb);
}
