/*  client/ops.c - libqueen: the API operations
    Each function builds its JSON body with the repo's writer (wire/json.h),
    sends it with queen__call and reads the answer with the strict parser.
    Routes and shapes: docs/http-api.md. The consumer loop runs one helper
    thread per batch in flight to extend its lease.
    Owns      only what it returns (freed by the matching *_free)
    Failure   queen_code_t + queen_error_t, as every call of the library
*/
#include "client/internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void
s_kstr_opt (qn_jw_t *w, const char *k, const char *v)
{
    if (v)
        qn_jw_kstr (w, k, v);
}

static queen_code_t
s_post (queen_client_t *self, const char *path, const qn_buf_t *body, long extra_ms,
        queen_response_t *resp, queen_error_t *err)
{
    return queen__call (self, "POST", path, body->data, body->len, extra_ms, resp, err);
}

//  ---------------------------------------------------------------- push
static void
s_write_item (qn_jw_t *w, const queen_item_t *it, char *txid_out /* 37 or more */)
{
    qn_jw_obj (w);
    qn_jw_kstr (w, "queue", it->queue);
    s_kstr_opt (w, "partition", it->partition);
    const char *tx = it->transaction_id;
    char fresh [37];
    if (!tx || !*tx) {
        queen_uuid7 (fresh);
        tx = fresh;
    }
    qn_jw_kstr (w, "transactionId", tx);
    if (txid_out)
        snprintf (txid_out, 256, "%s", tx);
    s_kstr_opt (w, "traceId", it->trace_id);
    if (it->payload)
        qn_jw_kraw (w, "payload", it->payload, strlen (it->payload));
    else
        qn_jw_knull (w, "payload");
    qn_jw_obj_end (w);
}

static queen_code_t
s_check_items (const queen_item_t *items, size_t n, queen_error_t *err)
{
    for (size_t i = 0; i < n; i++) {
        if (!items [i].queue)
            return queen__fail (err, QUEEN_ERR_ARG, "items[%zu].queue is required", i);
        if (items [i].payload) {
            qn_json_doc_t doc;
            qn_json_doc_init (&doc);
            int rc = qn_json_parse (&doc, items [i].payload, strlen (items [i].payload), 0);
            qn_json_doc_free (&doc);
            if (rc != 0)
                return queen__fail (err, QUEEN_ERR_ARG, "items[%zu].payload is not JSON", i);
        }
    }
    return QUEEN_OK;
}

queen_code_t
queen_push (queen_client_t *self, const queen_item_t *items, size_t n,
            queen_push_result_t **results, size_t *done_out, queen_error_t *err)
{
    if (results)
        *results = NULL;
    if (done_out)
        *done_out = 0;
    if (!self || (!items && n))
        return queen__fail (err, QUEEN_ERR_ARG, "a client and items are required");
    if (n == 0)
        return queen__fail (err, QUEEN_ERR_ARG, "nothing to push");
    queen_code_t code = s_check_items (items, n, err);
    if (code)
        return code;
    queen_push_result_t *res = calloc (n, sizeof *res);
    size_t batch = (size_t) queen__push_batch (self);
    qn_buf_t body = QN_BUF_INIT;
    queen_response_t resp = { 0 };
    size_t done = 0;
    while (done < n && code == QUEEN_OK) {
        size_t count = n - done < batch ? n - done : batch;
        qn_buf_reset (&body);
        qn_jw_t w;
        qn_jw_init (&w, &body);
        qn_jw_obj (&w);
        qn_jw_key (&w, "items");
        qn_jw_arr (&w);
        for (size_t i = 0; i < count; i++) {
            char tx [256];
            s_write_item (&w, &items [done + i], tx);
            res [done + i].transaction_id = strdup (tx);
        }
        qn_jw_arr_end (&w);
        qn_jw_obj_end (&w);
        code = s_post (self, "/api/v1/push", &body, 0, &resp, err);
        if (code == QUEEN_OK)
            code = queen__decode_push (resp.body, resp.len, &res [done], count, err);
        if (code == QUEEN_OK)
            done += count;
    }
    queen_response_free (&resp);
    qn_buf_free (&body);
    if (done_out)
        *done_out = done;
    if (results)
        *results = res;
    else
        queen_push_results_free (res, n);
    return code;
}

//  ---------------------------------------------------------------- pop
queen_code_t
queen_pop (queen_client_t *self, const char *queue, const queen_pop_opts_t *opts,
           queen_batch_t *out, queen_error_t *err)
{
    if (out)
        memset (out, 0, sizeof *out);
    if (!self || !queue || !out)
        return queen__fail (err, QUEEN_ERR_ARG, "a client, a queue and a batch are required");
    queen_pop_opts_t none = { 0 };
    if (!opts)
        opts = &none;
    qn_buf_t path = QN_BUF_INIT;
    char *q = queen_escape (queue);
    qn_buf_printf (&path, "/api/v1/pop/queue/%s", q);
    free (q);
    if (opts->partition) {
        char *p = queen_escape (opts->partition);
        qn_buf_printf (&path, "/partition/%s", p);
        free (p);
    }
    qn_buf_printf (&path, "?batch=%d", opts->batch > 0 ? opts->batch : 1);
    if (opts->partitions > 0)
        qn_buf_printf (&path, "&partitions=%d", opts->partitions);
    qn_buf_printf (&path, "&wait=%s", opts->wait ? "true" : "false");
    if (opts->timeout_ms > 0)
        qn_buf_printf (&path, "&timeout=%ld", opts->timeout_ms);
    const char *names [] = { "consumerGroup", "subscriptionMode", "subscriptionFrom" };
    const char *vals [] = { opts->consumer_group, opts->subscription_mode, opts->subscription_from };
    for (int i = 0; i < 3; i++)
        if (vals [i]) {
            char *v = queen_escape (vals [i]);
            qn_buf_printf (&path, "&%s=%s", names [i], v);
            free (v);
        }
    if (opts->auto_ack)
        qn_buf_puts (&path, "&autoAck=true");
    queen_response_t resp = { 0 };
    long extra = opts->wait ? (opts->timeout_ms > 0 ? opts->timeout_ms : 30000) : 0;
    queen_code_t code = queen__call (self, "GET", path.data, NULL, 0, extra, &resp, err);
    qn_buf_free (&path);
    if (code != QUEEN_OK || resp.status == 204 || !resp.body) {
        queen_response_free (&resp);
        return code;
    }
    code = queen__decode_batch (resp.body, resp.len, out, err);
    queen_response_free (&resp);
    return code;
}

//  ---------------------------------------------------------------- ack
static void
s_write_ack_fields (qn_jw_t *w, const queen_ack_t *a)
{
    qn_jw_kstr (w, "transactionId", a->transaction_id);
    qn_jw_kstr (w, "partitionId", a->partition_id);
    s_kstr_opt (w, "leaseId", a->lease_id);
    qn_jw_kstr (w, "status", a->status ? a->status : "completed");
    s_kstr_opt (w, "error", a->error);
}

//  Reads an ack-style answer array: per item `success` and `error`.
static queen_code_t
s_ack_answer (const queen_response_t *resp, size_t n, bool *ok, const char *what,
              queen_error_t *err)
{
    return queen__decode_acks (resp->body, resp->len, resp->status, n, ok, what, err);
}

static queen_code_t
s_check_ack (const queen_ack_t *a, size_t i, queen_error_t *err)
{
    if (!a->transaction_id || !a->partition_id)
        return queen__fail (err, QUEEN_ERR_ARG, "acks[%zu]: transaction_id and partition_id are required", i);
    return QUEEN_OK;
}

queen_code_t
queen_ack (queen_client_t *self, const queen_ack_t *ack, const char *consumer_group,
           queen_error_t *err)
{
    if (!self || !ack)
        return queen__fail (err, QUEEN_ERR_ARG, "a client and an ack are required");
    queen_code_t code = s_check_ack (ack, 0, err);
    if (code)
        return code;
    qn_buf_t body = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &body);
    qn_jw_obj (&w);
    s_write_ack_fields (&w, ack);
    s_kstr_opt (&w, "consumerGroup", consumer_group);
    qn_jw_obj_end (&w);
    queen_response_t resp = { 0 };
    code = s_post (self, "/api/v1/ack", &body, 0, &resp, err);
    if (code == QUEEN_OK)
        code = s_ack_answer (&resp, 1, NULL, "ack", err);
    queen_response_free (&resp);
    qn_buf_free (&body);
    return code;
}

queen_code_t
queen_ack_batch (queen_client_t *self, const queen_ack_t *acks, size_t n,
                 const char *consumer_group, bool *ok, queen_error_t *err)
{
    if (!self || !acks || n == 0)
        return queen__fail (err, QUEEN_ERR_ARG, "a client and at least one ack are required");
    for (size_t i = 0; i < n; i++) {
        queen_code_t code = s_check_ack (&acks [i], i, err);
        if (code)
            return code;
    }
    qn_buf_t body = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &body);
    qn_jw_obj (&w);
    s_kstr_opt (&w, "consumerGroup", consumer_group);
    qn_jw_key (&w, "acknowledgments");
    qn_jw_arr (&w);
    for (size_t i = 0; i < n; i++) {
        qn_jw_obj (&w);
        s_write_ack_fields (&w, &acks [i]);
        qn_jw_obj_end (&w);
    }
    qn_jw_arr_end (&w);
    qn_jw_obj_end (&w);
    queen_response_t resp = { 0 };
    queen_code_t code = s_post (self, "/api/v1/ack/batch", &body, 0, &resp, err);
    if (code == QUEEN_OK)
        code = s_ack_answer (&resp, n, ok, "ack batch", err);
    queen_response_free (&resp);
    qn_buf_free (&body);
    return code;
}

queen_code_t
queen_ack_all (queen_client_t *self, const queen_batch_t *batch, const char *status,
               queen_error_t *err)
{
    if (!batch || batch->count == 0)
        return queen__fail (err, QUEEN_ERR_ARG, "an empty batch has nothing to ack");
    queen_ack_t *acks = calloc (batch->count, sizeof *acks);
    for (size_t i = 0; i < batch->count; i++) {
        const queen_message_t *m = &batch->messages [i];
        acks [i] = (queen_ack_t) { .transaction_id = m->transaction_id,
                                   .partition_id = m->partition_id,
                                   .lease_id = m->lease_id, .status = status };
    }
    const char *group = batch->messages [0].consumer_group;
    queen_code_t code = queen_ack_batch (self, acks, batch->count,
                                         group && strcmp (group, "__QUEUE_MODE__") ? group : NULL,
                                         NULL, err);
    free (acks);
    return code;
}

queen_code_t
queen_lease_extend (queen_client_t *self, const char *lease_id, int seconds, queen_error_t *err)
{
    if (!self || !lease_id || !*lease_id)
        return queen__fail (err, QUEEN_ERR_ARG, "a client and a lease id are required");
    char *l = queen_escape (lease_id);
    qn_buf_t path = QN_BUF_INIT;
    qn_buf_printf (&path, "/api/v1/lease/%s/extend", l);
    free (l);
    qn_buf_t body = QN_BUF_INIT;
    if (seconds > 0)
        qn_buf_printf (&body, "{\"seconds\":%d}", seconds);
    else
        qn_buf_puts (&body, "{}");
    queen_response_t resp = { 0 };
    queen_code_t code = s_post (self, path.data, &body, 0, &resp, err);
    if (code == QUEEN_OK)
        code = s_ack_answer (&resp, 1, NULL, "lease extend", err);
    queen_response_free (&resp);
    qn_buf_free (&body);
    qn_buf_free (&path);
    return code;
}

//  -------------------------------------------------------- transactions
struct queen_txn_s {
    qn_buf_t ops;               //  Operation objects, comma separated
    qn_buf_t leases;            //  Lease id strings, comma separated
    size_t count;
};

queen_txn_t *
queen_txn_new (void)
{
    queen_txn_t *self = calloc (1, sizeof *self);
    qn_buf_init (&self->ops);
    qn_buf_init (&self->leases);
    return self;
}

void
queen_txn_destroy (queen_txn_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    qn_buf_free (&(*self_p)->ops);
    qn_buf_free (&(*self_p)->leases);
    free (*self_p);
    *self_p = NULL;
}

static void
s_txn_begin_op (queen_txn_t *self, qn_jw_t *w)
{
    if (self->ops.len)
        qn_buf_putc (&self->ops, ',');
    qn_jw_init (w, &self->ops);
    self->count++;
}

void
queen_txn_push (queen_txn_t *self, const queen_item_t *items, size_t n)
{
    qn_jw_t w;
    s_txn_begin_op (self, &w);
    qn_jw_obj (&w);
    qn_jw_kstr (&w, "type", "push");
    qn_jw_key (&w, "items");
    qn_jw_arr (&w);
    for (size_t i = 0; i < n; i++)
        s_write_item (&w, &items [i], NULL);
    qn_jw_arr_end (&w);
    qn_jw_obj_end (&w);
}

void
queen_txn_ack (queen_txn_t *self, const queen_ack_t *ack, const char *consumer_group)
{
    qn_jw_t w;
    s_txn_begin_op (self, &w);
    qn_jw_obj (&w);
    qn_jw_kstr (&w, "type", "ack");
    s_write_ack_fields (&w, ack);
    s_kstr_opt (&w, "consumerGroup", consumer_group);
    qn_jw_obj_end (&w);
}

void
queen_txn_require_lease (queen_txn_t *self, const char *lease_id)
{
    if (self->leases.len)
        qn_buf_putc (&self->leases, ',');
    qn_jw_t w;
    qn_jw_init (&w, &self->leases);
    qn_jw_str (&w, lease_id);
}

size_t
queen_txn_size (const queen_txn_t *self)
{
    return self->count;
}

queen_code_t
queen_txn_commit (queen_client_t *self, queen_txn_t *txn, queen_response_t *resp_out,
                  queen_error_t *err)
{
    if (!self || !txn || txn->count == 0)
        return queen__fail (err, QUEEN_ERR_ARG, "a client and a transaction with operations are required");
    qn_buf_t body = QN_BUF_INIT;
    qn_buf_puts (&body, "{\"operations\":[");
    qn_buf_append (&body, txn->ops.data, txn->ops.len);
    qn_buf_puts (&body, "]");
    if (txn->leases.len) {
        qn_buf_puts (&body, ",\"requiredLeases\":[");
        qn_buf_append (&body, txn->leases.data, txn->leases.len);
        qn_buf_puts (&body, "]");
    }
    qn_buf_puts (&body, "}");
    queen_response_t local = { 0 };
    queen_response_t *resp = resp_out ? resp_out : &local;
    queen_code_t code = s_post (self, "/api/v1/transaction", &body, 0, resp, err);
    if (code == QUEEN_OK)
        code = queen__decode_txn (resp->body, resp->len, resp->status, err);
    queen_response_free (&local);
    qn_buf_free (&body);
    return code;
}

//  ------------------------------------------------------ consumer loop
typedef struct {
    queen_client_t *client;
    const char *lease_id;
    long renew_ms;
    int seconds;
    bool done;
    long renewals;
    pthread_mutex_t lock;
    pthread_cond_t cond;
} s_renewer_t;

static void *
s_renew_thread (void *arg)
{
    s_renewer_t *r = arg;
    pthread_mutex_lock (&r->lock);
    while (!r->done) {
        struct timespec ts;
        clock_gettime (CLOCK_REALTIME, &ts);
        ts.tv_sec += r->renew_ms / 1000;
        ts.tv_nsec += (r->renew_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait (&r->cond, &r->lock, &ts);
        if (r->done)
            break;
        pthread_mutex_unlock (&r->lock);
        queen_error_t e = { 0 };
        bool ok = queen_lease_extend (r->client, r->lease_id, r->seconds, &e) == QUEEN_OK;
        queen_error_clear (&e);
        pthread_mutex_lock (&r->lock);
        if (ok)
            r->renewals++;
    }
    pthread_mutex_unlock (&r->lock);
    return NULL;
}

queen_code_t
queen_consume (queen_client_t *self, const queen_consume_opts_t *opts,
               queen_handler_fn handler, void *arg, queen_consume_stats_t *stats,
               queen_error_t *err)
{
    queen_consume_stats_t local = { 0 };
    if (!stats)
        stats = &local;
    memset (stats, 0, sizeof *stats);
    if (!self || !opts || !opts->queue || !handler)
        return queen__fail (err, QUEEN_ERR_ARG, "a client, a queue and a handler are required");
    queen_pop_opts_t pop = opts->pop;
    pop.wait = true;
    pop.auto_ack = false;
    if (pop.timeout_ms <= 0)
        pop.timeout_ms = 1000;
    queen_code_t code = QUEEN_OK;
    while (!(opts->stop && *opts->stop)
           && !(opts->max_batches > 0 && stats->batches >= opts->max_batches)) {
        queen_batch_t batch;
        code = queen_pop (self, opts->queue, &pop, &batch, err);
        if (code != QUEEN_OK)
            break;
        if (batch.count == 0) {
            queen_batch_free (&batch);
            continue;
        }
        s_renewer_t r = { .client = self, .lease_id = batch.lease_id,
                          .renew_ms = opts->renew_ms, .seconds = opts->renew_seconds };
        pthread_t thread;
        bool renewing = opts->renew_ms > 0 && batch.lease_id && *batch.lease_id;
        if (renewing) {
            pthread_mutex_init (&r.lock, NULL);
            pthread_cond_init (&r.cond, NULL);
            if (pthread_create (&thread, NULL, s_renew_thread, &r) != 0)
                renewing = false;
        }
        int rc = handler (self, &batch, arg);
        if (renewing) {
            pthread_mutex_lock (&r.lock);
            r.done = true;
            pthread_cond_signal (&r.cond);
            pthread_mutex_unlock (&r.lock);
            pthread_join (thread, NULL);
            pthread_mutex_destroy (&r.lock);
            pthread_cond_destroy (&r.cond);
            stats->renewals += r.renewals;
        }
        stats->batches++;
        stats->messages += (long) batch.count;
        if (rc != 0)
            stats->failed++;
        code = queen_ack_all (self, &batch, rc == 0 ? "completed" : "failed", err);
        queen_batch_free (&batch);
        if (code != QUEEN_OK)
            break;
    }
    return code;
}

//  ---------------------------------------------------------------- kv
static char *
s_kv_path (const char *bucket, const char *key)
{
    char *b = queen_escape (bucket);
    char *k = key ? queen_escape (key) : NULL;
    qn_buf_t path = QN_BUF_INIT;
    qn_buf_printf (&path, "/api/v1/kv/%s", b);
    if (k)
        qn_buf_printf (&path, "/%s", k);
    free (b);
    free (k);
    return qn_buf_detach (&path, NULL);
}

void
queen_kv_entry_free (queen_kv_entry_t *entry)
{
    if (!entry)
        return;
    free (entry->value);
    free (entry->expires_at);
    free (entry->updated_at);
    memset (entry, 0, sizeof *entry);
}

queen_code_t
queen_kv_get (queen_client_t *self, const char *bucket, const char *key,
              queen_kv_entry_t *out, queen_error_t *err)
{
    if (out)
        memset (out, 0, sizeof *out);
    if (!self || !bucket || !key || !out)
        return queen__fail (err, QUEEN_ERR_ARG, "a client, a bucket, a key and an entry are required");
    char *path = s_kv_path (bucket, key);
    queen_response_t resp = { 0 };
    queen_code_t code = queen__call (self, "GET", path, NULL, 0, 0, &resp, err);
    free (path);
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    if (code == QUEEN_OK)
        code = queen__parse (&doc, resp.body, resp.len, resp.status, QN_JSON_OBJECT, "kv get", err);
    if (code == QUEEN_OK) {
        out->value = queen__raw (&doc, qn_json_get (&doc, 0, "value"), NULL);
        qn_json_int (&doc, qn_json_get (&doc, 0, "version"), &out->version);
        out->expires_at = queen__str (&doc, qn_json_get (&doc, 0, "expiresAt"));
        out->updated_at = queen__str (&doc, qn_json_get (&doc, 0, "updatedAt"));
        if (!out->value)
            code = queen__fail (err, QUEEN_ERR_PROTOCOL, "kv get: no value");
    }
    qn_json_doc_free (&doc);
    queen_response_free (&resp);
    return code;
}

queen_code_t
queen_kv_set (queen_client_t *self, const char *bucket, const char *key,
              const char *value, int64_t ttl_s, int64_t if_version,
              int64_t *version_out, queen_error_t *err)
{
    if (!self || !bucket || !key || !value)
        return queen__fail (err, QUEEN_ERR_ARG, "a client, a bucket, a key and a value are required");
    char *base = s_kv_path (bucket, key);
    qn_buf_t path = QN_BUF_INIT;
    qn_buf_puts (&path, base);
    free (base);
    char sep = '?';
    if (ttl_s > 0) {
        qn_buf_printf (&path, "%cttl=%lld", sep, (long long) ttl_s);
        sep = '&';
    }
    if (if_version >= 0)
        qn_buf_printf (&path, "%cifVersion=%lld", sep, (long long) if_version);
    queen_response_t resp = { 0 };
    queen_code_t code = queen__call (self, "PUT", path.data, value, strlen (value), 0, &resp, err);
    qn_buf_free (&path);
    if (code == QUEEN_OK && version_out) {
        qn_json_doc_t doc;
        qn_json_doc_init (&doc);
        code = queen__parse (&doc, resp.body, resp.len, resp.status, QN_JSON_OBJECT, "kv set", err);
        if (code == QUEEN_OK && qn_json_int (&doc, qn_json_get (&doc, 0, "version"), version_out))
            code = queen__fail (err, QUEEN_ERR_PROTOCOL, "kv set: no version");
        qn_json_doc_free (&doc);
    }
    queen_response_free (&resp);
    return code;
}

queen_code_t
queen_kv_del (queen_client_t *self, const char *bucket, const char *key,
              int64_t if_version, queen_error_t *err)
{
    if (!self || !bucket || !key)
        return queen__fail (err, QUEEN_ERR_ARG, "a client, a bucket and a key are required");
    char *base = s_kv_path (bucket, key);
    qn_buf_t path = QN_BUF_INIT;
    qn_buf_puts (&path, base);
    free (base);
    if (if_version >= 0)
        qn_buf_printf (&path, "?ifVersion=%lld", (long long) if_version);
    queen_code_t code = queen__call (self, "DELETE", path.data, NULL, 0, 0, NULL, err);
    qn_buf_free (&path);
    return code;
}

queen_code_t
queen_kv_list (queen_client_t *self, const char *bucket, const char *prefix,
               const char *after, int limit, queen_response_t *resp, queen_error_t *err)
{
    if (!self || !bucket || !resp)
        return queen__fail (err, QUEEN_ERR_ARG, "a client, a bucket and a response are required");
    char *base = s_kv_path (bucket, NULL);
    qn_buf_t path = QN_BUF_INIT;
    qn_buf_puts (&path, base);
    free (base);
    char sep = '?';
    const char *names [] = { "prefix", "after" };
    const char *vals [] = { prefix, after };
    for (int i = 0; i < 2; i++)
        if (vals [i]) {
            char *v = queen_escape (vals [i]);
            qn_buf_printf (&path, "%c%s=%s", sep, names [i], v);
            free (v);
            sep = '&';
        }
    if (limit > 0)
        qn_buf_printf (&path, "%climit=%d", sep, limit);
    queen_code_t code = queen__call (self, "GET", path.data, NULL, 0, 0, resp, err);
    qn_buf_free (&path);
    return code;
}

//  ---------------------------------------------------------------- timers
queen_code_t
queen_timer_schedule (queen_client_t *self, const queen_timer_t *timer,
                      char *timer_id_out, bool *created_out, queen_error_t *err)
{
    if (!self || !timer || !timer->queue || !timer->payload)
        return queen__fail (err, QUEEN_ERR_ARG, "a client, a queue and a payload are required");
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    if (qn_json_parse (&doc, timer->payload, strlen (timer->payload), 0) != 0) {
        qn_json_doc_free (&doc);
        return queen__fail (err, QUEEN_ERR_ARG, "payload is not JSON");
    }
    qn_buf_t body = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &body);
    qn_jw_obj (&w);
    s_kstr_opt (&w, "timerId", timer->timer_id);
    qn_jw_kstr (&w, "queue", timer->queue);
    s_kstr_opt (&w, "partition", timer->partition);
    qn_jw_kraw (&w, "payload", timer->payload, strlen (timer->payload));
    s_kstr_opt (&w, "transactionId", timer->transaction_id);
    if (timer->fire_at)
        qn_jw_kstr (&w, "fireAt", timer->fire_at);
    else
        qn_jw_kint (&w, "delayMs", timer->delay_ms);
    qn_jw_obj_end (&w);
    queen_response_t resp = { 0 };
    queen_code_t code = s_post (self, "/api/v1/timers", &body, 0, &resp, err);
    if (code == QUEEN_OK)
        code = queen__parse (&doc, resp.body, resp.len, resp.status, QN_JSON_OBJECT, "timer", err);
    if (code == QUEEN_OK) {
        char *id = queen__str (&doc, qn_json_get (&doc, 0, "timerId"));
        if (timer_id_out)
            snprintf (timer_id_out, 256, "%s", id ? id : "");
        free (id);
        bool created = false;
        qn_json_bool (&doc, qn_json_get (&doc, 0, "created"), &created);
        if (created_out)
            *created_out = created;
    }
    qn_json_doc_free (&doc);
    queen_response_free (&resp);
    qn_buf_free (&body);
    return code;
}

static char *
s_timer_path (const char *timer_id)
{
    char *t = queen_escape (timer_id);
    qn_buf_t path = QN_BUF_INIT;
    qn_buf_printf (&path, "/api/v1/timers/%s", t);
    free (t);
    return qn_buf_detach (&path, NULL);
}

queen_code_t
queen_timer_cancel (queen_client_t *self, const char *timer_id, queen_error_t *err)
{
    if (!self || !timer_id || !*timer_id)
        return queen__fail (err, QUEEN_ERR_ARG, "a client and a timer id are required");
    char *path = s_timer_path (timer_id);
    queen_code_t code = queen__call (self, "DELETE", path, NULL, 0, 0, NULL, err);
    free (path);
    return code;
}

queen_code_t
queen_timer_get (queen_client_t *self, const char *timer_id, queen_response_t *resp,
                 queen_error_t *err)
{
    if (!self || !timer_id || !*timer_id || !resp)
        return queen__fail (err, QUEEN_ERR_ARG, "a client, a timer id and a response are required");
    char *path = s_timer_path (timer_id);
    queen_code_t code = queen__call (self, "GET", path, NULL, 0, 0, resp, err);
    free (path);
    return code;
}

queen_code_t
queen_timer_list (queen_client_t *self, const char *queue, const char *after, int limit,
                  queen_response_t *resp, queen_error_t *err)
{
    if (!self || !resp)
        return queen__fail (err, QUEEN_ERR_ARG, "a client and a response are required");
    qn_buf_t path = QN_BUF_INIT;
    qn_buf_puts (&path, "/api/v1/timers");
    char sep = '?';
    const char *names [] = { "queue", "after" };
    const char *vals [] = { queue, after };
    for (int i = 0; i < 2; i++)
        if (vals [i]) {
            char *v = queen_escape (vals [i]);
            qn_buf_printf (&path, "%c%s=%s", sep, names [i], v);
            free (v);
            sep = '&';
        }
    if (limit > 0)
        qn_buf_printf (&path, "%climit=%d", sep, limit);
    queen_code_t code = queen__call (self, "GET", path.data, NULL, 0, 0, resp, err);
    qn_buf_free (&path);
    return code;
}
