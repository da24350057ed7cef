/*  cmd/queen-verify/ledger.c - what each consumer stage saw
    Per (stage, partition) a vector indexed by n: the id of the stored
    message first delivered for (partition, n), and whether its ack was
    confirmed. From it: first deliveries, order violations, explained
    redeliveries, duplicates, and after the run the gaps.
    Owns      nothing beyond the run's track vectors (freed by run.c)
*/
#include "cmd/queen-verify/pipeline.h"

#include <stdlib.h>
#include <string.h>

vf_track_t *
vf_track (vf_run_t *self, int stage, int32_t p)
{
    return &self->track [(size_t) (stage - 1) * (size_t) self->K + (size_t) p];
}

void
vf_track_grow (vf_track_t *t, int64_t n)
{
    if (n < t->cap)
        return;
    int64_t cap = t->cap ? t->cap : 16;
    while (cap <= n)
        cap *= 2;
    t->seq = qn_realloc (t->seq, (size_t) cap * sizeof *t->seq);
    t->state = qn_realloc (t->state, (size_t) cap);
    memset (t->seq + t->cap, 0, (size_t) (cap - t->cap) * sizeof *t->seq);
    memset (t->state + t->cap, 0, (size_t) (cap - t->cap));
    t->cap = cap;
}

//  Records a delivery of `it` at `stage`: first delivery (in order or
//  not), explained redelivery (its ack was never confirmed), or an
//  unexplained duplicate (a second stored copy, or a message whose ack
//  was confirmed delivered again).
void
vf_ledger_deliver (vf_run_t *self, int stage, const vf_item_t *it, int64_t now)
{
    vf_stage_stats_t *st = &self->st [stage];
    if (it->p < 0 || it->n < 0)
        return;
    vf_track_t *t = vf_track (self, stage, it->p);
    vf_track_grow (t, it->n);
    if (t->seq [it->n] == 0) {
        if (it->n < t->max_n) {
            st->order++;
            vf_log (self, L_ORDER, "order violation at stage %d: partition p%d delivered n=%lld "
                   "after n=%lld", stage, it->p, (long long) it->n, (long long) t->max_n);
        }
        t->seq [it->n] = it->seq;
        t->state [it->n] = T_DELIVERED;
        if (it->n > t->max_n)
            t->max_n = it->n;
        st->messages++;
        if (!st->first_ms)
            st->first_ms = now;
        st->last_ms = now;
        if (stage == self->S) {
            self->checked++;
            self->last_check_ms = now;
        }
    }
    else
    if (t->seq [it->n] != it->seq) {
        st->duplicates++;
        vf_log (self, L_DUP, "duplicate at stage %d: partition p%d n=%lld stored twice "
               "(message ids %lld and %lld)", stage, it->p, (long long) it->n,
               (long long) t->seq [it->n], (long long) it->seq);
    }
    else
    if (t->state [it->n] == T_DONE) {
        st->duplicates++;
        vf_log (self, L_DUP, "duplicate at stage %d: partition p%d n=%lld delivered again "
               "after its ack was confirmed", stage, it->p, (long long) it->n);
    }
    else
        st->redelivered++;
}

//  The ack of `it` at `stage` was confirmed by the broker.
void
vf_ledger_confirm (vf_run_t *self, int stage, const vf_item_t *it)
{
    if (it->p < 0 || it->n < 0)
        return;
    vf_track_t *t = vf_track (self, stage, it->p);
    if (it->n < t->cap && t->seq [it->n] == it->seq && t->state [it->n] == T_DELIVERED) {
        t->state [it->n] = T_DONE;
        self->st [stage].processed++;
    }
}

//  True when the checker has seen every message produced so far (a scan,
//  so at most once a second). Counts those whose ack is unconfirmed.
bool
vf_ledger_all_checked (vf_run_t *self, int64_t now, bool force)
{
    if (self->checked < self->produced_total)
        return false;
    if (!force && now - self->last_scan_ms < 200)
        return false;
    self->last_scan_ms = now;
    int64_t unconfirmed = 0;
    for (int32_t p = 0; p < self->K; p++) {
        vf_track_t *t = vf_track (self, self->S, p);
        for (int64_t n = 0; n < self->produced [p]; n++) {
            if (n >= t->cap || t->seq [n] == 0)
                return false;
            unconfirmed += t->state [n] != T_DONE;
        }
    }
    self->unconfirmed = unconfirmed;
    return true;
}

//  After the run: per stage, produced messages never delivered there, and
//  deliveries of messages the producer never pushed.
void
vf_ledger_final_scan (vf_run_t *self)
{
    self->unconfirmed = 0;
    for (int c = 1; c <= self->S; c++) {
        vf_stage_stats_t *st = &self->st [c];
        for (int32_t p = 0; p < self->K; p++) {
            vf_track_t *t = vf_track (self, c, p);
            for (int64_t n = 0; n < t->cap || n < self->produced [p]; n++) {
                bool seen = n < t->cap && t->seq [n] != 0;
                if (n < self->produced [p] && !seen)
                    st->missing++;
                if (n >= self->produced [p] && seen) {
                    st->corrupt++;
                    vf_log (self, L_CORRUPT, "stage %d delivered p%d n=%lld, which was never "
                           "pushed", c, p, (long long) n);
                }
                if (c == self->S && n < self->produced [p] && seen && t->state [n] != T_DONE)
                    self->unconfirmed++;
            }
        }
    }
}
