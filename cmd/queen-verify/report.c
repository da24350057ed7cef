/*  cmd/queen-verify/report.c - per-stage table, explanations, summary line
    Pure formatting of a vf_result_t; the exit code rule lives here so the
    summary line and the exit code cannot disagree.
*/
#include "cmd/queen-verify/verify.h"

#include <string.h>

typedef struct {
    int64_t duplicates, order, corrupt, redelivered, retries, lease_lost, ambiguous;
    int64_t dup_txn, dup_resolved, errors, gaps, messages, explained;
    double rate;
} s_totals_t;

static double
s_rate (int64_t count, int64_t from_ms, int64_t to_ms)
{
    double s = (double) (to_ms - from_ms) / 1000.0;
    return s > 0 ? (double) count / s : 0;
}

static void
s_totals (const vf_result_t *res, s_totals_t *t)
{
    memset (t, 0, sizeof *t);
    for (int c = 0; c <= res->stages; c++) {
        const vf_stage_stats_t *st = &res->st [c];
        t->duplicates += st->duplicates;
        t->order += st->order;
        t->corrupt += st->corrupt;
        t->redelivered += st->redelivered;
        t->retries += st->retries;
        t->lease_lost += st->lease_lost;
        t->ambiguous += st->ambiguous;
        t->dup_txn += st->dup_txn;
        t->dup_resolved += st->dup_resolved;
        t->errors += st->errors;
    }
    const vf_stage_stats_t *check = &res->st [res->stages];
    t->gaps = check->missing;
    t->messages = res->produced - t->gaps;
    t->explained = check->redelivered;
    int64_t end = res->last_check_ms ? res->last_check_ms : res->end_ms;
    t->rate = s_rate (t->messages, res->t0_ms, end);
}

void
vf_progress (const vf_result_t *res, const vf_broker_t *broker, char *line, size_t len)
{
    qn_buf_t b = QN_BUF_INIT;
    int64_t now = vf_now_ms ();
    qn_buf_printf (&b, "[%.0fs] pushed %lld", (double) (now - res->t0_ms) / 1000.0,
                   (long long) res->produced);
    for (int c = 1; c < res->stages; c++)
        qn_buf_printf (&b, " | s%d %lld", c, (long long) res->st [c].processed);
    qn_buf_printf (&b, " | checked %lld | %.0f msg/s", (long long) res->checked,
                   s_rate (res->checked, res->t0_ms, now));
    if (broker)
        qn_buf_printf (&b, " | kills %d", vf_broker_kills (broker));
    snprintf (line, len, "%s", b.data);
    qn_buf_free (&b);
}

static void
s_table (const vf_result_t *res, FILE *out)
{
    fprintf (out, "%-5s %-6s %-28s %10s %9s %8s %5s %5s %7s %7s %7s %10s %7s\n",
             "stage", "role", "queue", "messages", "msg/s", "redeliv", "dups", "order",
             "corrupt", "missing", "retries", "lease_lost", "dup_txn");
    for (int c = 0; c <= res->stages; c++) {
        const vf_stage_stats_t *st = &res->st [c];
        char q [160];
        if (c == 0)
            snprintf (q, sizeof q, "-> %s", res->queue [0]);
        else
        if (c < res->stages)
            snprintf (q, sizeof q, "%s -> s%d", res->queue [c - 1], c);
        else
            snprintf (q, sizeof q, "%s", res->queue [c - 1]);
        const char *role = c == 0 ? "push" : c < res->stages ? "move" : "check";
        fprintf (out, "%-5d %-6s %-28s %10lld %9.0f %8lld %5lld %5lld %7lld %7lld %7lld %10lld %7lld\n",
                 c, role, q, (long long) st->messages,
                 s_rate (st->messages, res->t0_ms, st->last_ms ? st->last_ms : res->t0_ms),
                 (long long) st->redelivered, (long long) st->duplicates, (long long) st->order,
                 (long long) st->corrupt, (long long) st->missing, (long long) st->retries,
                 (long long) st->lease_lost, (long long) st->dup_txn);
    }
}

//  Says why each non-violation count happened, so chaos runs explain
//  every redelivery.
static void
s_explain (const vf_result_t *res, const vf_broker_t *broker, const s_totals_t *t, FILE *out)
{
    const vf_stage_stats_t *p = &res->st [0];
    fprintf (out, "time: producing %.1f s, run %.1f s (%s)\n",
             (double) ((res->produce_end_ms ? res->produce_end_ms : res->end_ms) - res->t0_ms) / 1000.0,
             (double) (res->end_ms - res->t0_ms) / 1000.0,
             res->drained ? "drained" : res->timed_out ? "drain timeout" :
             res->interrupted ? "interrupted" : "stopped");
    if (broker)
        fprintf (out, "broker: SIGKILLed %d times, restarted %d times, exited by itself %d times, "
                 "final exit status %d after SIGTERM\n", vf_broker_kills (broker),
                 vf_broker_restarts (broker), vf_broker_crashes (broker),
                 vf_broker_final_status (broker));
    if (t->retries)
        fprintf (out, "retries: %lld requests repeated after a transport error or a 5xx answer "
                 "(same body; transaction ids make that idempotent)\n", (long long) t->retries);
    if (p->dedup_items)
        fprintf (out, "stage 0: %lld pushed items answered \"duplicate\" on a retry: the earlier "
                 "attempt had been stored, its answer was lost\n", (long long) p->dedup_items);
    if (p->buffered)
        fprintf (out, "stage 0: %lld items were spooled by the broker (\"buffered\") and replayed\n",
                 (long long) p->buffered);
    if (t->redelivered)
        fprintf (out, "explained: %lld redeliveries (%lld at the checker) of messages whose "
                 "ack was never confirmed: a pop answer lost in a kill, or a transaction/ack "
                 "refused or unanswered, left the lease to run out and the broker delivered "
                 "the messages again, as at-least-once delivery allows; deterministic "
                 "transaction ids kept every stage from storing a second copy\n",
                 (long long) t->redelivered, (long long) t->explained);
    if (t->lease_lost)
        fprintf (out, "leases: %lld transactions/acks refused because their lease had ended "
                 "(%lld after an earlier attempt whose answer was lost, which had committed "
                 "unless the messages came back)\n", (long long) t->lease_lost,
                 (long long) t->ambiguous);
    if (t->dup_txn)
        fprintf (out, "duplicate outputs: %lld transactions refused because an output already "
                 "existed: their inputs came back although an earlier transaction had stored "
                 "the outputs and acked them (its answer lost); %lld inputs were acked alone, "
                 "nothing was stored twice\n", (long long) t->dup_txn,
                 (long long) t->dup_resolved);
    if (t->errors)
        fprintf (out, "errors: %lld requests refused for other reasons (see stderr)\n",
                 (long long) t->errors);
    if (res->unconfirmed && res->drained)
        fprintf (out, "checker: %lld messages seen but their ack never confirmed (answer lost; "
                 "not redelivered within the lease, so the ack had committed)\n",
                 (long long) res->unconfirmed);
    if (t->gaps)
        fprintf (out, "gaps: %lld messages pushed into %s never reached the checker%s\n",
                 (long long) t->gaps, res->queue [0],
                 res->drained ? "" : " (the run did not drain: see above)");
    if (res->fatal)
        fprintf (out, "stopped: %s\n", res->fatal);
}

int
vf_report (const vf_opts_t *opts, const vf_result_t *res, const vf_broker_t *broker, FILE *out)
{
    s_totals_t t;
    s_totals (res, &t);
    if (!opts->quiet) {
        s_table (res, out);
        s_explain (res, broker, &t, out);
    }
    fprintf (out, "verify: messages=%lld duplicates=%lld gaps=%lld order_violations=%lld msg/s=%.0f"
             " corrupt=%lld explained_duplicates=%lld redelivered=%lld retries=%lld",
             (long long) t.messages, (long long) t.duplicates, (long long) t.gaps,
             (long long) t.order, t.rate, (long long) t.corrupt, (long long) t.explained,
             (long long) t.redelivered, (long long) t.retries);
    if (broker)
        fprintf (out, " kills=%d restarts=%d crashes=%d", vf_broker_kills (broker),
                 vf_broker_restarts (broker), vf_broker_crashes (broker));
    if (!res->drained)
        fprintf (out, " incomplete=%s", res->fatal ? "fatal" : res->timed_out ? "drain_timeout"
                                                      : "interrupted");
    fprintf (out, "\n");
    fflush (out);
    bool clean = !t.duplicates && !t.gaps && !t.order && !t.corrupt && !vf_broker_crashes (broker)
              && !res->fatal && !res->interrupted;
    return clean ? 0 : 1;
}
