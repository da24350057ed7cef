/*  cmd/queen-verify/pipeline.c - workers and event loop
    Stage 0 (producers) pushes per-partition sequence numbers into s0 with
    deterministic transaction ids. Stage c (1 <= c < S, "movers") pops a
    batch from s{c-1} and, in ONE POST /api/v1/transaction, acks it (with
    the pop's lease id, so a holder whose lease ran out cannot commit) and
    pushes the transformed messages to s{c}. Stage S (the checker) pops
    s{S-1} and acks with POST /api/v1/ack/batch. Every consumer stage
    records each delivery in the ledger: per (stage, partition, n) the id
    of the stored message and whether its ack was confirmed.
    One thread: every worker owns one keep-alive connection and has at
    most one request in flight: a libqueen slot, all driven by queen_poll.
    Failure   transport errors, 5xx, 408 and 429 are retried with backoff
              (same body: pushes and transactions are idempotent by their
              transaction ids); any other 4xx stops the run (fatal); the
              loop ends when the checker has seen everything produced, at
              the drain timeout, or on a signal
*/
#include "cmd/queen-verify/pipeline.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define S_REQ_TIMEOUT_MS    60000   //  Push, transaction, ack
#define S_BACKOFF_MIN_MS    50
#define S_BACKOFF_MAX_MS    2000
#define S_STALL_MS          60000   //  No 2xx for this long: give up
#define S_MAX_N             (1LL << 31)

static void
s_fatal (vf_run_t *self, const char *what, const vf_http_t *h)
{
    if (self->fatal)
        return;
    char why [400];
    vf_http_describe (h, why, sizeof why);
    self->fatal = vf_printf ("%s: %s", what, why);
}

//  Transaction ids: stage 0 "v-<prefix>-p<p>-n<n>", stage c
//  "v-<prefix>-s<c>-p<p>-n<n>".
static void
s_txn_id (const vf_run_t *self, int stage, int32_t p, int64_t n, char *out, size_t len)
{
    if (stage == 0)
        snprintf (out, len, "v-%s-p%d-n%lld", self->opts->prefix, p, (long long) n);
    else
        snprintf (out, len, "v-%s-s%d-p%d-n%lld", self->opts->prefix, stage, p, (long long) n);
}

//  Appends one push item for (stage, p, n) with a padded payload.
static void
s_push_item (vf_run_t *self, qn_jw_t *w, int stage, int32_t p, int64_t n)
{
    char txn [300], name [16], head [96];
    s_txn_id (self, stage, p, n, txn, sizeof txn);
    snprintf (name, sizeof name, "p%d", p);
    int hl = snprintf (head, sizeof head, "{\"p\":%d,\"n\":%lld,\"s\":%d,\"pad\":\"",
                       p, (long long) n, stage);
    int pad = self->opts->payload_bytes - hl - 2;
    if (pad < 0)
        pad = 0;
    qn_jw_obj (w);
    qn_jw_kstr (w, "queue", self->queue [stage]);
    qn_jw_kstr (w, "partition", name);
    qn_jw_kstr (w, "transactionId", txn);
    qn_jw_key (w, "payload");
    //  The payload's head goes through the writer (comma bookkeeping),
    //  its padding and closing bytes straight into the buffer
    qn_jw_raw (w, head, (size_t) hl);
    qn_buf_append (w->out, self->pad, (size_t) pad);
    qn_buf_append (w->out, "\"}", 2);
    qn_jw_obj_end (w);
}

//  ----------------------------------------------------------------- workers

static void
s_items_clear (vf_worker_t *w)
{
    for (int i = 0; i < w->count; i++)
        free (w->items [i].txn);
    w->count = 0;
}

//  Starts a new operation: a retry keeps the op, a new op forgets whether
//  an earlier attempt may have been applied.
static void
s_begin (vf_worker_t *w, int op)
{
    w->op = op;
    w->pending = true;
    w->attempts = 0;
    w->backoff_ms = 0;
    w->http.maybe_sent = false;
}

static void
s_idle (vf_worker_t *w)
{
    w->op = OP_NONE;
    w->pending = false;
}

//  Builds the next push request of a producer into its body. Returns the
//  number of items, 0 when waiting for rate tokens, -1 when nothing is
//  left to push.
static int
s_produce_next (vf_worker_t *w)
{
    vf_run_t *run = w->run;
    int limit = run->opts->batch;
    if (!run->producing)
        return -1;
    if (run->opts->rate > 0) {
        if (run->tokens < 1)
            return 0;
        if (limit > (int) run->tokens)
            limit = (int) run->tokens;
    }
    w->req_count = 0;
    for (bool added = true; added && w->req_count < limit; ) {
        added = false;
        for (int i = 0; i < w->nparts && w->req_count < limit; i++) {
            int32_t p = w->parts [w->cursor];
            w->cursor = (w->cursor + 1) % w->nparts;
            if (run->quota [p] >= 0 && run->next_n [p] >= run->quota [p])
                continue;
            w->req_p [w->req_count] = p;
            w->req_n [w->req_count] = run->next_n [p]++;
            w->req_count++;
            added = true;
        }
    }
    if (w->req_count == 0)
        return -1;
    if (run->opts->rate > 0)
        run->tokens -= w->req_count;
    qn_buf_t *b = &w->http.body;
    qn_buf_reset (b);
    qn_jw_t jw;
    qn_jw_init (&jw, b);
    qn_jw_obj (&jw);
    qn_jw_key (&jw, "items");
    qn_jw_arr (&jw);
    for (int i = 0; i < w->req_count; i++)
        s_push_item (run, &jw, 0, w->req_p [i], w->req_n [i]);
    qn_jw_arr_end (&jw);
    qn_jw_obj_end (&jw);
    return w->req_count;
}

static void
s_on_push (vf_worker_t *w, int64_t now)
{
    vf_run_t *run = w->run;
    vf_stage_stats_t *st = &run->st [0];
    qn_json_doc_t *doc = &run->doc;
    if (qn_json_parse (doc, w->http.resp.data, w->http.resp.len, 0) < 0
    ||  qn_json_type (doc, 0) != QN_JSON_ARRAY || qn_json_size (doc, 0) != w->req_count) {
        s_fatal (run, "push answered with something other than one result per item", &w->http);
        return;
    }
    //  A push is one database transaction, so a result says "failed" only
    //  when nothing was stored: send the same items again.
    for (int i = 0; i < w->req_count; i++) {
        int status = qn_json_get (doc, qn_json_child (doc, 0, (uint32_t) i), "status");
        if (!qn_json_str_eq (doc, status, "queued") && !qn_json_str_eq (doc, status, "duplicate")
        &&  !qn_json_str_eq (doc, status, "buffered")) {
            w->pending = true;
            w->wake_ms = now + S_BACKOFF_MIN_MS;
            return;
        }
    }
    for (int i = 0; i < w->req_count; i++) {
        int status = qn_json_get (doc, qn_json_child (doc, 0, (uint32_t) i), "status");
        if (qn_json_str_eq (doc, status, "duplicate")) {
            if (w->attempts > 1)
                st->dedup_items++;
            else {
                //  First attempt: the queue held this id before the run
                st->duplicates++;
                vf_log (run, L_DUP, "push of p%d n=%lld answered duplicate on its first attempt "
                       "(queue prefix used before?)", w->req_p [i], (long long) w->req_n [i]);
            }
        }
        else
        if (qn_json_str_eq (doc, status, "buffered"))
            st->buffered++;
        int32_t p = w->req_p [i];
        if (run->produced [p] < w->req_n [i] + 1)
            run->produced [p] = w->req_n [i] + 1;
        run->produced_total++;
        st->messages++;
    }
    if (!st->first_ms)
        st->first_ms = now;
    st->last_ms = now;
    s_idle (w);
}

//  Reads one popped message into an item and checks it against what
//  stage - 1 produced.
static void
s_read_item (vf_run_t *run, int stage, int m, int top_lease, vf_item_t *it)
{
    qn_json_doc_t *doc = &run->doc;
    qn_buf_t tmp = QN_BUF_INIT;
    memset (it, 0, sizeof *it);
    it->p = -1;
    it->n = -1;
    int id = qn_json_get (doc, m, "id");
    int txn = qn_json_get (doc, m, "transactionId");
    int pid = qn_json_get (doc, m, "partitionId");
    int part = qn_json_get (doc, m, "partition");
    int lease = qn_json_get (doc, m, "leaseId");
    int data = qn_json_get (doc, m, "data");
    if (lease < 0)
        lease = top_lease;
    //  The message id is our ack key of last resort and its identity
    if (qn_json_str (doc, id, &tmp) == 0) {
        if (qn_id_parse (QN_ID_MESSAGE, tmp.data, tmp.len, &it->seq) < 0) {
            uint64_t h = 1469598103934665603ULL;
            for (size_t i = 0; i < tmp.len; i++)
                h = (h ^ (uint8_t) tmp.data [i]) * 1099511628211ULL;
            it->seq = (int64_t) (h >> 1) | 1;
        }
    }
    qn_buf_reset (&tmp);
    if (qn_json_str (doc, txn, &tmp) == 0 && tmp.len)
        it->txn = qn_strndup (tmp.data, tmp.len);
    else {
        qn_buf_reset (&tmp);
        qn_json_str (doc, id, &tmp);
        it->txn = qn_strdup (tmp.data ? tmp.data : "");
    }
    qn_buf_reset (&tmp);
    if (qn_json_str (doc, pid, &tmp) == 0)
        snprintf (it->pid, sizeof it->pid, "%s", tmp.data);
    qn_buf_reset (&tmp);
    if (qn_json_str (doc, lease, &tmp) == 0)
        snprintf (it->lease, sizeof it->lease, "%s", tmp.data);
    qn_buf_reset (&tmp);
    //  Partition "p<index>", payload {"p":index,"n":n,"s":stage-1,...},
    //  transactionId as stage - 1 wrote it
    int64_t dp = -1, dn = -1, ds = -1;
    qn_json_int (doc, qn_json_get (doc, data, "p"), &dp);
    qn_json_int (doc, qn_json_get (doc, data, "n"), &dn);
    qn_json_int (doc, qn_json_get (doc, data, "s"), &ds);
    if (qn_json_str (doc, part, &tmp) == 0 && tmp.len > 1 && tmp.data [0] == 'p') {
        char *end;
        long v = strtol (tmp.data + 1, &end, 10);
        if (*end == 0 && v >= 0 && v < run->K)
            it->p = (int32_t) v;
    }
    if (it->p >= 0 && dn >= 0 && dn < S_MAX_N)
        it->n = dn;
    char want [300];
    if (it->n >= 0)
        s_txn_id (run, stage - 1, it->p, it->n, want, sizeof want);
    it->valid = it->n >= 0 && dp == it->p && ds == stage - 1 && !strcmp (want, it->txn)
             && it->pid [0];
    if (!it->valid) {
        run->st [stage].corrupt++;
        vf_log (run, L_CORRUPT, "unexpected message at stage %d: partition %s, transactionId %s, "
               "payload p=%lld n=%lld s=%lld", stage, tmp.data ? tmp.data : "?", it->txn,
               (long long) dp, (long long) dn, (long long) ds);
    }
    qn_buf_free (&tmp);
}

static void
s_ack_op (qn_jw_t *jw, const vf_item_t *it, bool txn_op)
{
    qn_jw_obj (jw);
    if (txn_op)
        qn_jw_kstr (jw, "type", "ack");
    qn_jw_kstr (jw, "transactionId", it->txn);
    qn_jw_kstr (jw, "partitionId", it->pid);
    if (it->lease [0])
        qn_jw_kstr (jw, "leaseId", it->lease);
    qn_jw_kstr (jw, "status", "completed");
    qn_jw_obj_end (jw);
}

//  Transaction body for items [from, to): their acks, then one push of
//  the valid ones into the stage's output queue.
static void
s_build_txn (vf_worker_t *w, int from, int to)
{
    qn_buf_t *b = &w->http.body;
    qn_buf_reset (b);
    qn_jw_t jw;
    qn_jw_init (&jw, b);
    qn_jw_obj (&jw);
    qn_jw_key (&jw, "operations");
    qn_jw_arr (&jw);
    int valid = 0;
    for (int i = from; i < to; i++) {
        s_ack_op (&jw, &w->items [i], true);
        valid += w->items [i].valid;
    }
    if (valid) {
        qn_jw_obj (&jw);
        qn_jw_kstr (&jw, "type", "push");
        qn_jw_key (&jw, "items");
        qn_jw_arr (&jw);
        for (int i = from; i < to; i++)
            if (w->items [i].valid)
                s_push_item (w->run, &jw, w->stage, w->items [i].p, w->items [i].n);
        qn_jw_arr_end (&jw);
        qn_jw_obj_end (&jw);
    }
    qn_jw_arr_end (&jw);
    qn_jw_obj_end (&jw);
}

static void
s_build_acks (vf_worker_t *w, int from, int to)
{
    qn_buf_t *b = &w->http.body;
    qn_buf_reset (b);
    qn_jw_t jw;
    qn_jw_init (&jw, b);
    qn_jw_obj (&jw);
    qn_jw_key (&jw, "acknowledgments");
    qn_jw_arr (&jw);
    for (int i = from; i < to; i++)
        s_ack_op (&jw, &w->items [i], false);
    qn_jw_arr_end (&jw);
    qn_jw_obj_end (&jw);
}

static void
s_on_pop (vf_worker_t *w, int64_t now)
{
    vf_run_t *run = w->run;
    vf_stage_stats_t *st = &run->st [w->stage];
    qn_json_doc_t *doc = &run->doc;
    st->pops++;
    s_idle (w);
    if (w->http.status == 204 || w->http.resp.len == 0) {
        st->empty_pops++;
        return;
    }
    int msgs;
    if (qn_json_parse (doc, w->http.resp.data, w->http.resp.len, 0) < 0
    ||  (msgs = qn_json_get (doc, 0, "messages")) < 0 || qn_json_type (doc, msgs) != QN_JSON_ARRAY) {
        s_fatal (run, "pop answered without a messages array", &w->http);
        return;
    }
    int n = (int) qn_json_size (doc, msgs);
    if (n == 0) {
        st->empty_pops++;
        return;
    }
    if (n > w->cap) {
        w->items = qn_realloc (w->items, (size_t) n * sizeof *w->items);
        w->cap = n;
    }
    int top_lease = qn_json_get (doc, 0, "leaseId");
    s_items_clear (w);
    for (int i = 0; i < n; i++) {
        s_read_item (run, w->stage, qn_json_child (doc, msgs, (uint32_t) i), top_lease,
                     &w->items [i]);
        w->count++;
        vf_ledger_deliver (run, w->stage, &w->items [i], now);
    }
    if (w->kind == W_CHECKER) {
        s_build_acks (w, 0, w->count);
        s_begin (w, OP_ACK);
    }
    else {
        s_build_txn (w, 0, w->count);
        s_begin (w, OP_TXN);
    }
}

//  Outcome of a transaction answer (200 in both outcomes).
static int
s_txn_result (vf_worker_t *w, char *why, size_t len)
{
    qn_json_doc_t *doc = &w->run->doc;
    bool ok = false;
    why [0] = 0;
    if (qn_json_parse (doc, w->http.resp.data, w->http.resp.len, 0) < 0
    ||  qn_json_bool (doc, qn_json_get (doc, 0, "success"), &ok) < 0) {
        snprintf (why, len, "unreadable answer: %.200s", w->http.resp.data ? w->http.resp.data : "");
        return TX_ERROR;
    }
    if (ok)
        return TX_OK;
    qn_buf_t e = QN_BUF_INIT;
    qn_json_str (doc, qn_json_get (doc, 0, "error"), &e);
    snprintf (why, len, "%s", e.data ? e.data : "(no error text)");
    qn_buf_free (&e);
    if (strcasestr (why, "duplicate"))
        return TX_DUP;
    if (strcasestr (why, "lease"))
        return TX_LEASE;
    return TX_ERROR;
}

//  A refusal that ends the batch: the messages come back after the lease
//  ends, which the ledger then counts as redeliveries.
static void
s_refused (vf_worker_t *w, int kind, const char *why, int64_t now)
{
    vf_stage_stats_t *st = &w->run->st [w->stage];
    if (kind == TX_LEASE) {
        st->lease_lost++;
        if (w->http.maybe_sent)
            st->ambiguous++;
    }
    else {
        st->errors++;
        vf_log (w->run, L_ERROR, "stage %d: request refused: %s", w->stage, why);
        w->wake_ms = now + 100;
    }
    s_idle (w);
}

//  Fallback after a transaction was refused because an output existed:
//  each message alone, ack + push, or ack only when its output exists.
static void
s_fallback_next (vf_worker_t *w)
{
    while (w->one < w->count) {
        if (w->items [w->one].valid) {
            s_build_txn (w, w->one, w->one + 1);
            s_begin (w, OP_TXN1);
        }
        else {
            s_build_acks (w, w->one, w->one + 1);
            s_begin (w, OP_ACK1);
        }
        return;
    }
    s_idle (w);
}

static void
s_on_txn (vf_worker_t *w, int64_t now)
{
    vf_run_t *run = w->run;
    char why [300];
    int r = s_txn_result (w, why, sizeof why);
    if (r == TX_OK) {
        int from = w->op == OP_TXN ? 0 : w->one;
        int to = w->op == OP_TXN ? w->count : w->one + 1;
        for (int i = from; i < to; i++)
            vf_ledger_confirm (run, w->stage, &w->items [i]);
        if (w->op == OP_TXN)
            s_idle (w);
        else {
            w->one++;
            s_fallback_next (w);
        }
    }
    else
    if (r == TX_DUP && w->op == OP_TXN) {
        run->st [w->stage].dup_txn++;
        w->one = 0;
        s_fallback_next (w);
    }
    else
    if (r == TX_DUP) {
        //  This message's output exists, so a committed transaction acked
        //  it with the output: ack it alone, push nothing
        s_build_acks (w, w->one, w->one + 1);
        s_begin (w, OP_ACK1);
    }
    else
        s_refused (w, r, why, now);
}

static void
s_on_ack (vf_worker_t *w, int64_t now)
{
    vf_run_t *run = w->run;
    qn_json_doc_t *doc = &run->doc;
    int from = w->op == OP_ACK ? 0 : w->one;
    int to = w->op == OP_ACK ? w->count : w->one + 1;
    if (qn_json_parse (doc, w->http.resp.data, w->http.resp.len, 0) < 0
    ||  qn_json_type (doc, 0) != QN_JSON_ARRAY || qn_json_size (doc, 0) != to - from) {
        s_fatal (run, "ack/batch answered with something other than one result per item", &w->http);
        return;
    }
    bool all = true;
    for (int i = from; i < to; i++) {
        bool ok = false;
        int res = qn_json_child (doc, 0, (uint32_t) (i - from));
        qn_json_bool (doc, qn_json_get (doc, res, "success"), &ok);
        if (ok)
            vf_ledger_confirm (run, w->stage, &w->items [i]);
        all = all && ok;
    }
    if (w->op == OP_ACK) {
        if (!all)
            s_refused (w, TX_LEASE, "ack refused", now);
        s_idle (w);
    }
    else
    if (all) {
        if (w->items [w->one].valid)
            run->st [w->stage].dup_resolved++;
        w->one++;
        s_fallback_next (w);
    }
    else
        s_refused (w, TX_LEASE, "ack refused", now);
}

//  Sends the worker's next request, if it has one now.
static void
s_step (vf_worker_t *w)
{
    vf_run_t *run = w->run;
    if (!w->pending) {
        if (w->kind == W_PRODUCER) {
            int rc = s_produce_next (w);
            if (rc < 0) {
                w->done = true;
                return;
            }
            if (rc == 0)
                return;
            s_begin (w, OP_PUSH);
        }
        else
            s_begin (w, OP_POP);
    }
    const char *url = run->push_url;
    const char *method = "POST";
    long timeout = S_REQ_TIMEOUT_MS;
    if (w->op == OP_POP) {
        url = run->pop_url [w->stage];
        method = "GET";
        timeout = run->opts->pop_timeout_ms + 15000;
    }
    else
    if (w->op == OP_TXN || w->op == OP_TXN1)
        url = run->txn_url;
    else
    if (w->op == OP_ACK || w->op == OP_ACK1)
        url = run->ack_url;
    w->attempts++;
    if (w->attempts > 1)
        run->st [w->stage].retries++;
    w->pending = false;
    vf_http_prepare (&w->http, method, url, timeout);
    vf_http_start (&w->http);
}

//  A transfer finished: retry, stop the run, or hand the answer over.
static void
s_done (vf_worker_t *w, int64_t now)
{
    vf_run_t *run = w->run;
    vf_http_outcome_t out = vf_http_outcome (&w->http);
    if (out == VF_HTTP_RETRY) {
        //  Same op, same body, after a backoff
        w->pending = true;
        w->backoff_ms = w->backoff_ms ? w->backoff_ms * 2 : S_BACKOFF_MIN_MS;
        if (w->backoff_ms > S_BACKOFF_MAX_MS)
            w->backoff_ms = S_BACKOFF_MAX_MS;
        w->wake_ms = now + w->backoff_ms;
        return;
    }
    run->st [w->stage].requests++;
    if (out == VF_HTTP_FATAL) {
        static const char *names [] = { "", "push", "pop", "transaction", "transaction",
                                        "ack/batch", "ack/batch" };
        char what [64];
        snprintf (what, sizeof what, "stage %d %s refused", w->stage, names [w->op]);
        s_fatal (run, what, &w->http);
        return;
    }
    run->last_ok_ms = now;
    w->backoff_ms = 0;
    switch (w->op) {
        case OP_PUSH: s_on_push (w, now); break;
        case OP_POP:  s_on_pop (w, now); break;
        case OP_TXN:
        case OP_TXN1: s_on_txn (w, now); break;
        default:      s_on_ack (w, now); break;
    }
}

//  ------------------------------------------------------------------- run

static void
s_refill (vf_run_t *self, int64_t now)
{
    double rate = self->opts->rate;
    if (rate <= 0)
        return;
    self->tokens += rate * (double) (now - self->tokens_ms) / 1000.0;
    self->tokens_ms = now;
    double cap = rate > self->opts->batch ? rate : self->opts->batch;
    if (self->tokens > cap)
        self->tokens = cap;
}

static void
s_progress (vf_run_t *self, vf_broker_t *broker)
{
    vf_result_t res;
    char line [512];
    vf_run_result (self, &res);
    vf_progress (&res, broker, line, sizeof line);
    fprintf (stderr, "\r%-100s", line);
    fflush (stderr);
}

int
vf_run_loop (vf_run_t *self, vf_broker_t *broker, volatile int *stop)
{
    const vf_opts_t *o = self->opts;
    bool tty = !o->quiet && isatty (2);
    int64_t now = vf_now_ms ();
    self->t0_ms = self->last_ok_ms = self->tokens_ms = now;
    self->producing = true;
    int64_t next_progress = now + 1000;
    int64_t settle_ms = (int64_t) o->lease_s * 1000 + 2000;
    for (;;) {
        now = vf_now_ms ();
        if (*stop) {
            self->interrupted = true;
            break;
        }
        if (self->fatal)
            break;
        if (broker)
            vf_broker_tick (broker, now, o->chaos);
        s_refill (self, now);
        if (o->duration_s > 0 && now - self->t0_ms >= (int64_t) (o->duration_s * 1000))
            self->producing = false;
        bool producers_done = true;
        int64_t wake = now + 200;
        for (int i = 0; i < self->nw; i++) {
            vf_worker_t *w = &self->w [i];
            if (!w->done && !w->http.busy && w->wake_ms <= now)
                s_step (w);
            if (w->kind == W_PRODUCER && !w->done)
                producers_done = false;
            if (!w->done && !w->http.busy && w->wake_ms < wake)
                wake = w->wake_ms > now ? w->wake_ms : now + 10;
        }
        if (producers_done && !self->produce_end_ms) {
            self->produce_end_ms = now;
            self->producing = false;
        }
        if (self->produce_end_ms) {
            if (vf_ledger_all_checked (self, now, false)
            &&  (self->unconfirmed == 0 || now - self->last_check_ms >= settle_ms)) {
                self->drained = true;
                break;
            }
            //  A stall limit, not a wall clock: a backlog left by producers
            //  faster than the stages drains for as long as it moves.
            int64_t moved = self->last_check_ms > self->produce_end_ms
                          ? self->last_check_ms : self->produce_end_ms;
            if (now - moved >= (int64_t) (o->drain_timeout_s * 1000)) {
                self->timed_out = true;
                break;
            }
        }
        if (now - self->last_ok_ms > S_STALL_MS && !self->fatal)
            self->fatal = vf_printf ("no answer from the broker for %d s", S_STALL_MS / 1000);
        queen_slot_t *done [64];
        int n;
        do {
            n = queen_poll (self->client, done, 64);
            for (int i = 0; i < n; i++) {
                vf_worker_t *w = queen_slot_owner (done [i]);
                vf_http_finish (&w->http);
                s_done (w, vf_now_ms ());
            }
        } while (n == 64);
        if (tty && now >= next_progress) {
            s_progress (self, broker);
            next_progress = now + 1000;
        }
        int timeout = (int) (wake - vf_now_ms ());
        if (timeout > 0)
            queen_wait (self->client, timeout > 200 ? 200 : timeout);
    }
    self->end_ms = vf_now_ms ();
    if (tty) {
        s_progress (self, broker);
        fprintf (stderr, "\n");
    }
    //  Abandon what is in flight (long-polls, mostly)
    for (int i = 0; i < self->nw; i++)
        vf_http_cancel (&self->w [i].http);
    vf_ledger_final_scan (self);
    return self->fatal ? -1 : 0;
}

