/*  actors/park/park.c - parked long-poll requests (see park.h)
    The glue between the pure table (park_table.c) and the owner's thread:
    kernel timers for deadlines, next-due instants and the safety net,
    the "committed" event, and the owner's callbacks.
    Owns      the table, its timers (ids in the table) and the commit stamps
    Failure   a malformed "committed" event is refused (counted by the
              kernel); a scout that never reports is forgotten after
              def.attempt_ms
*/
#include "actors/park/park.h"
#include "wire/msg_committed.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_PRUNE_MS 30000        //  Commit-stamp pruning period

struct qn_park {
    qn_park_table_t table;      //  Owned; first, so a list's table is its park
    qn_kernel_t *kernel;        //  Not owned
    qn_park_def_t def;          //  Strings not owned (static)
    bool draining;
    char wakeups [64], expired [64], cancelled [64], races [64], parked [64];   //  Counter names
};

static void s_on_list_timer (void *actor_self, void *arg);

//  After every table operation: cancels the timers of what was removed,
//  publishes the gauge, then calls `fn` for every id in `ids` (the table
//  is consistent again, so callbacks may call back into the park).
static void
s_settle (qn_park_t *self, const qn_buf_t *ids, qn_park_fn *fn)
{
    qn_park_table_t *t = &self->table;
    for (size_t i = 0; i < t->dead_timers.len / sizeof (uint64_t); i++) {
        uint64_t id;
        memcpy (&id, t->dead_timers.data + i * sizeof id, sizeof id);
        qn_timer_cancel (self->kernel, id);
    }
    qn_buf_reset (&t->dead_timers);
    size_t n = ids ? ids->len / sizeof (uint64_t) : 0;
    if (n)
        qn_count (self->kernel, fn == self->def.wake ? self->wakeups : self->expired, (int64_t) n);
    qn_gauge_set (self->kernel, self->def.gauge, (int64_t) t->count);
    for (size_t i = 0; i < n; i++) {
        uint64_t id;
        memcpy (&id, ids->data + i * sizeof id, sizeof id);
        fn (self->def.arg, id);
    }
}

//  (Re)arms l's timer for its next instant.
static void
s_list_arm (qn_park_t *self, qn_park_list_t *l)
{
    int64_t at = qn_park_list_next_ms (l);
    if (l->timer_id && l->timer_at_ms == at)
        return;
    if (l->timer_id)
        qn_timer_cancel (self->kernel, l->timer_id);
    int64_t delay = at - qn_now_ms ();
    l->timer_id = qn_timer_add (self->kernel, (uint32_t) (delay > 0 ? delay : 0), 0,
                                s_on_list_timer, l);
    l->timer_at_ms = at;
}

//  A list's due instant or safety net. The list is alive: freeing one
//  cancels its timer before control returns to the loop.
static void
s_on_list_timer (void *actor_self, void *arg)
{
    (void) actor_self;
    qn_park_list_t *l = arg;
    qn_park_t *self = (qn_park_t *) l->table;
    l->timer_id = 0;            //  One-shot: the kernel freed it
    qn_buf_t woken = QN_BUF_INIT;
    if (qn_park_list_fire (&self->table, l, qn_now_ms (), &woken))
        s_list_arm (self, l);
    s_settle (self, &woken, self->def.wake);
    qn_buf_free (&woken);
}

//  A parked request's deadline; arg is its waiter (cancelled when freed).
static void
s_on_deadline (void *actor_self, void *arg)
{
    (void) actor_self;
    qn_park_waiter_t *w = arg;
    qn_park_t *self = (qn_park_t *) w->list->table;
    uint64_t id = w->ctx_id;
    w->timer_id = 0;
    qn_buf_t ids = QN_BUF_INIT;
    if (qn_park_table_take (&self->table, id))
        qn_buf_append (&ids, &id, sizeof id);
    s_settle (self, &ids, self->def.expire);
    qn_buf_free (&ids);
}

static void
s_on_prune (void *actor_self, void *arg)
{
    (void) actor_self;
    qn_park_t *self = arg;
    qn_park_table_prune (&self->table, qn_now_us ());
}

qn_park_t *
qn_park_new (qn_kernel_t *kernel, const qn_park_def_t *def)
{
    assert (def->wake && def->expire && def->gauge && def->counter_prefix);
    qn_park_t *self = qn_zalloc (sizeof *self);
    self->kernel = kernel;
    self->def = *def;
    //  Commit stamps are kept comfortably longer than an attempt may take.
    qn_park_table_init (&self->table, (def->attempt_ms + 30000) * 1000, def->attempt_ms);
    const char *p = def->counter_prefix;
    snprintf (self->wakeups, sizeof self->wakeups, "%s_wakeups", p);
    snprintf (self->expired, sizeof self->expired, "%s_expired", p);
    snprintf (self->cancelled, sizeof self->cancelled, "%s_cancelled", p);
    snprintf (self->races, sizeof self->races, "%s_park_races", p);
    snprintf (self->parked, sizeof self->parked, "%s_parked", p);
    return self;
}

void
qn_park_destroy (qn_park_t **self_p)
{
    qn_park_t *self = *self_p;
    if (!self)
        return;
    qn_park_table_destroy (&self->table);
    free (self);
    *self_p = NULL;
}

int
qn_park_start (qn_park_t *self)
{
    qn_timer_add (self->kernel, S_PRUNE_MS, S_PRUNE_MS, s_on_prune, self);
    qn_gauge_set (self->kernel, self->def.gauge, 0);
    return qn_subscribe (self->kernel, "committed");
}

qn_park_rc_t
qn_park_wait (qn_park_t *self, const qn_park_wait_t *w)
{
    assert (w->id && w->tenant && w->group);
    int64_t now_ms = qn_now_ms ();
    qn_park_req_t p = {
        .ctx_id = w->id,
        .f = { w->tenant, w->queue, w->partition, w->ns, w->task, w->group },
        .deadline_ms = w->deadline_ms,
        .due_ms = qn_park_due_ms (w->next_due_us, now_ms, qn_wall_us ()),
        .started_us = w->started_us
    };
    for (int i = 0; i < 6; i++)
        p.len [i] = p.f [i] ? strlen (p.f [i]) : 0;
    qn_buf_t woken = QN_BUF_INIT;
    qn_park_list_t *l = NULL;
    qn_park_rc_t rc = QN_PARK_EXPIRE_NOW;
    if (self->draining)
        //  Only ends its scouting, if it was a scout: nobody waits now.
        qn_park_table_settled (&self->table, p.ctx_id, false, now_ms, &woken);
    else
        rc = qn_park_table_park (&self->table, &p, now_ms, qn_now_us (), &l, &woken);
    if (rc == QN_PARK_PARKED) {
        qn_park_waiter_t *waiter = qn_hashmap_get (self->table.waiters, p.ctx_id);
        if (waiter) {
            int64_t delay = waiter->deadline_ms - now_ms;
            waiter->timer_id = qn_timer_add (self->kernel, (uint32_t) (delay > 0 ? delay : 0), 0,
                                             s_on_deadline, waiter);
        }
        s_list_arm (self, l);
        qn_count (self->kernel, self->parked, 1);
        if (woken.len)
            qn_count (self->kernel, self->races, 1);
    }
    s_settle (self, &woken, self->def.wake);
    qn_buf_free (&woken);
    return rc;
}

void
qn_park_settled (qn_park_t *self, uint64_t id, bool found)
{
    qn_buf_t woken = QN_BUF_INIT;
    if (!self->draining)
        qn_park_table_settled (&self->table, id, found, qn_now_ms (), &woken);
    s_settle (self, &woken, self->def.wake);
    qn_buf_free (&woken);
}

bool
qn_park_cancel (qn_park_t *self, uint64_t id)
{
    bool parked = qn_park_table_take (&self->table, id);
    if (parked)
        qn_count (self->kernel, self->cancelled, 1);
    s_settle (self, NULL, self->def.expire);
    return parked;
}

void
qn_park_committed (qn_park_t *self, const char *tenant, size_t tenant_len,
                   const char *queue, size_t queue_len,
                   const char *partition, size_t partition_len)
{
    qn_buf_t woken = QN_BUF_INIT;
    //  An empty string may come with a NULL pointer, which would read as
    //  nil in a key.
    qn_park_table_committed (&self->table, tenant ? tenant : "", tenant_len,
                             queue ? queue : "", queue_len,
                             partition && !partition_len ? "" : partition, partition_len,
                             qn_now_ms (), qn_now_us (), &woken);
    s_settle (self, &woken, self->def.wake);
    qn_buf_free (&woken);
}

//  [tenant, queue(, partition)] (wire/msg_committed.h).
int
qn_park_on_committed (qn_park_t *self, const qn_env_t *env)
{
    qn_msg_committed_t m;
    if (qn_msg_committed_decode (env->body.ptr, env->body.len, &m))
        return QN_EPROTO;
    qn_park_committed (self, m.tenant, m.tenant_len, m.queue, m.queue_len,
                       m.partition, m.partition_len);
    return 0;
}

void
qn_park_drain (qn_park_t *self)
{
    self->draining = true;
    qn_buf_t all = QN_BUF_INIT;
    qn_park_table_take_all (&self->table, &all);
    s_settle (self, &all, self->def.expire);
    qn_buf_free (&all);
}

size_t
qn_park_count (const qn_park_t *self)
{
    return self->table.count;
}
