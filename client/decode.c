/*  client/decode.c - libqueen: reading the broker's answers
    Pure functions over answer bytes (no I/O, no libcurl), so they can be
    fuzzed (test/fuzz/fuzz_client.c): the error text of a non-2xx answer,
    push results, a pop's batch, ack-style result arrays and a
    transaction's outcome. Any byte string gives a code, never a crash.
    Owns      only what it returns (freed by the matching *_free)
    Failure   QUEEN_ERR_PROTOCOL for answers that are not what the API
              promises, QUEEN_ERR_REFUSED for success:false
*/
#include "client/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
queen_error_clear (queen_error_t *err)
{
    if (!err)
        return;
    free (err->body);
    memset (err, 0, sizeof *err);
}

queen_code_t
queen__fail (queen_error_t *err, queen_code_t code, const char *fmt, ...)
{
    if (err) {
        free (err->body);
        err->body = NULL;
        err->code = code;
        err->http_status = 0;
        va_list ap;
        va_start (ap, fmt);
        vsnprintf (err->message, sizeof err->message, fmt, ap);
        va_end (ap);
    }
    return code;
}

char *
queen__str (const qn_json_doc_t *doc, int tok)
{
    if (tok < 0 || qn_json_type (doc, tok) != QN_JSON_STRING)
        return NULL;
    qn_buf_t b = QN_BUF_INIT;
    qn_json_str (doc, tok, &b);
    if (!b.data)
        return strdup ("");
    return qn_buf_detach (&b, NULL);
}

char *
queen__raw (const qn_json_doc_t *doc, int tok, size_t *len)
{
    size_t n = 0;
    const char *p = tok >= 0 ? qn_json_raw (doc, tok, &n) : NULL;
    if (len)
        *len = p ? n : 0;
    return p ? strndup (p, n) : NULL;
}

void
queen_push_results_free (queen_push_result_t *results, size_t n)
{
    if (!results)
        return;
    for (size_t i = 0; i < n; i++) {
        free (results [i].status);
        free (results [i].transaction_id);
        free (results [i].message_id);
        free (results [i].partition_id);
        free (results [i].error);
    }
    free (results);
}

static void
s_message_free (queen_message_t *m)
{
    free (m->id);
    free (m->transaction_id);
    free (m->partition_id);
    free (m->partition);
    free (m->lease_id);
    free (m->consumer_group);
    free (m->trace_id);
    free (m->created_at);
    free (m->data);
}

void
queen_batch_free (queen_batch_t *batch)
{
    if (!batch)
        return;
    for (size_t i = 0; i < batch->count; i++)
        s_message_free (&batch->messages [i]);
    free (batch->messages);
    free (batch->queue);
    free (batch->lease_id);
    free (batch->body);
    memset (batch, 0, sizeof *batch);
}

static char *
s_dup (const char *body, size_t len)
{
    return body ? strndup (body, len) : NULL;
}

void
queen__error_text (const char *body, size_t len, long status, char *out, size_t size)
{
    out [0] = 0;
    if (body && len) {
        qn_json_doc_t doc;
        qn_json_doc_init (&doc);
        if (qn_json_parse (&doc, body, len, 0) == 0 && qn_json_type (&doc, 0) == QN_JSON_OBJECT) {
            char *e = queen__str (&doc, qn_json_get (&doc, 0, "error"));
            if (e)
                snprintf (out, size, "%s", e);
            free (e);
        }
        qn_json_doc_free (&doc);
        if (!out [0])
            snprintf (out, size, "%.*s", (int) (len < 200 ? len : 200), body);
    }
    if (!out [0])
        snprintf (out, size, "HTTP status %ld", status);
}

queen_code_t
queen__parse (qn_json_doc_t *doc, const char *body, size_t len, long status, int root_type,
              const char *what, queen_error_t *err)
{
    if (!body || qn_json_parse (doc, body, len, 0) != 0 || qn_json_type (doc, 0) != root_type) {
        queen__fail (err, QUEEN_ERR_PROTOCOL, "%s: unexpected answer: %.*s", what,
                     body ? (int) (len < 200 ? len : 200) : 7, body ? body : "(empty)");
        if (err) {
            err->body = s_dup (body, len);
            err->http_status = status;
        }
        return QUEEN_ERR_PROTOCOL;
    }
    return QUEEN_OK;
}

queen_code_t
queen__decode_push (const char *body, size_t len, queen_push_result_t *res, size_t count,
                    queen_error_t *err)
{
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    queen_code_t code = queen__parse (&doc, body, len, 201, QN_JSON_ARRAY, "push", err);
    if (code == QUEEN_OK && qn_json_size (&doc, 0) != (int64_t) count)
        code = queen__fail (err, QUEEN_ERR_PROTOCOL, "push: %zu items sent, %lld results",
                            count, (long long) qn_json_size (&doc, 0));
    uint32_t i = 0;
    for (int t = code ? -1 : qn_json_first (&doc, 0); t >= 0; t = qn_json_next_sibling (&doc, 0, t), i++) {
        queen_push_result_t *r = &res [i];
        if (qn_json_type (&doc, t) != QN_JSON_OBJECT) {
            code = queen__fail (err, QUEEN_ERR_PROTOCOL, "push: result %u is not an object", i);
            break;
        }
        r->status = queen__str (&doc, qn_json_get (&doc, t, "status"));
        r->message_id = queen__str (&doc, qn_json_get (&doc, t, "message_id"));
        r->partition_id = queen__str (&doc, qn_json_get (&doc, t, "partition_id"));
        r->error = queen__str (&doc, qn_json_get (&doc, t, "error"));
    }
    qn_json_doc_free (&doc);
    return code;
}

queen_code_t
queen__decode_batch (const char *body, size_t len, queen_batch_t *out, queen_error_t *err)
{
    memset (out, 0, sizeof *out);
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    queen_code_t code = queen__parse (&doc, body, len, 200, QN_JSON_OBJECT, "pop", err);
    int msgs = code ? -1 : qn_json_get (&doc, 0, "messages");
    if (code == QUEEN_OK && qn_json_type (&doc, msgs) != QN_JSON_ARRAY)
        code = queen__fail (err, QUEEN_ERR_PROTOCOL, "pop: no messages array");
    if (code == QUEEN_OK) {
        out->queue = queen__str (&doc, qn_json_get (&doc, 0, "queue"));
        out->lease_id = queen__str (&doc, qn_json_get (&doc, 0, "leaseId"));
        size_t n = (size_t) qn_json_size (&doc, msgs);
        out->messages = calloc (n ? n : 1, sizeof *out->messages);
        for (int t = qn_json_first (&doc, msgs); t >= 0; t = qn_json_next_sibling (&doc, msgs, t)) {
            if (qn_json_type (&doc, t) != QN_JSON_OBJECT) {
                code = queen__fail (err, QUEEN_ERR_PROTOCOL, "pop: a message is not an object");
                break;
            }
            queen_message_t *m = &out->messages [out->count++];
            m->id = queen__str (&doc, qn_json_get (&doc, t, "id"));
            m->transaction_id = queen__str (&doc, qn_json_get (&doc, t, "transactionId"));
            m->partition_id = queen__str (&doc, qn_json_get (&doc, t, "partitionId"));
            m->partition = queen__str (&doc, qn_json_get (&doc, t, "partition"));
            m->lease_id = queen__str (&doc, qn_json_get (&doc, t, "leaseId"));
            m->consumer_group = queen__str (&doc, qn_json_get (&doc, t, "consumerGroup"));
            m->trace_id = queen__str (&doc, qn_json_get (&doc, t, "traceId"));
            m->created_at = queen__str (&doc, qn_json_get (&doc, t, "createdAt"));
            m->data = queen__raw (&doc, qn_json_get (&doc, t, "data"), &m->data_len);
        }
        out->body = s_dup (body, len);
    }
    qn_json_doc_free (&doc);
    if (code != QUEEN_OK)
        queen_batch_free (out);
    return code;
}

queen_code_t
queen__decode_acks (const char *body, size_t len, long status, size_t n, bool *ok,
                    const char *what, queen_error_t *err)
{
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    queen_code_t code = queen__parse (&doc, body, len, status, QN_JSON_ARRAY, what, err);
    if (code == QUEEN_OK && qn_json_size (&doc, 0) != (int64_t) n)
        code = queen__fail (err, QUEEN_ERR_PROTOCOL, "%s: %zu items sent, %lld results", what,
                            n, (long long) qn_json_size (&doc, 0));
    size_t i = 0;
    bool refused = false;
    for (int t = code ? -1 : qn_json_first (&doc, 0); t >= 0; t = qn_json_next_sibling (&doc, 0, t), i++) {
        bool success = false;
        qn_json_bool (&doc, qn_json_get (&doc, t, "success"), &success);
        if (ok)
            ok [i] = success;
        if (!success && !refused) {
            refused = true;
            char *e = queen__str (&doc, qn_json_get (&doc, t, "error"));
            queen__fail (err, QUEEN_ERR_REFUSED, "%s: item %zu: %s", what, i, e ? e : "refused");
            if (err) {
                err->http_status = status;
                err->body = s_dup (body, len);
            }
            free (e);
        }
    }
    qn_json_doc_free (&doc);
    return code ? code : refused ? QUEEN_ERR_REFUSED : QUEEN_OK;
}

queen_code_t
queen__decode_txn (const char *body, size_t len, long status, queen_error_t *err)
{
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    queen_code_t code = queen__parse (&doc, body, len, status, QN_JSON_OBJECT, "transaction", err);
    bool success = false;
    if (code == QUEEN_OK && qn_json_bool (&doc, qn_json_get (&doc, 0, "success"), &success) != 0)
        code = queen__fail (err, QUEEN_ERR_PROTOCOL, "transaction: no success field");
    if (code == QUEEN_OK && !success) {
        char *e = queen__str (&doc, qn_json_get (&doc, 0, "error"));
        code = queen__fail (err, QUEEN_ERR_REFUSED, "transaction: %s", e ? e : "refused");
        if (err) {
            err->http_status = status;
            err->body = s_dup (body, len);
        }
        free (e);
    }
    qn_json_doc_free (&doc);
    return code;
}
