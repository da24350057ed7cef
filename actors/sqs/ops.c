/*  actors/sqs/ops.c - SQS operations as messaging-core operations
    Each operation is one or two catalogue statements on pg_writer
    (schema/functions/62_sqs.sql): the queue's SQS settings first when the
    operation needs them (sqs_queue, read here and kept in qcache.c for a
    send during an outage), then the operation itself,
    in the file of its concern: queues.c (queue management, tags), send.c
    (SendMessage(Batch)), receive.c (ReceiveMessage), handles.c
    (DeleteMessage, ChangeMessageVisibility). This file holds what they
    share: the result-column getters, the settings read and the dispatch.
    Receives  decoded requests from codec.c, PG_RESULT through callbacks
    Sends     QN_MSG_PG_EXEC to pg_writer (through qn_sqs_exec)
    Owns      nothing beyond the request (qn_sqs_req_t)
    Failure   every path answers exactly once: an SQS error, or the result
*/
#include "actors/sqs/sqs_int.h"
#include "actors/pg/statements.h"
#include "wire/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ------------------------------------------------------------------ result columns
const msgpack_object *
qn_sqs_col (const qn_pg_result_t *res, uint32_t r, uint32_t c)
{
    static const msgpack_object nil = { .type = MSGPACK_OBJECT_NIL };
    const msgpack_object *o = qn_pg_result_col (res, r, c);
    return o? o: &nil;
}

bool
qn_sqs_col_int (const qn_pg_result_t *res, uint32_t r, uint32_t c, int64_t *out)
{
    const msgpack_object *o = qn_sqs_col (res, r, c);
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= INT64_MAX)
        *out = (int64_t) o->via.u64;
    else
    if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
        *out = o->via.i64;
    else
        return false;
    return true;
}

bool
qn_sqs_col_bool (const qn_pg_result_t *res, uint32_t r, uint32_t c)
{
    const msgpack_object *o = qn_sqs_col (res, r, c);
    return o->type == MSGPACK_OBJECT_BOOLEAN && o->via.boolean;
}

//  String or bin column: pointer and length; NULL when nil.
const char *
qn_sqs_col_str (const qn_pg_result_t *res, uint32_t r, uint32_t c, size_t *len)
{
    const msgpack_object *o = qn_sqs_col (res, r, c);
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

bool
qn_sqs_col_is (const qn_pg_result_t *res, uint32_t r, uint32_t c, const char *s)
{
    size_t len;
    const char *p = qn_sqs_col_str (res, r, c, &len);
    return p && len == strlen (s) && memcmp (p, s, len) == 0;
}

// ------------------------------------------------------------------ small helpers
void
qn_sqs_args_str (qn_pg_args_t *a, const qn_sqs_str_t *s)
{
    qn_pg_args_str (a, s->ptr, s->ptr? s->len: 0);
}

void
qn_sqs_no_queue (qn_sqs_req_t *r)
{
    qn_sqs_reply_errorf (r, QN_SQS_E_NON_EXISTENT_QUEUE, "The specified queue does not exist.");
}

void
qn_sqs_exec_or_fail (qn_sqs_codec_t *codec, qn_sqs_req_t *r, uint32_t stmt, qn_pg_args_t *args,
                qn_sqs_result_fn *cb)
{
    int rc = qn_sqs_exec (codec, r, stmt, args, cb);
    qn_pg_args_free (args);
    if (rc)
        qn_sqs_reply_errorf (r, QN_SQS_E_SERVICE_UNAVAILABLE, "The service is busy; retry.");
}

void
qn_sqs_reply_empty_ok (qn_sqs_req_t *r)
{
    qn_buf_t b = QN_BUF_INIT;
    qn_sqs_w_t w;
    qn_sqs_w_begin (&w, r->req.proto, &b, r->req.op);
    qn_sqs_w_end (&w, r->request_id);
    qn_sqs_reply (r, &b);
    qn_buf_free (&b);
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
    q->id = qn_sqs_col_int (res, 0, 0, &v)? (int32_t) v: 0;
    q->fifo = qn_sqs_col_bool (res, 0, 1);
    size_t len;
    const char *p = qn_sqs_col_str (res, 0, 2, &len);
    q->attrs_json = qn_strndup (p? p: "{}", p? len: 2);
    p = qn_sqs_col_str (res, 0, 3, &len);
    q->tags_json = qn_strndup (p? p: "{}", p? len: 2);
    qn_sqs_col_int (res, 0, 4, &q->created_us);
    qn_sqs_col_int (res, 0, 5, &q->modified_us);
    qn_sqs_col_int (res, 0, 6, &q->visible);
    qn_sqs_col_int (res, 0, 7, &q->inflight);
    qn_sqs_col_int (res, 0, 8, &q->delayed);
    p = qn_sqs_col_str (res, 0, 9, &len);
    if (p && len >= QN_SQS_HANDLE_KEY_LEN)
        memcpy (q->key, p, QN_SQS_HANDLE_KEY_LEN);
    q->encrypted = qn_sqs_col_bool (res, 0, 10);
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

//  A send while the database cannot be reached runs on the settings this
//  codec read last (qcache.c): its push goes to the spool like any push.
//  True when it did (r answered or on its way), false when there are none
//  or the operation is not a send.
static bool
s_send_on_kept (qn_sqs_codec_t *codec, qn_sqs_req_t *r)
{
    if ((r->req.op != QN_SQS_OP_SEND_MESSAGE && r->req.op != QN_SQS_OP_SEND_MESSAGE_BATCH)
    ||  !qn_sqs_qcache_get (qn_sqs_qcache (codec), r->tenant, r->queue, &r->q))
        return false;
    qn_count (qn_sqs_kernel (codec), "sqs_sends_on_kept_settings", 1);
    qn_sqs_send (codec, r);
    return true;
}

static void
s_on_queue (qn_sqs_codec_t *codec, qn_sqs_req_t *r, qn_pg_result_t *res)
{
    if (!res->ok) {
        if (!(qn_sqs_pg_unavailable (res) && s_send_on_kept (codec, r)))
            qn_sqs_reply_pg_error (r, res);
        return;
    }
    if (res->row_count == 0) {
        qn_sqs_qcache_drop (qn_sqs_qcache (codec), r->tenant, r->queue);
        qn_sqs_no_queue (r);
        return;
    }
    s_queue_read (r, res);
    qn_sqs_qcache_put (qn_sqs_qcache (codec), r->tenant, r->queue, &r->q);
    s_step_of (r->req.op) (codec, r);
}

//  Looks up the addressed queue, then runs the operation's step.
static void
s_lookup (qn_sqs_codec_t *codec, qn_sqs_req_t *r, bool counts)
{
    if (!r->queue [0]) {
        qn_sqs_no_queue (r);
        return;
    }
    if (!qn_sqs_db_up (codec) && s_send_on_kept (codec, r))
        return;
    qn_pg_args_t a;
    qn_pg_args_init (&a);
    qn_pg_args_cstr (&a, r->tenant);
    qn_pg_args_cstr (&a, r->queue);
    qn_pg_args_bool (&a, counts);
    qn_sqs_exec_or_fail (codec, r, QN_SQL_SQS_QUEUE, &a, s_on_queue);
}

// ------------------------------------------------------------------ dispatch
static void s_step_none (qn_sqs_codec_t *codec, qn_sqs_req_t *r) { (void) codec; qn_sqs_no_queue (r); }

static s_step_fn *
s_step_of (qn_sqs_op_t op)
{
    switch (op) {
        case QN_SQS_OP_GET_QUEUE_URL: return qn_sqs_get_url;
        case QN_SQS_OP_GET_QUEUE_ATTRIBUTES: return qn_sqs_get_attrs;
        case QN_SQS_OP_SET_QUEUE_ATTRIBUTES: return qn_sqs_set_attrs;
        case QN_SQS_OP_SEND_MESSAGE:
        case QN_SQS_OP_SEND_MESSAGE_BATCH: return qn_sqs_send;
        case QN_SQS_OP_RECEIVE_MESSAGE: return qn_sqs_receive;
        case QN_SQS_OP_DELETE_MESSAGE:
        case QN_SQS_OP_DELETE_MESSAGE_BATCH:
        case QN_SQS_OP_CHANGE_MESSAGE_VISIBILITY:
        case QN_SQS_OP_CHANGE_MESSAGE_VISIBILITY_BATCH: return qn_sqs_handle_op;
        case QN_SQS_OP_LIST_DEAD_LETTER_SOURCE_QUEUES: return qn_sqs_dlq_sources;
        default: return s_step_none;
    }
}

void
qn_sqs_dispatch (qn_sqs_codec_t *codec, qn_sqs_req_t *r)
{
    switch (r->req.op) {
        case QN_SQS_OP_CREATE_QUEUE: qn_sqs_create (codec, r); break;
        case QN_SQS_OP_LIST_QUEUES: qn_sqs_list (codec, r); break;
        case QN_SQS_OP_DELETE_QUEUE: qn_sqs_by_name (codec, r, QN_SQL_SQS_DELETE); break;
        case QN_SQS_OP_PURGE_QUEUE: qn_sqs_by_name (codec, r, QN_SQL_SQS_PURGE); break;
        case QN_SQS_OP_TAG_QUEUE:
        case QN_SQS_OP_UNTAG_QUEUE:
        case QN_SQS_OP_LIST_QUEUE_TAGS: qn_sqs_tags (codec, r); break;
        case QN_SQS_OP_GET_QUEUE_ATTRIBUTES: s_lookup (codec, r, true); break;
        default: s_lookup (codec, r, false); break;
    }
}

