/*  actors/sqs/queues.c - SQS queue management
    CreateQueue, GetQueueUrl, ListQueues, DeleteQueue, PurgeQueue,
    GetQueueAttributes, SetQueueAttributes, TagQueue, UntagQueue,
    ListQueueTags, ListDeadLetterSourceQueues: each one catalogue statement
    on pg_writer (schema/functions/62_sqs.sql), after the queue's settings
    for the operations that address a queue (ops.c).
    Receives  requests from ops.c's dispatch, PG_RESULT through callbacks
    Sends     QN_MSG_PG_EXEC to pg_writer (through qn_sqs_exec)
    Owns      nothing beyond the request
    Failure   every path answers exactly once: an SQS error, or the result
*/
#include "actors/sqs/sqs_int.h"
#include "actors/pg/statements.h"
#include "wire/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
s_attrs_json (const qn_sqs_kv_t *kv, uint32_t n, qn_buf_t *out)
{
    qn_jw_t w;
    qn_jw_init (&w, out);
    qn_jw_obj (&w);
    for (uint32_t i = 0; i < n; i++) {
        //  A key given twice keeps its last value (jsonb does the same).
        qn_buf_t k = QN_BUF_INIT;
        qn_buf_append (&k, kv [i].key.ptr, kv [i].key.len);
        qn_jw_key (&w, k.data? k.data: "");
        qn_jw_strn (&w, kv [i].value.ptr, kv [i].value.len);
        qn_buf_free (&k);
    }
    qn_jw_obj_end (&w);
}

static void
s_reply_queue_url (qn_sqs_req_t *r)
{
    qn_buf_t url = QN_BUF_INIT, b = QN_BUF_INIT;
    qn_sqs_queue_url (r, r->queue, strlen (r->queue), &url);
    qn_sqs_w_t w;
    qn_sqs_w_begin (&w, r->req.proto, &b, r->req.op);
    qn_sqs_w_str (&w, "QueueUrl", url.data, url.len);
    qn_sqs_w_end (&w, r->request_id);
    qn_sqs_reply (r, &b);
    qn_buf_free (&b);
    qn_buf_free (&url);
}

// ------------------------------------------------------------------ CreateQueue
//  A RedrivePolicy refused by queen._sqs_redrive_check (status in column 0):
//  answers InvalidParameterValue as SQS words it and returns true.
static bool
s_redrive_refused (qn_sqs_req_t *r, qn_pg_result_t *res)
{
    const char *why = qn_sqs_col_is (res, 0, 0, "no_dlq")? "Dead letter target does not exist."
                    : qn_sqs_col_is (res, 0, 0, "dlq_type")? "Dead-letter queue must be same type of queue as the source."
                    : qn_sqs_col_is (res, 0, 0, "bad_redrive")? "Redrive policy is not a valid JSON map of deadLetterTargetArn and maxReceiveCount (1 to 1000)."
                    : NULL;
    if (!why)
        return false;
    qn_sqs_reply_errorf (r, QN_SQS_E_INVALID_PARAMETER_VALUE,
                         "Value for parameter RedrivePolicy is invalid. Reason: %s", why);
    return true;
}

static void
s_on_created (qn_sqs_codec_t *codec, qn_sqs_req_t *r, qn_pg_result_t *res)
{
    (void) codec;
    if (!res->ok) {
        qn_sqs_reply_pg_error (r, res);
        return;
    }
    if (res->row_count && qn_sqs_col_is (res, 0, 0, "conflict")) {
        qn_sqs_reply_errorf (r, QN_SQS_E_QUEUE_ALREADY_EXISTS,
                             "A queue already exists with the same name and a different value for an attribute.");
        return;
    }
    if (res->row_count && s_redrive_refused (r, res))
        return;
    s_reply_queue_url (r);
}

void
qn_sqs_create (qn_sqs_codec_t *codec, qn_sqs_req_t *r)
{
    qn_sqs_request_t *q = &r->req;
    bool fifo;
    qn_sqs_error_t err;
    qn_sqs_queue_name_valid (q->queue_name.ptr, q->queue_name.len, &fifo);
    for (uint32_t i = 0; i < q->attribute_count; i++) {
        const qn_sqs_kv_t *kv = &q->attributes [i];
        if (kv->key.len == 9 && !memcmp (kv->key.ptr, "FifoQueue", 9)
            && (kv->value.len == 4 && !memcmp (kv->value.ptr, "true", 4)) != fifo) {
            qn_sqs_reply_errorf (r, QN_SQS_E_INVALID_PARAMETER_VALUE,
                                 "The name of a FIFO queue can only include alphanumeric characters, hyphens, or underscores, must end with .fifo suffix and be 1 to 80 in length.");
            return;
        }
    }
    if (qn_sqs_queue_attrs_check (q->attributes, q->attribute_count, fifo, true, &err)) {
        qn_sqs_reply_error (r, &err);
        return;
    }
    qn_buf_t attrs = QN_BUF_INIT, tags = QN_BUF_INIT;
    s_attrs_json (q->attributes, q->attribute_count, &attrs);
    s_attrs_json (q->tags, q->tag_count, &tags);
    qn_pg_args_t a;
    qn_pg_args_init (&a);
    qn_pg_args_cstr (&a, r->tenant);
    qn_pg_args_cstr (&a, r->queue);
    qn_pg_args_bool (&a, fifo);
    qn_pg_args_str (&a, attrs.data, attrs.len);
    qn_pg_args_str (&a, tags.data, tags.len);
    qn_buf_free (&attrs);
    qn_buf_free (&tags);
    qn_sqs_exec_or_fail (codec, r, QN_SQL_SQS_CREATE, &a, s_on_created);
}

// ------------------------------------------------------------------ queues
void
qn_sqs_get_url (qn_sqs_codec_t *codec, qn_sqs_req_t *r)
{
    (void) codec;
    s_reply_queue_url (r);
}

static void
s_on_listed (qn_sqs_codec_t *codec, qn_sqs_req_t *r, qn_pg_result_t *res)
{
    (void) codec;
    if (!res->ok) {
        qn_sqs_reply_pg_error (r, res);
        return;
    }
    int64_t max = r->req.max_results > 0? r->req.max_results: 1000;
    uint32_t shown = res->row_count > (uint32_t) max? (uint32_t) max: res->row_count;
    qn_buf_t b = QN_BUF_INIT, url = QN_BUF_INIT;
    qn_sqs_w_t w;
    qn_sqs_w_begin (&w, r->req.proto, &b, r->req.op);
    if (shown) {
        qn_sqs_w_list (&w, r->req.op == QN_SQS_OP_LIST_QUEUES? "QueueUrls": "queueUrls", "QueueUrl");
        for (uint32_t i = 0; i < shown; i++) {
            size_t len;
            const char *name = qn_sqs_col_str (res, i, 0, &len);
            qn_buf_reset (&url);
            qn_sqs_queue_url (r, name? name: "", len, &url);
            qn_sqs_w_item_str (&w, url.data, url.len);
        }
        qn_sqs_w_list_end (&w);
    }
    if (r->req.max_results > 0 && res->row_count > shown) {
        size_t len;
        const char *last = qn_sqs_col_str (res, shown - 1, 0, &len);
        qn_sqs_w_str (&w, "NextToken", last? last: "", len);
    }
    qn_sqs_w_end (&w, r->request_id);
    qn_sqs_reply (r, &b);
    qn_buf_free (&b);
    qn_buf_free (&url);
}

void
qn_sqs_list (qn_sqs_codec_t *codec, qn_sqs_req_t *r)
{
    int64_t max = r->req.max_results > 0? r->req.max_results: 1000;
    qn_pg_args_t a;
    qn_pg_args_init (&a);
    qn_pg_args_cstr (&a, r->tenant);
    qn_sqs_args_str (&a, &r->req.queue_name_prefix);
    qn_sqs_args_str (&a, &r->req.next_token);
    qn_pg_args_int (&a, max + 1);
    qn_sqs_exec_or_fail (codec, r, QN_SQL_SQS_LIST, &a, s_on_listed);
}

static void
s_on_status (qn_sqs_codec_t *codec, qn_sqs_req_t *r, qn_pg_result_t *res)
{
    //  A queue changed or gone: the settings kept for it are read again.
    if (r->req.op == QN_SQS_OP_DELETE_QUEUE || r->req.op == QN_SQS_OP_SET_QUEUE_ATTRIBUTES)
        qn_sqs_qcache_drop (qn_sqs_qcache (codec), r->tenant, r->queue);
    if (!res->ok)
        qn_sqs_reply_pg_error (r, res);
    else
    if (!res->row_count || qn_sqs_col_is (res, 0, 0, "no_queue")
        || (res->row_count && qn_sqs_col (res, 0, 0)->type == MSGPACK_OBJECT_BOOLEAN && !qn_sqs_col_bool (res, 0, 0)))
        qn_sqs_no_queue (r);
    else
    if (s_redrive_refused (r, res))
        ;
    else
    if (qn_sqs_col_is (res, 0, 0, "in_progress"))
        qn_sqs_reply_errorf (r, QN_SQS_E_PURGE_IN_PROGRESS,
                             "Only one PurgeQueue operation on %s is allowed every 60 seconds.", r->queue);
    else
        qn_sqs_reply_empty_ok (r);
}

void
qn_sqs_by_name (qn_sqs_codec_t *codec, qn_sqs_req_t *r, uint32_t stmt)
{
    qn_pg_args_t a;
    qn_pg_args_init (&a);
    qn_pg_args_cstr (&a, r->tenant);
    qn_pg_args_cstr (&a, r->queue);
    qn_sqs_exec_or_fail (codec, r, stmt, &a, s_on_status);
}

void
qn_sqs_set_attrs (qn_sqs_codec_t *codec, qn_sqs_req_t *r)
{
    qn_sqs_error_t err;
    if (qn_sqs_queue_attrs_check (r->req.attributes, r->req.attribute_count, r->q.fifo, false, &err)) {
        qn_sqs_reply_error (r, &err);
        return;
    }
    qn_buf_t attrs = QN_BUF_INIT;
    s_attrs_json (r->req.attributes, r->req.attribute_count, &attrs);
    qn_pg_args_t a;
    qn_pg_args_init (&a);
    qn_pg_args_cstr (&a, r->tenant);
    qn_pg_args_cstr (&a, r->queue);
    qn_pg_args_str (&a, attrs.data, attrs.len);
    qn_buf_free (&attrs);
    qn_sqs_exec_or_fail (codec, r, QN_SQL_SQS_SET, &a, s_on_status);
}

static const char *s_attr_names [] = {
    "VisibilityTimeout", "DelaySeconds", "MaximumMessageSize", "MessageRetentionPeriod",
    "ReceiveMessageWaitTimeSeconds", "RedrivePolicy", "RedriveAllowPolicy", "Policy", "FifoQueue",
    "ContentBasedDeduplication", "DeduplicationScope", "FifoThroughputLimit", "KmsMasterKeyId",
    "KmsDataKeyReusePeriodSeconds", "SqsManagedSseEnabled", "QueueArn", "CreatedTimestamp",
    "LastModifiedTimestamp", "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed", "All", NULL
};

static void
s_map_int (qn_sqs_w_t *w, const qn_sqs_req_t *r, const char *name, int64_t v)
{
    if (!qn_sqs_name_wanted (r->req.attribute_names, r->req.attribute_name_count, name, strlen (name)))
        return;
    char text [32];
    int n = snprintf (text, sizeof text, "%lld", (long long) v);
    qn_sqs_w_map_str (w, name, strlen (name), text, (size_t) n);
}

void
qn_sqs_get_attrs (qn_sqs_codec_t *codec, qn_sqs_req_t *r)
{
    for (uint32_t i = 0; i < r->req.attribute_name_count; i++) {
        const qn_sqs_str_t *n = &r->req.attribute_names [i];
        const char **k = s_attr_names;
        while (*k && !(strlen (*k) == n->len && !memcmp (*k, n->ptr, n->len)))
            k++;
        if (!*k) {
            qn_sqs_reply_errorf (r, QN_SQS_E_INVALID_ATTRIBUTE_NAME, "Unknown Attribute %.*s.",
                                 (int) (n->len > 128? 128: n->len), n->ptr);
            return;
        }
    }
    const qn_config_t *cfg = qn_sqs_config (codec);
    qn_buf_t b = QN_BUF_INIT;
    qn_sqs_w_t w;
    qn_sqs_w_begin (&w, r->req.proto, &b, r->req.op);
    if (r->req.attribute_name_count) {
        qn_sqs_w_map (&w, "Attributes", "Attribute");
        qn_json_doc_t doc;
        qn_json_doc_init (&doc);
        qn_buf_t k = QN_BUF_INIT, v = QN_BUF_INIT;
        if (qn_json_parse (&doc, r->q.attrs_json, strlen (r->q.attrs_json), 8) == 0)
            for (int t = qn_json_first (&doc, 0); t >= 0; t = qn_json_next_sibling (&doc, 0, t)) {
                qn_buf_reset (&k);
                qn_buf_reset (&v);
                qn_json_str (&doc, t, &k);
                if (qn_json_str (&doc, t + 1, &v) < 0 || !k.data
                    || !qn_sqs_name_wanted (r->req.attribute_names, r->req.attribute_name_count, k.data, k.len))
                    continue;
                qn_sqs_w_map_str (&w, k.data, k.len, v.data? v.data: "", v.len);
            }
        qn_buf_free (&k);
        qn_buf_free (&v);
        qn_json_doc_free (&doc);
        if (qn_sqs_name_wanted (r->req.attribute_names, r->req.attribute_name_count, "QueueArn", 8)) {
            char arn [256];
            int n = snprintf (arn, sizeof arn, "arn:aws:sqs:%s:" QN_SQS_ACCOUNT ":%s", cfg->sqs_region, r->queue);
            qn_sqs_w_map_str (&w, "QueueArn", 8, arn, (size_t) n);
        }
        s_map_int (&w, r, "CreatedTimestamp", r->q.created_us / 1000000);
        s_map_int (&w, r, "LastModifiedTimestamp", r->q.modified_us / 1000000);
        s_map_int (&w, r, "ApproximateNumberOfMessages", r->q.visible);
        s_map_int (&w, r, "ApproximateNumberOfMessagesNotVisible", r->q.inflight);
        s_map_int (&w, r, "ApproximateNumberOfMessagesDelayed", r->q.delayed);
        qn_sqs_w_map_end (&w);
    }
    qn_sqs_w_end (&w, r->request_id);
    qn_sqs_reply (r, &b);
    qn_buf_free (&b);
}

// ------------------------------------------------------------------ tags
static void
s_on_tags (qn_sqs_codec_t *codec, qn_sqs_req_t *r, qn_pg_result_t *res)
{
    (void) codec;
    if (!res->ok) {
        if (!strcmp (res->sqlstate, "22023"))
            qn_sqs_reply_errorf (r, QN_SQS_E_INVALID_PARAMETER_VALUE, "Too many tags (at most 50).");
        else
            qn_sqs_reply_pg_error (r, res);
        return;
    }
    if (!res->row_count || qn_sqs_col_is (res, 0, 0, "no_queue")) {
        qn_sqs_no_queue (r);
        return;
    }
    if (r->req.op != QN_SQS_OP_LIST_QUEUE_TAGS) {
        qn_sqs_reply_empty_ok (r);
        return;
    }
    size_t len;
    const char *tags = qn_sqs_col_str (res, 0, 1, &len);
    qn_buf_t b = QN_BUF_INIT, k = QN_BUF_INIT, v = QN_BUF_INIT;
    qn_sqs_w_t w;
    qn_sqs_w_begin (&w, r->req.proto, &b, r->req.op);
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    if (tags && qn_json_parse (&doc, tags, len, 8) == 0 && qn_json_size (&doc, 0) > 0) {
        qn_sqs_w_map (&w, "Tags", "Tag");
        for (int t = qn_json_first (&doc, 0); t >= 0; t = qn_json_next_sibling (&doc, 0, t)) {
            qn_buf_reset (&k);
            qn_buf_reset (&v);
            qn_json_str (&doc, t, &k);
            qn_json_str (&doc, t + 1, &v);
            qn_sqs_w_map_str (&w, k.data? k.data: "", k.len, v.data? v.data: "", v.len);
        }
        qn_sqs_w_map_end (&w);
    }
    qn_json_doc_free (&doc);
    qn_sqs_w_end (&w, r->request_id);
    qn_sqs_reply (r, &b);
    qn_buf_free (&b);
    qn_buf_free (&k);
    qn_buf_free (&v);
}

void
qn_sqs_tags (qn_sqs_codec_t *codec, qn_sqs_req_t *r)
{
    qn_buf_t add = QN_BUF_INIT;
    s_attrs_json (r->req.tags, r->req.tag_count, &add);
    qn_pg_args_t a;
    qn_pg_args_init (&a);
    qn_pg_args_cstr (&a, r->tenant);
    qn_pg_args_cstr (&a, r->queue);
    qn_pg_args_str (&a, add.data, add.len);
    qn_pg_args_array (&a, r->req.tag_key_count);
    for (uint32_t i = 0; i < r->req.tag_key_count; i++)
        qn_sqs_args_str (&a, &r->req.tag_keys [i]);
    qn_buf_free (&add);
    qn_sqs_exec_or_fail (codec, r, QN_SQL_SQS_TAGS, &a, s_on_tags);
}

// ------------------------------------------------------------------ dead-letter sources
void
qn_sqs_dlq_sources (qn_sqs_codec_t *codec, qn_sqs_req_t *r)
{
    char arn [256];
    snprintf (arn, sizeof arn, "arn:aws:sqs:%s:" QN_SQS_ACCOUNT ":%s", qn_sqs_config (codec)->sqs_region,
              r->queue);
    qn_pg_args_t a;
    qn_pg_args_init (&a);
    qn_pg_args_cstr (&a, r->tenant);
    qn_pg_args_cstr (&a, arn);
    qn_sqs_exec_or_fail (codec, r, QN_SQL_SQS_DLQ_SOURCES, &a, s_on_listed);
}

