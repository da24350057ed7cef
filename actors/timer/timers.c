/*  actors/timer/timers.c - the "timers" actor: fires timers, sweeps expired kv rows
    Timers are rows of queen.timers (schema/functions/31_timers.sql); this actor only
    decides when to ask PostgreSQL to fire them. Every S_LOAD_MS it loads
    the pending timers due within S_HORIZON_MS (queen.timer_due) into an
    in-memory min-heap (base/heap.h) keyed by due time; codec_http also
    tells it about a timer it just created (QN_MSG_TIMER_ARM) so a short timer need not wait
    for the next load. One kernel timer is armed for the heap's head; when
    it rings, every entry now due moves to the fire list, which goes to
    queen.timer_fire in batches of at most S_FIRE_BATCH ids, at most
    S_FIRE_IN_FLIGHT calls at a time. At light load a timer fires alone,
    right at its due time; under load the entries that come due while calls
    are in flight gather into the next batch (group commit).
    queen.timer_fire pushes each due timer into its queue and marks it
    fired in one transaction, claiming the rows with SKIP LOCKED, so every
    broker can run this actor on the same timers: a timer fires once.
    Due times are on the database clock; the actor keeps the offset between
    that clock and its own from the load replies.
    Every S_SWEEP_MS it also deletes expired kv rows and fired-timer
    records older than S_FIRED_RETENTION_S (queen.kv_sweep, timer_sweep).
    Receives  QN_MSG_TIMER_ARM [id, due_us] from codec_http; PG_RESULT
              replies (its own timers drive the rest)
    Sends     QN_MSG_PG_EXEC to pg_writer; "committed" events
              [tenant, queue] after a fire, so parked pops wake
    Owns      the heap, the set of known timer ids, the fire batches in
              flight
    Failure   a failed load or fire is logged (once per failure streak
              that lasts 2 s);
              the timers stay pending in PostgreSQL and the next load
              finds them again. A timer whose push fails (a full queue)
              stays pending and is tried again after S_RETRY_MS.
*/
#include "actors/actors.h"
#include "actors/pg/call.h"
#include "actors/pg/committed.h"
#include "actors/pg/statements.h"
#include "wire/msg_pg.h"
#include "base/hashmap.h"
#include "base/heap.h"
#include "wire/msg_timer_arm.h"

#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#define S_LOAD_MS           250     //  Period of the due-timer load
#define S_HORIZON_MS        2000    //  A load takes timers due within this
#define S_LOAD_LIMIT        5000    //  Rows per load
#define S_FIRE_BATCH        200     //  Ids per queen.timer_fire call (<= 256 partition locks)
#define S_FIRE_IN_FLIGHT    2
#define S_SLACK_US          1000    //  Ring a little after the due time (clock rounding)
#define S_RETRY_MS          1000    //  A timer whose push failed is tried again after this
#define S_SWEEP_MS          5000
#define S_SWEEP_BATCH       1000
#define S_SWEEP_ROUNDS      10      //  Calls per sweep tick while a job has more
#define S_FIRED_RETENTION_S 86400   //  Fired-timer records are kept this long
#define S_DISTINCT_QUEUES   64      //  Queues remembered per batch for "committed"
#define S_WARN_AFTER_MS     2000    //  A failure streak is logged once it lasts this long
#define S_FIRST_LOAD_MS     500     //  Give pg_writer time to connect at start

//  A timer in the heap: key = due time (database clock, us since the Unix
//  epoch), tie = queen.timers.id.
typedef struct {
    qn_heap_node_t node;
} s_entry_t;

typedef struct {
    bool used;
    int64_t *ids;               //  Owned
    uint32_t count;
} s_batch_t;

//  A streak of failed calls of one kind (logged once, if it lasts).
typedef struct {
    bool failing;
    bool warned;
    int64_t since_ms;
} s_streak_t;

typedef struct {
    qn_kernel_t *kernel;        //  Not owned
    const qn_config_t *config;  //  Not owned
    qn_heap_t heap;             //  Owned entries, by (due_us, id)
    qn_hashmap_t *known;        //  Owned: ids in the heap, the fire list or in flight
    int64_t *ready;             //  Owned: ids due now, in due order
    size_t ready_len, ready_cap;
    s_batch_t batches [S_FIRE_IN_FLIGHT];   //  Fire calls in flight
    int64_t offset_us;          //  Database clock minus our wall clock
    uint64_t wake_timer;        //  Kernel timer for the heap's head, 0 = none
    int64_t wake_local_us;      //  When it rings (our wall clock)
    bool loading;
    int64_t load_sent_us;
    bool load_full;             //  The last load hit its limit: more may be due
    bool sweeping;
    int sweep_rounds;
    s_streak_t load_failing, fire_failing, sweep_failing;
    msgpack_sbuffer out;
    qn_pg_args_t args;          //  Parameters of the next call
} self_t;

static void s_arm (self_t *self);
static void s_flush (self_t *self);
static void s_load (self_t *self);

// ------------------------------------------------------------------ heap
static void
s_heap_push (self_t *self, int64_t due_us, int64_t id)
{
    s_entry_t *e = qn_malloc (sizeof *e);
    e->node.key = due_us;
    e->node.tie = (uint64_t) id;
    qn_heap_push (&self->heap, &e->node);
}

//  The id of the earliest entry (the heap must not be empty).
static int64_t
s_heap_pop (self_t *self)
{
    s_entry_t *e = qn_heap_item (qn_heap_pop (&self->heap), s_entry_t, node);
    int64_t id = (int64_t) e->node.tie;
    free (e);
    return id;
}

//  Due time of the earliest entry (the heap must not be empty).
static int64_t
s_heap_head_us (self_t *self)
{
    return qn_heap_peek (&self->heap)->key;
}

//  Remembers timer `id` due at due_us (database clock) unless known.
static void
s_add (self_t *self, int64_t id, int64_t due_us)
{
    if (id <= 0 || qn_hashmap_get (self->known, (uint64_t) id))
        return;
    qn_hashmap_put (self->known, (uint64_t) id, (void *) 1);
    s_heap_push (self, due_us, id);
}

static int64_t
s_db_now_us (self_t *self)
{
    return qn_wall_us () + self->offset_us;
}

// ------------------------------------------------------------------ calls
static bool
s_str_is (const msgpack_object *o, const char *s)
{
    return o && o->type == MSGPACK_OBJECT_STR && o->via.str.size == strlen (s)
        && !memcmp (o->via.str.ptr, s, o->via.str.size);
}

//  Logs a failed call: at warn once the streak has lasted S_WARN_AFTER_MS
//  (a broker starting while its pool connects is not worth a warning),
//  else at debug.
static void
s_failed (s_streak_t *st, const char *what, const char *why)
{
    int64_t now = qn_now_ms ();
    if (!st->failing) {
        st->failing = true;
        st->warned = false;
        st->since_ms = now;
    }
    if (!st->warned && now - st->since_ms >= S_WARN_AFTER_MS) {
        qn_warn ("%s failing, retrying: %s", what, why);
        st->warned = true;
    }
    else
        qn_debug ("%s failed: %s", what, why);
}

static void
s_succeeded (s_streak_t *st, const char *what)
{
    if (st->warned)
        qn_info ("%s works again", what);
    st->failing = false;
    st->warned = false;
}

//  Sends PG_EXEC of stmt with the parameters built in self->args (cleared
//  by s_args); cb gets the reply. 0, or an error after which cb is not
//  called.
static int
s_exec (self_t *self, uint32_t stmt, qn_reply_fn *cb, void *arg)
{
    uint32_t timeout = (uint32_t) self->config->db_statement_timeout_ms + 2000;
    return qn_pg_call (self->kernel, "pg_writer", &self->out, stmt, NULL, &self->args, timeout,
                       cb, arg);
}

//  The emptied parameter list of the next call.
static qn_pg_args_t *
s_args (self_t *self)
{
    qn_pg_args_clear (&self->args);
    return &self->args;
}

// ------------------------------------------------------------------ waking
static void
s_on_wake (void *self_, void *arg)
{
    (void) arg;
    self_t *self = self_;
    self->wake_timer = 0;
    int64_t now = s_db_now_us (self);
    while (qn_heap_size (&self->heap) && s_heap_head_us (self) <= now) {
        int64_t id = s_heap_pop (self);
        if (self->ready_len == self->ready_cap) {
            self->ready_cap = self->ready_cap ? self->ready_cap * 2 : 256;
            self->ready = qn_realloc (self->ready, self->ready_cap * sizeof *self->ready);
        }
        self->ready [self->ready_len++] = id;
    }
    s_flush (self);
    s_arm (self);
}

//  Arms the kernel timer for the heap's head (a little after its due time,
//  on our clock), unless it is armed for that instant or earlier already.
static void
s_arm (self_t *self)
{
    qn_gauge_set (self->kernel, "timers_armed", (int64_t) (qn_heap_size (&self->heap) + self->ready_len));
    if (!qn_heap_size (&self->heap))
        return;
    int64_t at = s_heap_head_us (self) - self->offset_us + S_SLACK_US;
    if (self->wake_timer && self->wake_local_us <= at)
        return;
    if (self->wake_timer)
        qn_timer_cancel (self->kernel, self->wake_timer);
    int64_t delay_us = at - qn_wall_us ();
    uint32_t delay_ms = delay_us <= 0 ? 0 : (uint32_t) ((delay_us + 999) / 1000);
    self->wake_timer = qn_timer_add (self->kernel, delay_ms, 0, s_on_wake, NULL);
    self->wake_local_us = at;
}

// ------------------------------------------------------------------ firing
static void
s_publish_committed (self_t *self, const msgpack_object *tenant, const msgpack_object *queue)
{
    qn_committed_publish (self->kernel, tenant->via.str.ptr, tenant->via.str.size,
                          queue->via.str.ptr, queue->via.str.size);
}

static bool
s_same_str (const msgpack_object *a, const msgpack_object *b)
{
    return a->via.str.size == b->via.str.size && !memcmp (a->via.str.ptr, b->via.str.ptr, a->via.str.size);
}

//  One "committed" event per distinct (tenant, queue) of a batch.
static void
s_wake_queues (self_t *self, const qn_pg_result_t *res)
{
    const msgpack_object *seen [S_DISTINCT_QUEUES][2];
    uint32_t nseen = 0;
    for (uint32_t r = 0; r < res->row_count; r++) {
        const msgpack_object *st = qn_pg_result_col (res, r, 1), *t = qn_pg_result_col (res, r, 3),
                             *q = qn_pg_result_col (res, r, 4);
        if (!s_str_is (st, "fired") || !t || !q || t->type != MSGPACK_OBJECT_STR
        ||  q->type != MSGPACK_OBJECT_STR)
            continue;
        bool dup = false;
        for (uint32_t i = 0; i < nseen && !dup; i++)
            dup = s_same_str (seen [i][0], t) && s_same_str (seen [i][1], q);
        if (dup)
            continue;
        s_publish_committed (self, t, q);
        if (nseen < S_DISTINCT_QUEUES) {
            seen [nseen][0] = t;
            seen [nseen][1] = q;
            nseen++;
        }
    }
}

//  Handles the answer to one fire batch: fired and gone timers are
//  forgotten, early ones go back on the heap, failed pushes are tried
//  again after S_RETRY_MS. A failed call forgets the whole batch (the
//  timers are still pending in PostgreSQL; the next load finds them).
static void
s_on_fired (void *self_, void *arg, const qn_env_t *env)
{
    self_t *self = self_;
    s_batch_t *batch = arg;
    for (uint32_t i = 0; i < batch->count; i++)
        qn_hashmap_remove (self->known, (uint64_t) batch->ids [i]);
    qn_pg_result_t res;
    qn_pg_result_decode (env ? env->body.ptr : NULL, env ? env->body.len : 0, &res);
    char why [300];
    if (qn_pg_result_failed (&res, why, sizeof why))
        s_failed (&self->fire_failing, "timer fire", why);
    else
    if (res.rows) {
        s_succeeded (&self->fire_failing, "timer fire");
        int64_t fired = 0;
        for (uint32_t r = 0; r < res.row_count; r++) {
            const msgpack_object *st = qn_pg_result_col (&res, r, 1);
            int64_t id = 0, due = 0;
            if (!qn_pg_call_int (qn_pg_result_col (&res, r, 0), &id))
                continue;
            if (s_str_is (st, "fired"))
                fired++;
            else
            if (s_str_is (st, "early") && qn_pg_call_int (qn_pg_result_col (&res, r, 2), &due))
                s_add (self, id, due);
            else
            if (s_str_is (st, "error")) {
                const msgpack_object *e = qn_pg_result_col (&res, r, 5);
                qn_warn ("timer push failed, retrying in %d ms: id=%lld error=%.*s", S_RETRY_MS,
                         (long long) id, e && e->type == MSGPACK_OBJECT_STR ? (int) e->via.str.size : 0,
                         e && e->type == MSGPACK_OBJECT_STR ? e->via.str.ptr : "");
                s_add (self, id, s_db_now_us (self) + (int64_t) S_RETRY_MS * 1000);
            }
        }
        if (fired) {
            qn_count (self->kernel, "timers_fired", fired);
            s_wake_queues (self, &res);
        }
    }
    qn_pg_result_free (&res);
    free (batch->ids);
    batch->ids = NULL;
    batch->used = false;
    s_flush (self);
    s_arm (self);
    //  A backlog bigger than one load: fetch the next page at once.
    if (self->load_full && !qn_heap_size (&self->heap) && !self->ready_len)
        s_load (self);
}

//  Sends due ids to queen.timer_fire while a call slot is free.
static void
s_flush (self_t *self)
{
    while (self->ready_len) {
        s_batch_t *batch = NULL;
        for (int i = 0; i < S_FIRE_IN_FLIGHT && !batch; i++)
            if (!self->batches [i].used)
                batch = &self->batches [i];
        if (!batch)
            return;
        uint32_t n = self->ready_len < S_FIRE_BATCH ? (uint32_t) self->ready_len : S_FIRE_BATCH;
        qn_pg_args_t *args = s_args (self);
        qn_pg_args_array (args, n);
        for (uint32_t i = 0; i < n; i++)
            qn_pg_args_int (args, self->ready [i]);
        batch->ids = qn_malloc (n * sizeof *batch->ids);
        memcpy (batch->ids, self->ready, n * sizeof *batch->ids);
        batch->count = n;
        memmove (self->ready, self->ready + n, (self->ready_len - n) * sizeof *self->ready);
        self->ready_len -= n;
        if (s_exec (self, QN_SQL_TIMER_FIRE, s_on_fired, batch) == 0) {
            batch->used = true;
            qn_count (self->kernel, "timers_fire_calls", 1);
        }
        else {
            //  pg_writer is full: forget them, the next load brings them back
            for (uint32_t i = 0; i < n; i++)
                qn_hashmap_remove (self->known, (uint64_t) batch->ids [i]);
            free (batch->ids);
            batch->ids = NULL;
            return;
        }
    }
}

// ------------------------------------------------------------------ loading
static void
s_on_loaded (void *self_, void *arg, const qn_env_t *env)
{
    (void) arg;
    self_t *self = self_;
    self->loading = false;
    qn_pg_result_t res;
    qn_pg_result_decode (env ? env->body.ptr : NULL, env ? env->body.len : 0, &res);
    char why [300];
    if (qn_pg_result_failed (&res, why, sizeof why))
        s_failed (&self->load_failing, "timer load", why);
    else {
        s_succeeded (&self->load_failing, "timer load");
        uint32_t n = res.row_count;
        int64_t db_now = 0, now = qn_wall_us ();
        //  The database clock, read about halfway through the round trip.
        if (n && qn_pg_call_int (qn_pg_result_col (&res, 0, 2), &db_now) && now - self->load_sent_us < 50000)
            self->offset_us = db_now - (self->load_sent_us + now) / 2;
        for (uint32_t r = 0; r < n; r++) {
            int64_t id, due;
            if (qn_pg_call_int (qn_pg_result_col (&res, r, 0), &id) && qn_pg_call_int (qn_pg_result_col (&res, r, 1), &due))
                s_add (self, id, due);
        }
        self->load_full = n >= S_LOAD_LIMIT;
        s_arm (self);
    }
    qn_pg_result_free (&res);
}

static void
s_load (self_t *self)
{
    if (self->loading)
        return;
    qn_pg_args_t *args = s_args (self);
    qn_pg_args_int (args, S_HORIZON_MS);
    qn_pg_args_int (args, S_LOAD_LIMIT);
    self->load_sent_us = qn_wall_us ();
    if (s_exec (self, QN_SQL_TIMER_DUE, s_on_loaded, NULL) == 0)
        self->loading = true;
}

static void
s_on_load_tick (void *self_, void *arg)
{
    (void) arg;
    s_load (self_);
}

//  QN_MSG_TIMER_ARM [id, due_us]: a timer this broker just created. Due
//  beyond the horizon, it is left to a later load.
static int
s_on_arm (void *self_, const qn_env_t *env)
{
    self_t *self = self_;
    qn_msg_timer_arm_t arm;
    if (qn_msg_timer_arm_decode (env->body.ptr, env->body.len, &arm))
        return QN_EPROTO;
    if (arm.due_us - s_db_now_us (self) <= (int64_t) S_HORIZON_MS * 1000) {
        s_add (self, arm.id, arm.due_us);
        s_arm (self);
    }
    return 0;
}

// ------------------------------------------------------------------ sweeping
static void s_sweep (self_t *self);

static void
s_on_swept (void *self_, void *arg, const qn_env_t *env)
{
    (void) arg;
    self_t *self = self_;
    self->sweeping = false;
    qn_pg_result_t res;
    qn_pg_result_decode (env ? env->body.ptr : NULL, env ? env->body.len : 0, &res);
    char why [300];
    bool more = false;
    if (qn_pg_result_failed (&res, why, sizeof why))
        s_failed (&self->sweep_failing, "kv/timer sweep", why);
    else {
        s_succeeded (&self->sweep_failing, "kv/timer sweep");
        int64_t kv = 0, fired = 0;
        if (res.row_count == 1) {
            qn_pg_call_int (qn_pg_result_col (&res, 0, 0), &kv);
            qn_pg_call_int (qn_pg_result_col (&res, 0, 1), &fired);
        }
        if (kv)
            qn_count (self->kernel, "kv_expired_swept", kv);
        if (fired)
            qn_count (self->kernel, "timers_records_swept", fired);
        more = kv >= S_SWEEP_BATCH || fired >= S_SWEEP_BATCH;
    }
    qn_pg_result_free (&res);
    if (more && self->sweep_rounds < S_SWEEP_ROUNDS)
        s_sweep (self);
}

static void
s_sweep (self_t *self)
{
    if (self->sweeping)
        return;
    self->sweep_rounds++;
    qn_pg_args_t *args = s_args (self);
    qn_pg_args_int (args, S_SWEEP_BATCH);
    qn_pg_args_int (args, S_FIRED_RETENTION_S);
    if (s_exec (self, QN_SQL_STATE_SWEEP, s_on_swept, NULL) == 0)
        self->sweeping = true;
}

static void
s_on_sweep_tick (void *self_, void *arg)
{
    (void) arg;
    self_t *self = self_;
    self->sweep_rounds = 0;
    s_sweep (self);
}

// ------------------------------------------------------------------ actor
static int
s_on_start (void *self_, const qn_env_t *env)
{
    (void) env;
    self_t *self = self_;
    qn_timer_add (self->kernel, S_FIRST_LOAD_MS, S_LOAD_MS, s_on_load_tick, NULL);
    qn_timer_add (self->kernel, S_SWEEP_MS, S_SWEEP_MS, s_on_sweep_tick, NULL);
    return 0;
}

//  Stops at once: a fire in flight commits or not in PostgreSQL, and a
//  timer that did not fire is still pending for the next broker.
static int
s_on_stop (void *self_, const qn_env_t *env)
{
    (void) self_;
    (void) env;
    return QN_DONE;
}

static void
s_destroy (void **self_p)
{
    self_t *self = *self_p;
    if (!self)
        return;
    for (int i = 0; i < S_FIRE_IN_FLIGHT; i++)
        free (self->batches [i].ids);
    while (qn_heap_size (&self->heap))
        s_heap_pop (self);
    qn_heap_free (&self->heap);
    free (self->ready);
    qn_hashmap_destroy (&self->known);
    msgpack_sbuffer_destroy (&self->out);
    qn_pg_args_free (&self->args);
    free (self);
    *self_p = NULL;
}

static const qn_route_t s_routes [] = {
    { QN_MSG_START, s_on_start },
    { QN_MSG_STOP, s_on_stop },
    { QN_MSG_TIMER_ARM, s_on_arm },
    { 0, NULL }
};

qn_actor_t *
qn_timers_new (qn_kernel_t *kernel, const qn_config_t *config)
{
    self_t *self = qn_zalloc (sizeof *self);
    self->kernel = kernel;
    self->config = config;
    self->known = qn_hashmap_new ();
    msgpack_sbuffer_init (&self->out);
    qn_pg_args_init (&self->args);
    qn_actor_def_t def = {
        .name = "timers", .routes = s_routes, .self = self, .destroy = s_destroy
    };
    return qn_actor_spawn (kernel, &def);
}
