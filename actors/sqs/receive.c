/*  actors/sqs/receive.c - ReceiveMessage
    Native queue-mode pops (sqs_receive: one message per stripe partition,
    a FIFO group's next messages together; sealed bodies opened, Kafka
    record headers as attributes). An empty receive with a wait parks in
    the codec's park table, woken by "committed" events like HTTP
    long-polls.
    Receives  requests from ops.c's dispatch, PG_RESULT through a callback,
              park wake/expire callbacks
    Sends     QN_MSG_PG_EXEC to pg_writer (through qn_sqs_exec)
    Owns      nothing beyond the request
    Failure   every path answers exactly once: an SQS error, or the result
*/
#include "actors/sqs/sqs_int.h"
#include "actors/park/park.h"
#include "actors/pg/statements.h"
#include "base/log.h"
#include "wire/crypto.h"
#include "wire/ids.h"
#include "wire/kafka_records.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_QUEUE_MODE    "__QUEUE_MODE__"

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
    qn_sqs_col_int (res, row, R_PID, &pid);
    qn_sqs_col_int (res, row, R_SEQ, &seq);
    qn_sqs_col_int (res, row, R_CREATED, &created);
    qn_sqs_col_int (res, row, R_COUNT, &count);
    qn_sqs_col_int (res, row, R_FIRST, &first);
    size_t body_len = 0;
    const char *body = qn_sqs_col_str (res, row, R_PAYLOAD, &body_len);
    if (!body)
        body = "";
    //  Stored sealed (encryptionEnabled): opened with the key ring; one
    //  that does not open goes out as stored (the envelope) and is logged.
    qn_buf_t plain = QN_BUF_INIT;
    if (qn_sqs_col_bool (res, row, R_ENCRYPTED)) {
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
    const char *orig = qn_sqs_col_str (res, row, R_ORIG_ID, &olen);
    if (orig && olen == QN_ID_STR_LEN)
        snprintf (id, sizeof id, "%.*s", (int) olen, orig);
    else
        qn_id_format (QN_ID_MESSAGE, seq, id);
    qn_sqs_col_int (res, row, R_ORIG_SENT, &created);
    qn_sqs_w_item_obj (w);
    qn_sqs_w_cstr (w, "MessageId", id);
    qn_sqs_w_cstr (w, "ReceiptHandle", handle);
    qn_sqs_md5_hex (body, body_len, md5);
    qn_sqs_w_cstr (w, "MD5OfBody", md5);
    qn_sqs_w_str (w, "Body", body, body_len);
    //  System attributes
    size_t glen = 0, dlen = 0, slen = 0, plen = 0;
    const char *group = qn_sqs_col_str (res, row, R_GROUP, &glen);
    const char *dedup = qn_sqs_col_str (res, row, R_DEDUP, &dlen);
    const char *sender = qn_sqs_col_str (res, row, R_SENDER, &slen);
    const char *pname = qn_sqs_col_str (res, row, R_PNAME, &plen);
    qn_buf_t store = QN_BUF_INIT;
    qn_sqs_attr_t sys [QN_SQS_MAX_SYS_ATTRS];
    uint32_t sys_n = 0;
    size_t sys_len;
    const char *sys_json = qn_sqs_col_str (res, row, R_SYS, &sys_len);
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
    const char *attrs_json = qn_sqs_col_str (res, row, R_ATTRS, &attrs_len);
    qn_buf_t astore = QN_BUF_INIT;
    if (attrs_json)
        qn_sqs_attrs_from_json (attrs_json, attrs_len, all, QN_SQS_MAX_MSG_ATTRS, &all_n, &astore);
    //  Kafka record headers (spec §6.3): String when the value is SQS text,
    //  else Binary; null or empty values and names SQS refuses are skipped,
    //  as is a name already present.
    size_t kh_len = 0;
    const char *kh = qn_sqs_col_str (res, row, R_KHEADERS, &kh_len);
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
        if (qn_sqs_col_int (res, row, R_SEQ, &seq)) {
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
    bool empty = !res->row_count || !qn_sqs_col_int (res, 0, R_SEQ, &seq);
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
    if (!(res->row_count && qn_sqs_col_int (res, 0, R_NEXT_DUE, &due)))
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

void
qn_sqs_receive (qn_sqs_codec_t *codec, qn_sqs_req_t *r)
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

