/*  actors/park/lease_manager.c - parked long-poll pops
    Holds the pops that found nothing and asked to wait (wait=true), and
    tells codec_http when to run one of them again.

    Parked pops are grouped in lists by what they wait for: (tenant, queue
    or namespace/task, partition, group), oldest request first. Wake-ups
    go to lists, not to single pops, and each list sends out at most one
    "scout" at a time: the oldest pop, run again (POP_RETRY).
      - A "committed" event for (tenant, queue) kicks every list waiting on
        that queue (namespace lists: every one of the tenant, since a
        queue's namespace is not known here).
      - A list's next-due instant (delay, window buffer, retry backoff,
        lease expiry: what an empty pop reports) and a slow safety-net
        recheck (QN_PARK_SAFETY_MS, for lost events) kick it too: one timer per
        list, so pops parked on a delayed queue don't all wake at once.
      - A kick while the scout is out only marks the list; when the scout
        comes back empty (it parks again) the next one goes out.
      - A scout that found messages (POP_SETTLED found=true) sends out the
        next: wake-ups chain while they are useful and stop at the first
        pop that comes back empty. No thundering herd.
    Deadlines are per pop: one timer each, POP_EXPIRED when it passes.

    Lost wake-ups: a push may commit after a pop's snapshot but before the
    pop parks. The actor remembers when it last saw a commit per queue; a
    PARK of a pop that started before that instant kicks its list.

    Receives  QN_MSG_POP_PARK  [ctx_id, tenant, queue|nil, partition|nil,
                               namespace|nil, task|nil, group, deadline_ms,
                               next_due_us|nil, pop_started_us]
                               deadline_ms and pop_started_us use this
                               process's monotonic clock (qn_now_ms/us);
                               next_due_us is wall-clock (database) time
              QN_MSG_POP_CANCEL [ctx_id]        client gone while parked
              QN_MSG_POP_SETTLED [ctx_id, found] a woken pop ended without
                               parking again (answered, failed or gone)
              event "committed" QN_MSG_COMMITTED [tenant, queue(, partition)]
              event "http.drained": expire every parked pop, and every
                               later PARK at once
    Sends     QN_MSG_POP_RETRY [ctx_id], QN_MSG_POP_EXPIRED [ctx_id] to
              codec_http; gauge "parked_pops"
    Owns      the parking table (waiters, lists, topics, commit stamps)
    Failure   malformed messages are dropped (counted by the kernel); an
              answer codec_http cannot take now is resent shortly; a scout
              that never reports is forgotten after a statement timeout
*/
#include "actors/actors.h"
#include "actors/park/lease_manager_table.h"
#include "wire/mp.h"

#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#define S_PRUNE_MS       30000  //  Commit-stamp pruning period
#define S_RESEND_MS      10     //  Retry an answer codec_http could not take

//  Unpacks env's body; NULL unless it is an array of at least `min`.
static const msgpack_object *
s_unpack (msgpack_unpacked *msg, const qn_env_t *env, uint32_t min)
{
    msgpack_unpacked_init (msg);
    if (msgpack_unpack_next (msg, env->body.ptr, env->body.len, NULL) != MSGPACK_UNPACK_SUCCESS
    ||  msg->data.type != MSGPACK_OBJECT_ARRAY || msg->data.via.array.size < min)
        return NULL;
    return msg->data.via.array.ptr;
}

// ------------------------------------------------------------------ actor
typedef struct {
    qn_kernel_t *kernel;        //  Not owned
    qn_park_table_t table;      //  Owned
    bool draining;
    qn_buf_t outbox;            //  s_out_t answers to resend
    uint64_t resend_timer;
} self_t;

typedef struct {
    uint64_t ctx_id;
    uint16_t type;
} s_out_t;

static void s_on_resend (void *self_, void *arg);
static void s_on_list_timer (void *self_, void *arg);

//  Sends RETRY or EXPIRED for ctx_id; keeps it for a resend when
//  codec_http is at its high-water mark.
static void
s_answer (self_t *self, uint64_t ctx_id, uint16_t type)
{
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 1);
    msgpack_pack_uint64 (&pk, ctx_id);
    if (qn_send_body (self->kernel, "codec_http", type, 0, b.data, b.size)) {
        s_out_t o = { ctx_id, type };
        qn_buf_append (&self->outbox, &o, sizeof o);
        if (!self->resend_timer)
            self->resend_timer = qn_timer_add (self->kernel, S_RESEND_MS, 0, s_on_resend, NULL);
    }
    msgpack_sbuffer_destroy (&b);
}

static void
s_on_resend (void *self_, void *arg)
{
    (void) arg;
    self_t *self = self_;
    self->resend_timer = 0;
    qn_buf_t pending = self->outbox;
    self->outbox = (qn_buf_t) QN_BUF_INIT;
    for (size_t i = 0; i < pending.len / sizeof (s_out_t); i++) {
        s_out_t o;
        memcpy (&o, pending.data + i * sizeof o, sizeof o);
        s_answer (self, o.ctx_id, o.type);
    }
    qn_buf_free (&pending);
}

//  After every table operation: cancel the timers of what was removed,
//  answer the woken pops, publish the gauge.
static void
s_settle (self_t *self, qn_buf_t *ids, uint16_t type)
{
    qn_park_table_t *t = &self->table;
    for (size_t i = 0; i < t->dead_timers.len / sizeof (uint64_t); i++) {
        uint64_t id;
        memcpy (&id, t->dead_timers.data + i * sizeof id, sizeof id);
        qn_timer_cancel (self->kernel, id);
    }
    qn_buf_reset (&t->dead_timers);
    size_t n = ids ? ids->len / sizeof (uint64_t) : 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t id;
        memcpy (&id, ids->data + i * sizeof id, sizeof id);
        s_answer (self, id, type);
    }
    if (n)
        qn_count (self->kernel, type == QN_MSG_POP_RETRY ? "pop_wakeups" : "pop_expired",
                  (int64_t) n);
    qn_gauge_set (self->kernel, "parked_pops", (int64_t) t->count);
}

//  (Re)arms l's timer for its next instant.
static void
s_list_arm (self_t *self, qn_park_list_t *l)
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
//  cancels its timer before the loop runs timers again.
static void
s_on_list_timer (void *self_, void *arg)
{
    self_t *self = self_;
    qn_park_list_t *l = arg;
    l->timer_id = 0;            //  One-shot: the kernel freed it
    qn_buf_t woken = QN_BUF_INIT;
    if (qn_park_list_fire (&self->table, l, qn_now_ms (), &woken))
        s_list_arm (self, l);
    s_settle (self, &woken, QN_MSG_POP_RETRY);
    qn_buf_free (&woken);
}

//  A parked pop's deadline.
static void
s_on_deadline (void *self_, void *arg)
{
    self_t *self = self_;
    uint64_t ctx_id = (uint64_t) (uintptr_t) arg;
    qn_park_waiter_t *w = qn_hashmap_get (self->table.waiters, ctx_id);
    if (!w)
        return;
    w->timer_id = 0;
    qn_buf_t ids = QN_BUF_INIT;
    if (qn_park_table_take (&self->table, ctx_id))
        qn_buf_append (&ids, &ctx_id, sizeof ctx_id);
    s_settle (self, &ids, QN_MSG_POP_EXPIRED);
    qn_buf_free (&ids);
}

static int
s_on_park (void *self_, const qn_env_t *env)
{
    self_t *self = self_;
    msgpack_unpacked msg;
    const msgpack_object *a = s_unpack (&msg, env, 10);
    qn_park_req_t p;
    int64_t now_ms = qn_now_ms ();
    if (!a || qn_park_decode (&msg.data, &p, now_ms, qn_wall_us ())) {
        msgpack_unpacked_destroy (&msg);
        return QN_EPROTO;
    }
    qn_buf_t woken = QN_BUF_INIT;
    qn_park_list_t *l = NULL;
    qn_park_rc_t rc = QN_PARK_EXPIRE_NOW;
    if (self->draining)
        //  Only ends its scouting, if it was a scout: nobody waits now.
        qn_park_table_settled (&self->table, p.ctx_id, false, now_ms, &woken);
    else
        rc = qn_park_table_park (&self->table, &p, now_ms, qn_now_us (), &l, &woken);
    if (rc == QN_PARK_PARKED) {
        qn_park_waiter_t *w = qn_hashmap_get (self->table.waiters, p.ctx_id);
        if (w) {
            int64_t delay = w->deadline_ms - now_ms;
            w->timer_id = qn_timer_add (self->kernel, (uint32_t) (delay > 0 ? delay : 0), 0,
                                        s_on_deadline, (void *) (uintptr_t) p.ctx_id);
        }
        s_list_arm (self, l);
        if (woken.len)
            qn_count (self->kernel, "pop_park_races", 1);
    }
    s_settle (self, &woken, QN_MSG_POP_RETRY);
    if (rc == QN_PARK_EXPIRE_NOW)
        s_answer (self, p.ctx_id, QN_MSG_POP_EXPIRED);
    qn_buf_free (&woken);
    msgpack_unpacked_destroy (&msg);
    return 0;
}

//  Body [ctx_id].
static int
s_on_cancel (void *self_, const qn_env_t *env)
{
    self_t *self = self_;
    int64_t id;
    if (qn_mp_scan (env->body.ptr, env->body.len, "i", &id) || id <= 0)
        return QN_EPROTO;
    if (qn_park_table_take (&self->table, (uint64_t) id))
        qn_count (self->kernel, "pop_cancelled", 1);
    s_settle (self, NULL, 0);
    return 0;
}

//  Body [ctx_id, found].
static int
s_on_settled (void *self_, const qn_env_t *env)
{
    self_t *self = self_;
    int64_t id;
    bool found;
    if (qn_mp_scan (env->body.ptr, env->body.len, "ib", &id, &found) || id <= 0)
        return QN_EPROTO;
    qn_buf_t woken = QN_BUF_INIT;
    if (!self->draining)
        qn_park_table_settled (&self->table, (uint64_t) id, found, qn_now_ms (), &woken);
    s_settle (self, &woken, QN_MSG_POP_RETRY);
    qn_buf_free (&woken);
    return 0;
}

//  Event "committed" [tenant, queue(, partition)].
static int
s_on_committed (void *self_, const qn_env_t *env)
{
    self_t *self = self_;
    msgpack_unpacked msg;
    const msgpack_object *a = s_unpack (&msg, env, 2);
    int rc = QN_EPROTO;
    if (a && a [0].type == MSGPACK_OBJECT_STR && a [1].type == MSGPACK_OBJECT_STR) {
        rc = 0;
        const char *part = NULL;
        size_t part_len = 0;
        if (msg.data.via.array.size >= 3 && a [2].type == MSGPACK_OBJECT_STR) {
            part = a [2].via.str.size ? a [2].via.str.ptr : "";
            part_len = a [2].via.str.size;
        }
        qn_buf_t woken = QN_BUF_INIT;
        //  An empty string may come with a NULL pointer, which would read
        //  as nil in a key.
        qn_park_table_committed (&self->table, a [0].via.str.size ? a [0].via.str.ptr : "",
                           a [0].via.str.size,
                           a [1].via.str.size ? a [1].via.str.ptr : "", a [1].via.str.size,
                           part, part_len, qn_now_ms (), qn_now_us (), &woken);
        s_settle (self, &woken, QN_MSG_POP_RETRY);
        qn_buf_free (&woken);
    }
    msgpack_unpacked_destroy (&msg);
    return rc;
}

//  Event "http.drained": the broker is stopping; answer every parked pop
//  now so SIGTERM does not wait for long-polls.
static int
s_on_drained (void *self_, const qn_env_t *env)
{
    (void) env;
    self_t *self = self_;
    self->draining = true;
    qn_buf_t all = QN_BUF_INIT;
    qn_park_table_take_all (&self->table, &all);
    s_settle (self, &all, QN_MSG_POP_EXPIRED);
    qn_buf_free (&all);
    return 0;
}

static void
s_on_prune (void *self_, void *arg)
{
    (void) arg;
    self_t *self = self_;
    qn_park_table_prune (&self->table, qn_now_us ());
}

static int
s_on_start (void *self_, const qn_env_t *env)
{
    (void) env;
    self_t *self = self_;
    int rc = qn_subscribe (self->kernel, "committed");
    if (!rc)
        rc = qn_subscribe (self->kernel, "http.drained");
    qn_timer_add (self->kernel, S_PRUNE_MS, S_PRUNE_MS, s_on_prune, NULL);
    qn_gauge_set (self->kernel, "parked_pops", 0);
    return rc;
}

static void
s_destroy (void **self_p)
{
    self_t *self = *self_p;
    qn_park_table_destroy (&self->table);
    qn_buf_free (&self->outbox);
    free (self);
    *self_p = NULL;
}

static const qn_route_t s_routes [] = {
    { QN_MSG_START, s_on_start },
    { QN_MSG_POP_PARK, s_on_park },
    { QN_MSG_POP_CANCEL, s_on_cancel },
    { QN_MSG_POP_SETTLED, s_on_settled },
    { QN_MSG_COMMITTED, s_on_committed },
    { QN_MSG_HTTP_DRAINED, s_on_drained },
    { 0, NULL }
};

qn_actor_t *
qn_lease_manager_new (qn_kernel_t *kernel, const qn_config_t *config)
{
    self_t *self = qn_zalloc (sizeof *self);
    self->kernel = kernel;
    //  A pop runs at most a statement timeout (the codec's deadline is 2 s
    //  past it): a scout silent longer than that is gone, and commit
    //  stamps are kept comfortably longer.
    int64_t stmt_ms = config->db_statement_timeout_ms;
    qn_park_table_init (&self->table, (stmt_ms + 30000) * 1000, stmt_ms + 5000);
    qn_actor_def_t def = {
        .name = "lease_manager", .routes = s_routes, .self = self, .destroy = s_destroy
    };
    return qn_actor_spawn (kernel, &def);
}
