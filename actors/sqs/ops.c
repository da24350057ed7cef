/*  actors/sqs/ops.c - SQS operations as messaging-core operations
    Each operation is one or two catalogue statements on pg_writer
    (schema/functions/62_sqs.sql): the queue's SQS settings first when the
    operation needs them (sqs_queue), then the operation itself. Sends are
    native pushes with metadata (sqs_send; sealed on queues with
    encryptionEnabled), receives native queue-mode pops (sqs_receive: one
    message per stripe partition, a FIFO group's next messages together;
    sealed bodies opened, Kafka record headers as attributes), deletes acks (sqs_ack),
    visibility changes lease changes (sqs_visibility). An empty receive
    with a wait parks in the codec's park table, woken by "committed"
    events like HTTP long-polls.
    Receives  decoded requests from codec.c, PG_RESULT through callbacks,
              park wake/expire callbacks
    Sends     QN_MSG_PG_EXEC to pg_writer (through qn_sqs_exec)
    Owns      nothing beyond the request (qn_sqs_req_t)
    Failure   every path answers exactly once: an SQS error, or the result
*/
#include "actors/sqs/sqs_int.h"
#include "actors/park/park.h"
#include "actors/pg/statements.h"
#include "base/log.h"
#include "actors/seal/seal.h"
#include "wire/crypto.h"
#include "wire/ids.h"
#include "wire/json.h"
#include "wire/kafka_records.h"
#include "wire/sigv4.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_QUEUE_MODE    "__QUEUE_MODE__"
#define S_STRIPES       128

// ------------------------------------------------------------------ result columns
static const msgpack_object *
s_col (const qn_pg_result_t *res, uint32_t r, uint32_t c)
{
    static const msgpack_object nil = { .type = MSGPACK_OBJECT_NIL };
    const msgpack_object *o = qn_pg_result_col (res, r, c);
    return o? o: &nil;
}

static bool
s_col_int (const qn_pg_result_t *res, uint32_t r, uint32_t c, int64_t *out)
{
    const msgpack_object *o = s_col (res, r, c);
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= INT64_MAX)
        *out = (int64_t) o->via.u64;
    else
    if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
        *out = o->via.i64;
    else
        return false;
    return true;
}

static bool
s_col_bool (const qn_pg_result_t *res, uint32_t r, uint32_t c)
{
    const msgpack_object *o = s_col (res, r, c);
    return o->type == MSGPACK_OBJECT_BOOLEAN && o->via.boolean;
}

//  String or bin column: pointer and length; NULL when nil.
static const char *
s_col_str (const qn_pg_result_t *res, uint32_t r, uint32_t c, size_t *len)
{
    const msgpack_object *o = s_col (res, r, c);
    if (o->type == MSGPACK_OBJECT_STR) {
        *len = o->via.str.size;
        return o->via.str.ptr;
    }
    if (o->type == MSGPACK_OBJECT_BIN) {
        *len = o->via.bin.size;
        return o->via.bin.ptr;
    }
    *len = 0;
    return NULL;
}

static bool
s_col_is (const qn_pg_result_t *res, uint32_t r, uint32_t c, const char *s)
{
    size_t len;
    const char *p = s_col_str (res, r, c, &len);
    return p && len == strlen (s) && memcmp (p, s, len) == 0;
}

// ------------------------------------------------------------------ small helpers
static void
s_args_str (qn_pg_args_t *a, const qn_sqs_str_t *s)
{
    qn_pg_args_str (a, s->ptr, s->ptr? s->len: 0);
}

static void
s_no_queue (qn_sqs_req_t *r)
{
    qn_sqs_reply_errorf (r, QN_SQS_E_NON_EXISTENT_QUEUE, "The specified queue does not exist.");
}

static void
s_exec_or_fail (qn_sqs_codec_t *codec, qn_sqs_req_t *r, uint32_t stmt, qn_pg_args_t *args,
                qn_sqs_result_fn *cb)
{
    int rc = qn_sqs_exec (codec, r, stmt, args, cb);
    qn_pg_args_free (args);
    if (rc)
        qn_sqs_reply_errorf (r, QN_SQS_E_SERVICE_UNAVAILABLE, "The service is busy; retry.");
}

//  "1234" in a JSON string or number member of obj, else def.
static int64_t
s_json_int (const qn_json_doc_t *doc, int obj, const char *key, int64_t def)
{
    int t = qn_json_get (doc, obj, key);
    int64_t v;
    if (t < 0)
        return def;
    if (qn_json_type (doc, t) == QN_JSON_NUMBER && qn_json_int (doc, t, &v) == 0)
        return v;
    if (qn_json_type (doc, t) == QN_JSON_STRING) {
        qn_buf_t b = QN_BUF_INIT;
        qn_json_str (doc, t, &b);
        char *end = NULL;
        v = b.data? strtoll (b.data, &end, 10): 0;
        bool ok = b.data && end && *end == 0 && end != b.data;
        qn_buf_free (&b);
        return ok? v: def;
    }
    return def;
}

static bool
s_json_true (const qn_json_doc_t *doc, int obj, const char *key)
{
    int t = qn_json_get (doc, obj, key);
    return t >= 0 && qn_json_str_eq (doc, t, "true");
}

//  The RedrivePolicy string: target queue name (last ARN field) and count.
static void
s_parse_redrive (qn_sqs_queue_t *q, const char *json, size_t len)
{
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    if (qn_json_parse (&doc, json, len, 8) == 0 && qn_json_type (&doc, 0) == QN_JSON_OBJECT) {
        int t = qn_json_get (&doc, 0, "deadLetterTargetArn");
        qn_buf_t b = QN_BUF_INIT;
        if (t >= 0 && qn_json_type (&doc, t) == QN_JSON_STRING) {
            qn_json_str (&doc, t, &b);
            const char *colon = b.data? strrchr (b.data, ':'): NULL;
            if (colon && strlen (colon + 1) < sizeof q->dlq)
                snprintf (q->dlq, sizeof q->dlq, "%s", colon + 1);
        }
        qn_buf_free (&b);
        q->max_receives = s_json_int (&doc, 0, "maxReceiveCount", 0);
        if (q->max_receives < 1)
            q->dlq [0] = 0;
    }
    qn_json_doc_free (&doc);
}

//  Fills r->q from a QN_SQL_SQS_QUEUE row.
static void
s_queue_read (qn_sqs_req_t *r, const qn_pg_result_t *res)
{
    qn_sqs_queue_t *q = &r->q;
    int64_t v;
    q->found = true;
    q->id = s_col_int (res, 0, 0, &v)? (int32_t) v: 0;
    q->fifo = s_col_bool (res, 0, 1);
    size_t len;
    const char *p = s_col_str (res, 0, 2, &len);
    q->attrs_json = qn_strndup (p? p: "{}", p? len: 2);
    p = s_col_str (res, 0, 3, &len);
    q->tags_json = qn_strndup (p? p: "{}", p? len: 2);
    s_col_int (res, 0, 4, &q->created_us);
    s_col_int (res, 0, 5, &q->modified_us);
    s_col_int (res, 0, 6, &q->visible);
    s_col_int (res, 0, 7, &q->inflight);
    s_col_int (res, 0, 8, &q->delayed);
    p = s_col_str (res, 0, 9, &len);
    if (p && len >= QN_SQS_HANDLE_KEY_LEN)
        memcpy (q->key, p, QN_SQS_HANDLE_KEY_LEN);
    q->encrypted = s_col_bool (res, 0, 10);
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    if (qn_json_parse (&doc, q->attrs_json, strlen (q->attrs_json), 8) == 0) {
        q->visibility_s = s_json_int (&doc, 0, "VisibilityTimeout", 30);
        q->delay_s = s_json_int (&doc, 0, "DelaySeconds", 0);
        q->max_bytes = s_json_int (&doc, 0, "MaximumMessageSize", 1048576);
        q->wait_s = s_json_int (&doc, 0, "ReceiveMessageWaitTimeSeconds", 0);
        q->content_dedup = s_json_true (&doc, 0, "ContentBasedDeduplication");
        int t = qn_json_get (&doc, 0, "DeduplicationScope");
        q->scope_group = t >= 0 && qn_json_str_eq (&doc, t, "messageGroup");
        t = qn_json_get (&doc, 0, "RedrivePolicy");
        if (t >= 0 && qn_json_type (&doc, t) == QN_JSON_STRING) {
            qn_buf_t b = QN_BUF_INIT;
            qn_json_str (&doc, t, &b);
            if (b.data)
                s_parse_redrive (q, b.data, b.len);
            qn_buf_free (&b);
        }
    }
    qn_json_doc_free (&doc);
}

//  The next step of an operation once the queue is known.
typedef void (s_step_fn) (qn_sqs_codec_t *codec, qn_sqs_req_t *r);

static s_step_fn *
s_step_of (qn_sqs_op_t op);

static void
s_on_queue (qn_sqs_codec_t *codec, qn_sqs_req_t *r, qn_pg_result_t *res)
{
    if (!res->ok) {
        qn_sqs_reply_pg_error (r, res);
        return;
    }
    if (res->row_count == 0) {
        s_no_queue (r);
        return;
    }
    s_queue_read (r, res);
    s_step_of (r->req.op) (codec, r);
}

//  Looks up the addressed queue, then runs the operation's step.
static void
s_lookup (qn_sqs_codec_t *codec, qn_sqs_req_t *r, bool counts)
{
    if (!r->queue [0]) {
        s_no_queue (r);
        return;
    }
    qn_pg_args_t a;
    qn_pg_args_init (&a);
    qn_pg_args_cstr (&a, r->tenant);
    qn_pg_args_cstr (&a, r->queue);
    qn_pg_args_bool (&a, counts);
    s_exec_or_fail (codec, r, QN_SQL_SQS_QUEUE, &a, s_on_queue);
}

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
s_reply_empty_ok (qn_sqs_req_t *r)
{
    qn_buf_t b = QN_BUF_INIT;
    qn_sqs_w_t w;
    qn_sqs_w_begin (&w, r->req.proto, &b, r->req.op);
    qn_sqs_w_end (&w, r->request_id);
    qn_sqs_reply (r, &b);
    qn_buf_free (&b);
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
    const char *why = s_col_is (res, 0, 0, "no_dlq")? "Dead letter target does not exist."
                    : s_col_is (res, 0, 0, "dlq_type")? "Dead-letter queue must be same type of queue as the source."
                    : s_col_is (res, 0, 0, "bad_redrive")? "Redrive policy is not a valid JSON map of deadLetterTargetArn and maxReceiveCount (1 to 1000)."
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
    if (res->row_count && s_col_is (res, 0, 0, "conflict")) {
        qn_sqs_reply_errorf (r, QN_SQS_E_QUEUE_ALREADY_EXISTS,
                             "A queue already exists with the same name and a different value for an attribute.");
        return;
    }
    if (res->row_count && s_redrive_refused (r, res))
        return;
    s_reply_queue_url (r);
}

static void
s_create (qn_sqs_codec_t *codec, qn_sqs_req_t *r)
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
    s_exec_or_fail (codec, r, QN_SQL_SQS_CREATE, &a, s_on_created);
}

// ------------------------------------------------------------------ queues
static void
s_get_url (qn_sqs_codec_t *codec, qn_sqs_req_t *r)
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
            const char *name = s_col_str (res, i, 0, &len);
            qn_buf_reset (&url);
            qn_sqs_queue_url (r, name? name: "", len, &url);
            qn_sqs_w_item_str (&w, url.data, url.len);
        }
        qn_sqs_w_list_end (&w);
    }
    if (r->req.max_results > 0 && res->row_count > shown) {
        size_t len;
        const char *last = s_col_str (res, shown - 1, 0, &len);
        qn_sqs_w_str (&w, "NextToken", last? last: "", len);
    }
    qn_sqs_w_end (&w, r->request_id);
    qn_sqs_reply (r, &b);
    qn_buf_free (&b);
    qn_buf_free (&url);
}

static void
s_list (qn_sqs_codec_t *codec, qn_sqs_req_t *r)
{
    int64_t max = r->req.max_results > 0? r->req.max_results: 1000;
    qn_pg_args_t a;
    qn_pg_args_init (&a);
    qn_pg_args_cstr (&a, r->tenant);
    s_args_str (&a, &r->req.queue_name_prefix);
    s_args_str (&a, &r->req.next_token);
    qn_pg_args_int (&a, max + 1);
    s_exec_or_fail (codec, r, QN_SQL_SQS_LIST, &a, s_on_listed);
}

static void
s_on_status (qn_sqs_codec_t *codec, qn_sqs_req_t *r, qn_pg_result_t *res)
{
    (void) codec;
    if (!res->ok)
        qn_sqs_reply_pg_error (r, res);
    else
    if (!res->row_count || s_col_is (res, 0, 0, "no_queue")
        || (res->row_count && s_col (res, 0, 0)->type == MSGPACK_OBJECT_BOOLEAN && !s_col_bool (res, 0, 0)))
        s_no_queue (r);
    else
    if (s_redrive_refused (r, res))
        ;
    else
    if (s_col_is (res, 0, 0, "in_progress"))
        qn_sqs_reply_errorf (r, QN_SQS_E_PURGE_IN_PROGRESS,
                             "Only one PurgeQueue operation on %s is allowed every 60 seconds.", r->queue);
    else
        s_reply_empty_ok (r);
}

static void
s_by_name (qn_sqs_codec_t *codec, qn_sqs_req_t *r, uint32_t stmt)
{
    qn_pg_args_t a;
    qn_pg_args_init (&a);
    qn_pg_args_cstr (&a, r->tenant);
    qn_pg_args_cstr (&a, r->queue);
    s_exec_or_fail (codec, r, stmt, &a, s_on_status);
}

static void
s_set_attrs (qn_sqs_codec_t *codec, qn_sqs_req_t *r)
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
    s_exec_or_fail (codec, r, QN_SQL_SQS_SET, &a, s_on_status);
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

static void
s_get_attrs (qn_sqs_codec_t *codec, qn_sqs_req_t *r)
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
    if (!res->row_count || s_col_is (res, 0, 0, "no_queue")) {
        s_no_queue (r);
        return;
    }
    if (r->req.op != QN_SQS_OP_LIST_QUEUE_TAGS) {
        s_reply_empty_ok (r);
        return;
    }
    size_t len;
    const char *tags = s_col_str (res, 0, 1, &len);
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

static void
s_tags (qn_sqs_codec_t *codec, qn_sqs_req_t *r)
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
        s_args_str (&a, &r->req.tag_keys [i]);
    qn_buf_free (&add);
    s_exec_or_fail (codec, r, QN_SQL_SQS_TAGS, &a, s_on_tags);
}

// ------------------------------------------------------------------ dead-letter sources
static void
s_dlq_sources (qn_sqs_codec_t *codec, qn_sqs_req_t *r)
{
    char arn [256];
    snprintf (arn, sizeof arn, "arn:aws:sqs:%s:" QN_SQS_ACCOUNT ":%s", qn_sqs_config (codec)->sqs_region,
              r->queue);
    qn_pg_args_t a;
    qn_pg_args_init (&a);
    qn_pg_args_cstr (&a, r->tenant);
    qn_pg_args_cstr (&a, arn);
    s_exec_or_fail (codec, r, QN_SQL_SQS_DLQ_SOURCES, &a, s_on_listed);
}

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
    if (res->row_count == 0 || (s_col_int (res, 0, 0, &ord) && ord == 0)) {
        s_no_queue (r);
        return;
    }
    //  seq of each entry by its index (-1: not sent)
    int64_t seqs [QN_SQS_MAX_ENTRIES];
    for (uint32_t i = 0; i < QN_SQS_MAX_ENTRIES; i++)
        seqs [i] = -1;
    for (uint32_t row = 0; row < res->row_count; row++) {
        int64_t seq;
        if (s_col_int (res, row, 0, &ord) && ord >= 1 && (uint32_t) ord <= r->batch_sent
            && s_col_int (res, row, 1, &seq))
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
static void
s_send (qn_sqs_codec_t *codec, qn_sqs_req_t *r)
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
            s_args_str (&a, &e->group_id);
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
        s_args_str (&a, &q->entries [r->batch_map [k]].group_id);
    qn_pg_args_array (&a, n);
    for (uint32_t k = 0; k < n; k++) {
        const qn_sqs_entry_t *e = &q->entries [r->batch_map [k]];
        if (!r->q.fifo)
            qn_pg_args_null (&a);
        else
        if (e->dedup_id.ptr)
            s_args_str (&a, &e->dedup_id);
        else {
            char hex [65];
            qn_sigv4_sha256_hex (e->body.ptr, e->body.len, hex);
            qn_pg_args_cstr (&a, hex);
        }
    }
    qn_pg_args_cstr (&a, r->access_key [0]? QN_SQS_ACCOUNT: "anonymous");
    qn_pg_args_bool (&a, r->q.scope_group);
    qn_pg_args_bool (&a, seal);
    s_exec_or_fail (codec, r, QN_SQL_SQS_SEND, &a, s_on_sent);
}

// ------------------------------------------------------------------ ReceiveMessage
enum {
    R_PID, R_PNAME, R_SEQ, R_CREATED, R_PAYLOAD, R_COUNT, R_FIRST, R_ATTRS, R_SYS, R_GROUP,
    R_DEDUP, R_SENDER, R_NEXT_DUE, R_MOVED, R_ORIG_ID, R_ORIG_SENT, R_ENCRYPTED, R_KHEADERS
};

static void s_receive_run (qn_sqs_codec_t *codec, qn_sqs_req_t *r);

static int
s_uuid_bytes (const char *s, uint8_t out [16])
{
    int k = 0;
    for (int i = 0; s [i] && k < 32; i++) {
        if (s [i] == '-')
            continue;
        char c = s [i];
        int v = c >= '0' && c <= '9'? c - '0': c >= 'a' && c <= 'f'? c - 'a' + 10:
                c >= 'A' && c <= 'F'? c - 'A' + 10: -1;
        if (v < 0)
            return -1;
        if (k % 2 == 0)
            out [k / 2] = (uint8_t) (v << 4);
        else
            out [k / 2] |= (uint8_t) v;
        k++;
    }
    return k == 32? 0: -1;
}

static void
s_uuid_text (const uint8_t b [16], char out [37])
{
    snprintf (out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
              b [0], b [1], b [2], b [3], b [4], b [5], b [6], b [7], b [8], b [9], b [10], b [11],
              b [12], b [13], b [14], b [15]);
}

static void
s_sys_attr (qn_sqs_w_t *w, const qn_sqs_req_t *r, const char *name, const char *v, size_t len)
{
    if (qn_sqs_name_wanted (r->req.attribute_names, r->req.attribute_name_count, name, strlen (name)))
        qn_sqs_w_map_str (w, name, strlen (name), v, len);
}

static void
s_sys_int (qn_sqs_w_t *w, const qn_sqs_req_t *r, const char *name, int64_t v)
{
    char text [32];
    int n = snprintf (text, sizeof text, "%lld", (long long) v);
    s_sys_attr (w, r, name, text, (size_t) n);
}

//  One received message (row `row`) into the answer.
static void
s_write_message (qn_sqs_codec_t *codec, qn_sqs_req_t *r, const qn_pg_result_t *res, uint32_t row,
                 qn_sqs_w_t *w)
{
    int64_t pid = 0, seq = 0, created = 0, count = 0, first = 0;
    s_col_int (res, row, R_PID, &pid);
    s_col_int (res, row, R_SEQ, &seq);
    s_col_int (res, row, R_CREATED, &created);
    s_col_int (res, row, R_COUNT, &count);
    s_col_int (res, row, R_FIRST, &first);
    size_t body_len = 0;
    const char *body = s_col_str (res, row, R_PAYLOAD, &body_len);
    if (!body)
        body = "";
    //  Stored sealed (encryptionEnabled): opened with the key ring; one
    //  that does not open goes out as stored (the envelope) and is logged.
    qn_buf_t plain = QN_BUF_INIT;
    if (s_col_bool (res, row, R_ENCRYPTED)) {
        char why [160];
        if (qn_crypto_open (qn_sqs_keys (codec), body, body_len, &plain, why, sizeof why, NULL) == 0) {
            body = plain.data? plain.data: "";
            body_len = plain.len;
        }
        else
            qn_warn ("sqs: an encrypted message does not open: queue=%s seq=%lld reason=%s",
                     r->queue, (long long) seq, why);
    }
    //  Bodies that are not SQS text (pushed natively or through Kafka) go
    //  out base64 with ContentEncoding=base64 (D-S6).
    bool b64 = !qn_sqs_body_valid (body, body_len);
    char *enc = NULL;
    if (b64) {
        size_t cap = sodium_base64_ENCODED_LEN (body_len, sodium_base64_VARIANT_ORIGINAL);
        enc = qn_malloc (cap);
        sodium_bin2base64 (enc, cap, (const unsigned char *) body, body_len, sodium_base64_VARIANT_ORIGINAL);
        body = enc;
        body_len = cap - 1;
    }
    char id [QN_ID_STR_LEN + 1], md5 [33], handle [QN_SQS_HANDLE_MAX];
    qn_sqs_handle_t h = { r->q.id, pid, seq, { 0 } };
    s_uuid_bytes (r->lease, h.lease_id);
    qn_sqs_handle_encode (&h, r->q.key, handle);
    //  A redriven copy keeps its original MessageId and SentTimestamp (D-S9).
    size_t olen = 0;
    const char *orig = s_col_str (res, row, R_ORIG_ID, &olen);
    if (orig && olen == QN_ID_STR_LEN)
        snprintf (id, sizeof id, "%.*s", (int) olen, orig);
    else
        qn_id_format (QN_ID_MESSAGE, seq, id);
    s_col_int (res, row, R_ORIG_SENT, &created);
    qn_sqs_w_item_obj (w);
    qn_sqs_w_cstr (w, "MessageId", id);
    qn_sqs_w_cstr (w, "ReceiptHandle", handle);
    qn_sqs_md5_hex (body, body_len, md5);
    qn_sqs_w_cstr (w, "MD5OfBody", md5);
    qn_sqs_w_str (w, "Body", body, body_len);
    //  System attributes
    size_t glen = 0, dlen = 0, slen = 0, plen = 0;
    const char *group = s_col_str (res, row, R_GROUP, &glen);
    const char *dedup = s_col_str (res, row, R_DEDUP, &dlen);
    const char *sender = s_col_str (res, row, R_SENDER, &slen);
    const char *pname = s_col_str (res, row, R_PNAME, &plen);
    qn_buf_t store = QN_BUF_INIT;
    qn_sqs_attr_t sys [QN_SQS_MAX_SYS_ATTRS];
    uint32_t sys_n = 0;
    size_t sys_len;
    const char *sys_json = s_col_str (res, row, R_SYS, &sys_len);
    if (sys_json)
        qn_sqs_attrs_from_json (sys_json, sys_len, sys, QN_SQS_MAX_SYS_ATTRS, &sys_n, &store);
    if (r->req.attribute_name_count) {
        qn_sqs_w_map (w, "Attributes", "Attribute");
        if (sender)
            s_sys_attr (w, r, "SenderId", sender, slen);
        else
            s_sys_attr (w, r, "SenderId", "native", 6);
        s_sys_int (w, r, "SentTimestamp", created / 1000);
        s_sys_int (w, r, "ApproximateReceiveCount", count);
        s_sys_int (w, r, "ApproximateFirstReceiveTimestamp", first / 1000);
        if (r->q.fifo) {
            char sn [24];
            snprintf (sn, sizeof sn, "%020lld", (long long) seq);
            s_sys_attr (w, r, "SequenceNumber", sn, strlen (sn));
            if (dedup)
                s_sys_attr (w, r, "MessageDeduplicationId", dedup, dlen);
            if (group)
                s_sys_attr (w, r, "MessageGroupId", group, glen);
            else
            if (pname)
                s_sys_attr (w, r, "MessageGroupId", pname, plen);
        }
        else
        if (group)
            s_sys_attr (w, r, "MessageGroupId", group, glen);
        for (uint32_t i = 0; i < sys_n; i++)
            s_sys_attr (w, r, "AWSTraceHeader", sys [i].value.ptr, sys [i].value.len);
        qn_sqs_w_map_end (w);
    }
    //  Message attributes: those asked for; the MD5 over what is returned.
    qn_sqs_attr_t all [QN_SQS_MAX_MSG_ATTRS + 1], out [QN_SQS_MAX_MSG_ATTRS + 1];
    uint32_t all_n = 0, out_n = 0;
    size_t attrs_len;
    const char *attrs_json = s_col_str (res, row, R_ATTRS, &attrs_len);
    qn_buf_t astore = QN_BUF_INIT;
    if (attrs_json)
        qn_sqs_attrs_from_json (attrs_json, attrs_len, all, QN_SQS_MAX_MSG_ATTRS, &all_n, &astore);
    //  Kafka record headers (spec §6.3): String when the value is SQS text,
    //  else Binary; null or empty values and names SQS refuses are skipped,
    //  as is a name already present.
    size_t kh_len = 0;
    const char *kh = s_col_str (res, row, R_KHEADERS, &kh_len);
    qn_karena_t arena;
    qn_karena_init (&arena);
    qn_kafka_header_kv_t *hv = NULL;
    int32_t hn = 0;
    if (kh && qn_kafka_headers_decode (kh, kh_len, &arena, &hv, &hn) == 0)
        for (int32_t i = 0; i < hn && all_n < QN_SQS_MAX_MSG_ATTRS; i++) {
            qn_sqs_str_t name = { hv [i].key.ptr, hv [i].key.len > 0? (size_t) hv [i].key.len: 0 };
            if (hv [i].value.len <= 0 || !qn_sqs_attr_name_valid (&name))
                continue;
            bool dup = false;
            for (uint32_t k = 0; k < all_n && !dup; k++)
                dup = all [k].name.len == name.len && !memcmp (all [k].name.ptr, name.ptr, name.len);
            if (dup)
                continue;
            qn_sqs_str_t value = { hv [i].value.ptr, (size_t) hv [i].value.len };
            bool text = qn_sqs_body_valid (value.ptr, value.len);
            all [all_n++] = (qn_sqs_attr_t) { name, text? (qn_sqs_str_t) { "String", 6 }: (qn_sqs_str_t) { "Binary", 6 },
                                              value, !text, false };
        }
    for (uint32_t i = 0; i < all_n; i++)
        if (qn_sqs_name_wanted (r->req.message_attribute_names, r->req.message_attribute_name_count,
                                all [i].name.ptr, all [i].name.len))
            out [out_n++] = all [i];
    if (b64 && qn_sqs_name_wanted (r->req.message_attribute_names, r->req.message_attribute_name_count,
                                   "ContentEncoding", 15))
        out [out_n++] = (qn_sqs_attr_t) { { "ContentEncoding", 15 }, { "String", 6 }, { "base64", 6 },
                                          false, false };
    if (out_n) {
        qn_sqs_md5_attrs (out, out_n, md5);
        qn_sqs_w_cstr (w, "MD5OfMessageAttributes", md5);
        qn_sqs_w_map (w, "MessageAttributes", "MessageAttribute");
        for (uint32_t i = 0; i < out_n; i++)
            qn_sqs_w_map_attr (w, &out [i]);
        qn_sqs_w_map_end (w);
    }
    qn_sqs_w_item_obj_end (w);
    qn_buf_free (&store);
    qn_buf_free (&astore);
    qn_buf_free (&plain);
    qn_karena_free (&arena);
    free (enc);
}

static void
s_reply_received (qn_sqs_codec_t *codec, qn_sqs_req_t *r, const qn_pg_result_t *res)
{
    qn_buf_t b = QN_BUF_INIT;
    qn_sqs_w_t w;
    qn_sqs_w_begin (&w, r->req.proto, &b, r->req.op);
    uint32_t n = 0;
    int64_t seq;
    for (uint32_t row = 0; res && row < res->row_count; row++)
        if (s_col_int (res, row, R_SEQ, &seq)) {
            if (n++ == 0)
                qn_sqs_w_list (&w, "Messages", "Message");
            s_write_message (codec, r, res, row, &w);
        }
    if (n)
        qn_sqs_w_list_end (&w);
    qn_sqs_w_end (&w, r->request_id);
    qn_count (qn_sqs_kernel (codec), "sqs_messages_received", n);
    qn_sqs_reply (r, &b);
    qn_buf_free (&b);
}

static void
s_settle (qn_sqs_codec_t *codec, qn_sqs_req_t *r, bool found)
{
    if (r->woken) {
        r->woken = false;
        qn_park_settled (qn_sqs_park (codec), r->id, found);
    }
}

static void
s_on_received (qn_sqs_codec_t *codec, qn_sqs_req_t *r, qn_pg_result_t *res)
{
    if (!res->ok) {
        s_settle (codec, r, false);
        //  Lock contention: an empty receive, as native pops answer.
        if (!strncmp (res->sqlstate, "40", 2) || !strcmp (res->sqlstate, "55P03"))
            s_reply_received (codec, r, NULL);
        else
            qn_sqs_reply_pg_error (r, res);
        return;
    }
    int64_t seq;
    bool empty = !res->row_count || !s_col_int (res, 0, R_SEQ, &seq);
    if (!empty) {
        s_settle (codec, r, true);
        s_reply_received (codec, r, res);
        return;
    }
    if (qn_sqs_draining (codec) || qn_now_ms () >= r->deadline_ms) {
        s_settle (codec, r, false);
        s_reply_received (codec, r, NULL);
        return;
    }
    int64_t due = 0;
    if (!(res->row_count && s_col_int (res, 0, R_NEXT_DUE, &due)))
        due = 0;
    qn_park_wait_t pw = {
        .id = r->id, .tenant = r->tenant, .queue = r->queue, .partition = NULL, .ns = NULL,
        .task = NULL, .group = S_QUEUE_MODE, .deadline_ms = r->deadline_ms, .next_due_us = due,
        .started_us = r->started_us
    };
    //  Parking again reports a woken request back to the park table.
    r->woken = false;
    r->parked = true;
    if (qn_park_wait (qn_sqs_park (codec), &pw) != QN_PARK_PARKED) {
        r->parked = false;
        s_reply_received (codec, r, NULL);
    }
}

static void
s_receive_run (qn_sqs_codec_t *codec, qn_sqs_req_t *r)
{
    qn_uuid_v4 (r->lease);
    int64_t vis = r->req.visibility_timeout >= 0? r->req.visibility_timeout: r->q.visibility_s;
    qn_pg_args_t a;
    qn_pg_args_init (&a);
    qn_pg_args_cstr (&a, r->tenant);
    qn_pg_args_cstr (&a, r->queue);
    qn_pg_args_int (&a, r->req.max_messages > 0? r->req.max_messages: 1);
    qn_pg_args_int (&a, vis);
    qn_pg_args_cstr (&a, r->lease);
    qn_pg_args_cstr (&a, r->q.dlq [0]? r->q.dlq: NULL);
    qn_pg_args_int (&a, r->q.max_receives);
    r->started_us = qn_now_us ();
    int rc = qn_sqs_exec (codec, r, QN_SQL_SQS_RECEIVE, &a, s_on_received);
    qn_pg_args_free (&a);
    if (rc) {
        s_settle (codec, r, false);
        qn_sqs_reply_errorf (r, QN_SQS_E_SERVICE_UNAVAILABLE, "The service is busy; retry.");
    }
}

static void
s_receive (qn_sqs_codec_t *codec, qn_sqs_req_t *r)
{
    int64_t wait = r->req.wait_time_seconds >= 0? r->req.wait_time_seconds: r->q.wait_s;
    r->deadline_ms = qn_now_ms () + wait * 1000;
    s_receive_run (codec, r);
}

void
qn_sqs_receive_wake (void *arg, uint64_t id)
{
    qn_sqs_codec_t *codec = arg;
    qn_sqs_req_t *r = qn_sqs_request (codec, id);
    if (!r) {
        qn_park_settled (qn_sqs_park (codec), id, false);
        return;
    }
    r->parked = false;
    r->woken = true;
    s_receive_run (codec, r);
}

void
qn_sqs_receive_expire (void *arg, uint64_t id)
{
    qn_sqs_codec_t *codec = arg;
    qn_sqs_req_t *r = qn_sqs_request (codec, id);
    if (!r)
        return;
    r->parked = false;
    s_reply_received (codec, r, NULL);
}

// ------------------------------------------------------------------ DeleteMessage / ChangeMessageVisibility
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
        if (!s_col_int (res, row, 0, &ord) || ord < 1 || (uint32_t) ord > r->batch_sent)
            continue;
        qn_sqs_entry_t *e = &r->req.entries [r->batch_map [ord - 1]];
        if (s_col_is (res, row, 1, "not_inflight"))
            qn_sqs_fail (&e->error, QN_SQS_E_MESSAGE_NOT_INFLIGHT, "Message does not exist or is not available for visibility timeout change.");
        else
        if (s_col_is (res, row, 1, "stale") && r->q.fifo && !visibility)
            qn_sqs_fail (&e->error, QN_SQS_E_INVALID_PARAMETER_VALUE,
                         "Value %.*s for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired.",
                         (int) (e->receipt_handle.len > 100? 100: e->receipt_handle.len), e->receipt_handle.ptr);
    }
    if (!r->req.batch) {
        if (r->req.entries [0].error.code)
            qn_sqs_reply_error (r, &r->req.entries [0].error);
        else
            s_reply_empty_ok (r);
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

static void
s_handle_op (qn_sqs_codec_t *codec, qn_sqs_req_t *r)
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
    s_exec_or_fail (codec, r, visibility? QN_SQL_SQS_VISIBILITY: QN_SQL_SQS_ACK, &a, s_on_handled);
}

// ------------------------------------------------------------------ dispatch
static void s_step_none (qn_sqs_codec_t *codec, qn_sqs_req_t *r) { (void) codec; s_no_queue (r); }

static s_step_fn *
s_step_of (qn_sqs_op_t op)
{
    switch (op) {
        case QN_SQS_OP_GET_QUEUE_URL: return s_get_url;
        case QN_SQS_OP_GET_QUEUE_ATTRIBUTES: return s_get_attrs;
        case QN_SQS_OP_SET_QUEUE_ATTRIBUTES: return s_set_attrs;
        case QN_SQS_OP_SEND_MESSAGE:
        case QN_SQS_OP_SEND_MESSAGE_BATCH: return s_send;
        case QN_SQS_OP_RECEIVE_MESSAGE: return s_receive;
        case QN_SQS_OP_DELETE_MESSAGE:
        case QN_SQS_OP_DELETE_MESSAGE_BATCH:
        case QN_SQS_OP_CHANGE_MESSAGE_VISIBILITY:
        case QN_SQS_OP_CHANGE_MESSAGE_VISIBILITY_BATCH: return s_handle_op;
        case QN_SQS_OP_LIST_DEAD_LETTER_SOURCE_QUEUES: return s_dlq_sources;
        default: return s_step_none;
    }
}

void
qn_sqs_dispatch (qn_sqs_codec_t *codec, qn_sqs_req_t *r)
{
    switch (r->req.op) {
        case QN_SQS_OP_CREATE_QUEUE: s_create (codec, r); break;
        case QN_SQS_OP_LIST_QUEUES: s_list (codec, r); break;
        case QN_SQS_OP_DELETE_QUEUE: s_by_name (codec, r, QN_SQL_SQS_DELETE); break;
        case QN_SQS_OP_PURGE_QUEUE: s_by_name (codec, r, QN_SQL_SQS_PURGE); break;
        case QN_SQS_OP_TAG_QUEUE:
        case QN_SQS_OP_UNTAG_QUEUE:
        case QN_SQS_OP_LIST_QUEUE_TAGS: s_tags (codec, r); break;
        case QN_SQS_OP_GET_QUEUE_ATTRIBUTES: s_lookup (codec, r, true); break;
        default: s_lookup (codec, r, false); break;
    }
}
