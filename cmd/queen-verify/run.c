/*  cmd/queen-verify/run.c - a run's setup, teardown and results
    Creates the run (queue names, URLs, workers with their connections,
    per-partition quotas, the ledger), checks /health and configures the
    queues before the loop, deletes them after it (--cleanup), and hands
    the counters to the report.
    Owns      everything in vf_run_t
    Failure   setup retries transport errors and 5xx until its deadline,
              then prints the reason and fails
*/
#include "cmd/queen-verify/pipeline.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int64_t
vf_now_ms (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t
vf_rand (uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

char *
vf_printf (const char *fmt, ...)
{
    qn_buf_t b = QN_BUF_INIT;
    va_list ap;
    va_start (ap, fmt);
    qn_buf_vprintf (&b, fmt, ap);
    va_end (ap);
    return qn_buf_detach (&b, NULL);
}

//  Describes a violation on stderr, the first few of each kind only.
void
vf_log (vf_run_t *self, int kind, const char *fmt, ...)
{
    if (self->logged [kind]++ >= VF_LOG_MAX)
        return;
    va_list ap;
    va_start (ap, fmt);
    fprintf (stderr, "\nqueen-verify: ");
    vfprintf (stderr, fmt, ap);
    fprintf (stderr, "\n");
    va_end (ap);
}

vf_run_t *
vf_run_new (const vf_opts_t *opts, const char *url)
{
    vf_run_t *self = qn_zalloc (sizeof *self);
    self->opts = opts;
    self->S = opts->stages;
    self->K = opts->partitions;
    self->url = qn_strdup (url);
    size_t ul = strlen (self->url);
    while (ul > 0 && self->url [ul - 1] == '/')
        self->url [--ul] = 0;
    //  Paths relative to the client's URL
    self->push_url = vf_printf ("/api/v1/push");
    self->txn_url = vf_printf ("/api/v1/transaction");
    self->ack_url = vf_printf ("/api/v1/ack/batch");
    self->queue = qn_zalloc ((size_t) self->S * sizeof *self->queue);
    self->pop_url = qn_zalloc ((size_t) (self->S + 1) * sizeof *self->pop_url);
    for (int s = 0; s < self->S; s++) {
        self->queue [s] = vf_printf ("%s-s%d", opts->prefix, s);
        self->pop_url [s + 1] = vf_printf ("/api/v1/pop/queue/%s?batch=%d&wait=true&timeout=%d"
                                          "&partitions=%d", self->queue [s], opts->batch,
                                          opts->pop_timeout_ms, opts->pop_partitions);
    }
    int K = self->K;
    self->quota = qn_zalloc ((size_t) K * sizeof *self->quota);
    self->next_n = qn_zalloc ((size_t) K * sizeof *self->next_n);
    self->produced = qn_zalloc ((size_t) K * sizeof *self->produced);
    for (int p = 0; p < K; p++)
        self->quota [p] = opts->messages > 0 ? opts->messages / K + (p < opts->messages % K) : -1;
    self->track = qn_zalloc ((size_t) self->S * (size_t) K * sizeof *self->track);
    int64_t per = opts->messages > 0 ? opts->messages / K + 1 : 16;
    for (size_t i = 0; i < (size_t) self->S * (size_t) K; i++) {
        self->track [i].max_n = -1;
        vf_track_grow (&self->track [i], per - 1);
    }
    self->st = qn_zalloc ((size_t) (self->S + 1) * sizeof *self->st);
    self->pad = qn_malloc ((size_t) opts->payload_bytes + 1);
    memset (self->pad, 'x', (size_t) opts->payload_bytes);
    self->pad [opts->payload_bytes] = 0;
    qn_json_doc_init (&self->doc);
    queen_error_t err = { 0 };
    //  No retries inside libqueen: the pipeline retries itself and counts it
    self->client = queen_new (&(queen_options_t) { .url = self->url, .token = opts->token,
                                                   .pool_size = 1, .retries = -1,
                                                   .timeout_ms = 30000 }, &err);
    if (!self->client) {
        fprintf (stderr, "queen-verify: %s\n", err.message);
        exit (2);
    }
    queen_error_clear (&err);
    //  Workers: producers, then consumers of stages 1..S
    self->nw = opts->producers + self->S * opts->consumers;
    self->w = qn_zalloc ((size_t) self->nw * sizeof *self->w);
    for (int i = 0; i < self->nw; i++) {
        vf_worker_t *w = &self->w [i];
        w->run = self;
        vf_http_init (&w->http, self->client, w);
        if (i < opts->producers) {
            w->kind = W_PRODUCER;
            w->parts = qn_malloc ((size_t) (K / opts->producers + 1) * sizeof *w->parts);
            for (int p = i; p < K; p += opts->producers)
                w->parts [w->nparts++] = p;
            w->req_p = qn_malloc ((size_t) opts->batch * sizeof *w->req_p);
            w->req_n = qn_malloc ((size_t) opts->batch * sizeof *w->req_n);
            w->done = w->nparts == 0;
        }
        else {
            w->stage = 1 + (i - opts->producers) / opts->consumers;
            w->kind = w->stage == self->S ? W_CHECKER : W_MOVER;
        }
    }
    return self;
}

void
vf_run_destroy (vf_run_t **self_p)
{
    vf_run_t *self = *self_p;
    if (!self)
        return;
    for (int i = 0; i < self->nw; i++) {
        vf_worker_t *w = &self->w [i];
        vf_http_cancel (&w->http);
        vf_http_free (&w->http);
        for (int j = 0; j < w->count; j++)
            free (w->items [j].txn);
        free (w->items);
        free (w->parts);
        free (w->req_p);
        free (w->req_n);
    }
    free (self->w);
    for (int s = 0; s < self->S; s++) {
        free (self->queue [s]);
        free (self->pop_url [s + 1]);
    }
    free (self->queue);
    free (self->pop_url);
    for (size_t i = 0; i < (size_t) self->S * (size_t) self->K; i++) {
        free (self->track [i].seq);
        free (self->track [i].state);
    }
    free (self->track);
    free (self->quota);
    free (self->next_n);
    free (self->produced);
    free (self->st);
    free (self->pad);
    free (self->fatal);
    free (self->url);
    free (self->push_url);
    free (self->txn_url);
    free (self->ack_url);
    queen_destroy (&self->client);
    qn_json_doc_free (&self->doc);
    free (self);
    *self_p = NULL;
}

//  Synchronous request with retries until the deadline; 0 on a 2xx.
static int
s_sync (vf_run_t *self, vf_http_t *h, const char *method, const char *url, int64_t deadline)
{
    for (int64_t delay = 100; ; delay = delay < 1000 ? delay * 2 : 1000) {
        vf_http_prepare (h, method, url, 30000);
        vf_http_perform (h, self->client);
        vf_http_outcome_t out = vf_http_outcome (h);
        if (out == VF_HTTP_OK)
            return 0;
        if (out == VF_HTTP_FATAL || vf_now_ms () + delay > deadline)
            return -1;
        usleep ((useconds_t) delay * 1000);
    }
}

int
vf_run_setup (vf_run_t *self, int64_t wait_ms)
{
    vf_http_t h;
    vf_http_init (&h, self->client, NULL);
    int64_t deadline = vf_now_ms () + wait_ms;
    char why [400];
    char *url = vf_printf ("/health");
    int rc = s_sync (self, &h, "GET", url, deadline);
    free (url);
    if (rc < 0) {
        vf_http_describe (&h, why, sizeof why);
        fprintf (stderr, "queen-verify: broker at %s not healthy: %s\n", self->url, why);
        vf_http_free (&h);
        return -1;
    }
    url = vf_printf ("/api/v1/configure");
    for (int s = 0; s < self->S && rc == 0; s++) {
        qn_buf_reset (&h.body);
        qn_buf_printf (&h.body, "{\"queue\":\"%s\",\"options\":{\"leaseTime\":%d,"
                       "\"retryLimit\":3,\"retryDelay\":0}}", self->queue [s], self->opts->lease_s);
        rc = s_sync (self, &h, "POST", url, vf_now_ms () + wait_ms);
        if (rc < 0) {
            vf_http_describe (&h, why, sizeof why);
            fprintf (stderr, "queen-verify: configure %s failed: %s\n", self->queue [s], why);
        }
    }
    free (url);
    vf_http_free (&h);
    return rc;
}

void
vf_run_cleanup (vf_run_t *self)
{
    vf_http_t h;
    vf_http_init (&h, self->client, NULL);
    for (int s = 0; s < self->S; s++) {
        char *url = vf_printf ("/api/v1/resources/queues/%s", self->queue [s]);
        if (s_sync (self, &h, "DELETE", url, vf_now_ms () + 60000) < 0) {
            char why [400];
            vf_http_describe (&h, why, sizeof why);
            fprintf (stderr, "queen-verify: could not delete %s: %s\n", self->queue [s], why);
        }
        free (url);
    }
    vf_http_free (&h);
}

void
vf_run_result (vf_run_t *self, vf_result_t *out)
{
    memset (out, 0, sizeof *out);
    out->stages = self->S;
    out->st = self->st;
    out->queue = self->queue;
    out->produced = self->produced_total;
    out->checked = self->checked;
    out->unconfirmed = self->unconfirmed;
    out->t0_ms = self->t0_ms;
    out->produce_end_ms = self->produce_end_ms;
    out->end_ms = self->end_ms ? self->end_ms : vf_now_ms ();
    out->last_check_ms = self->last_check_ms;
    out->drained = self->drained;
    out->timed_out = self->timed_out;
    out->interrupted = self->interrupted;
    out->fatal = self->fatal;
}
