/*  actors/retention/retention.c - periodic retention, eviction and segment upkeep
    Every min (RETENTION_INTERVAL, EVICTION_INTERVAL) ms it calls
    queen.retention_run (5000), which in one short transaction deletes
    messages past retentionSeconds / completedRetentionSeconds, moves
    messages waiting past maxWaitTimeSeconds to the dead-letter queue,
    sweeps deleted queues and partitions, and drops one old segment. A job
    that used its whole budget may have more to do, so the call repeats at
    once (at most S_MAX_ROUNDS times per tick). queen.ensure_segments runs
    every 10 s on its own, so new segments exist even between long
    retention intervals; the same tick calls queen._ingest_rollup, which
    folds the partitions' pushed counts into the per-minute ingest counts
    the throughput reads use (docs/operations.md). Each tick also calls queen.sqs_sweep (5000): the
    SQS door's expired dedup entries and the metadata / receive counts of
    messages that are gone (docs/sqs.md).
    Every broker runs this: the SQL is safe to run concurrently (small
    batches, try-locks, lock_timeout on the segment drop), so no leader is
    needed.
    Receives  PG_RESULT replies (its own timers drive it)
    Sends     QN_MSG_PG_EXEC to pg_writer
    Owns      nothing but its timers
    Failure   a failed call is logged (warn once per failure streak) and
              tried again at the next tick
*/
#include "actors/actors.h"
#include "actors/pg/call.h"
#include "actors/pg/statements.h"
#include "wire/msg_pg.h"

#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#define S_BATCH             5000
#define S_MAX_ROUNDS        20          //  Calls per tick while jobs have more
#define S_SEGMENTS_MS       10000

typedef struct {
    qn_kernel_t *kernel;        //  Not owned
    const qn_config_t *config;  //  Not owned
    uint32_t interval_ms;
    bool running;               //  A retention_run is in flight
    int rounds;                 //  Calls made in this tick
    bool segments_running;
    bool rollup_running;        //  A _ingest_rollup is in flight
    bool sqs_running;           //  A sqs_sweep is in flight
    bool failing;               //  Last call failed (logged once)
    msgpack_sbuffer out;
    qn_pg_args_t args;
} self_t;

//  Sends PG_EXEC [stmt, nil, params] with one int param (or none).
static int
s_exec (self_t *self, uint32_t stmt, int64_t param, bool has_param, qn_reply_fn *cb)
{
    qn_pg_args_clear (&self->args);
    if (has_param)
        qn_pg_args_int (&self->args, param);
    uint32_t timeout = (uint32_t) self->config->db_statement_timeout_ms + 2000;
    return qn_pg_call (self->kernel, "pg_writer", &self->out, stmt, NULL, &self->args, timeout,
                       cb, NULL);
}

static void
s_failed (self_t *self, const char *what, const char *why)
{
    if (!self->failing)
        qn_warn ("%s failed, retrying next tick: %s", what, why);
    else
        qn_debug ("%s failed: %s", what, why);
    self->failing = true;
}

static void s_run (self_t *self);

static bool
s_job (const msgpack_object *job, const char *name)
{
    return job->via.str.size == strlen (name) && !memcmp (job->via.str.ptr, name, job->via.str.size);
}

static void
s_on_run_reply (void *self_, void *arg, const qn_env_t *env)
{
    (void) arg;
    self_t *self = self_;
    self->running = false;
    qn_pg_result_t res;
    qn_pg_result_decode (env ? env->body.ptr : NULL, env ? env->body.len : 0, &res);
    char why [300];
    if (qn_pg_result_failed (&res, why, sizeof why)) {
        s_failed (self, "retention run", why);
        qn_pg_result_free (&res);
        return;
    }
    self->failing = false;
    bool more = false;
    int64_t age = 0, completed = 0, evicted = 0, swept = 0, dropped = 0;
    for (uint32_t r = 0; r < res.row_count; r++) {
        const msgpack_object *row = &res.rows [r];
        if (row->type != MSGPACK_OBJECT_ARRAY || row->via.array.size != 2
        ||  row->via.array.ptr [0].type != MSGPACK_OBJECT_STR)
            continue;
        const msgpack_object *job = &row->via.array.ptr [0], *n = &row->via.array.ptr [1];
        int64_t v = n->type == MSGPACK_OBJECT_POSITIVE_INTEGER ? (int64_t) n->via.u64 : 0;
        if (s_job (job, "retention"))
            age = v;
        else
        if (s_job (job, "completed_retention"))
            completed = v;
        else
        if (s_job (job, "max_wait"))
            evicted = v;
        else
        if (s_job (job, "deleted"))
            swept = v;
        else
        if (s_job (job, "drop_segments"))
            dropped = v;
        else
            continue;
        //  A job that used its whole budget (or dropped a segment) may
        //  have more to do.
        if (v >= S_BATCH || (v > 0 && s_job (job, "drop_segments")))
            more = true;
    }
    qn_pg_result_free (&res);
    if (age + completed)
        qn_count (self->kernel, "retention_deleted", age + completed);
    if (evicted)
        qn_count (self->kernel, "retention_evicted", evicted);
    if (swept)
        qn_count (self->kernel, "retention_swept", swept);
    if (dropped)
        qn_count (self->kernel, "retention_segments_dropped", dropped);
    if (age + completed + evicted + swept + dropped)
        qn_debug ("retention: deleted=%lld completed=%lld evicted=%lld swept=%lld segments_dropped=%lld",
                  (long long) age, (long long) completed, (long long) evicted, (long long) swept,
                  (long long) dropped);
    if (more && self->rounds < S_MAX_ROUNDS)
        s_run (self);
}

static void
s_run (self_t *self)
{
    if (self->running)
        return;
    self->rounds++;
    if (s_exec (self, QN_SQL_RETENTION, S_BATCH, true, s_on_run_reply) == 0)
        self->running = true;
}

static void
s_on_sqs_reply (void *self_, void *arg, const qn_env_t *env)
{
    (void) arg;
    self_t *self = self_;
    self->sqs_running = false;
    qn_pg_result_t res;
    qn_pg_result_decode (env ? env->body.ptr : NULL, env ? env->body.len : 0, &res);
    char why [300];
    if (qn_pg_result_failed (&res, why, sizeof why)) {
        s_failed (self, "sqs sweep", why);
        qn_pg_result_free (&res);
        return;
    }
    int64_t swept = 0;
    for (uint32_t r = 0; r < res.row_count; r++) {
        const msgpack_object *row = &res.rows [r];
        if (row->type == MSGPACK_OBJECT_ARRAY && row->via.array.size == 2
        &&  row->via.array.ptr [1].type == MSGPACK_OBJECT_POSITIVE_INTEGER)
            swept += (int64_t) row->via.array.ptr [1].via.u64;
    }
    qn_pg_result_free (&res);
    if (swept) {
        qn_count (self->kernel, "sqs_swept", swept);
        qn_debug ("sqs sweep: rows=%lld", (long long) swept);
    }
}

static void
s_on_tick (void *self_, void *arg)
{
    (void) arg;
    self_t *self = self_;
    self->rounds = 0;
    s_run (self);
    if (!self->sqs_running
    &&  s_exec (self, QN_SQL_SQS_SWEEP, S_BATCH, true, s_on_sqs_reply) == 0)
        self->sqs_running = true;
}

static void
s_on_segments_reply (void *self_, void *arg, const qn_env_t *env)
{
    (void) arg;
    self_t *self = self_;
    self->segments_running = false;
    qn_pg_result_t res;
    qn_pg_result_decode (env ? env->body.ptr : NULL, env ? env->body.len : 0, &res);
    char why [300];
    if (qn_pg_result_failed (&res, why, sizeof why))
        s_failed (self, "ensure_segments", why);
    else
    if (res.row_count == 1 && res.rows [0].type == MSGPACK_OBJECT_ARRAY
    &&  res.rows [0].via.array.size == 1
    &&  res.rows [0].via.array.ptr [0].type == MSGPACK_OBJECT_POSITIVE_INTEGER
    &&  res.rows [0].via.array.ptr [0].via.u64 > 0)
        qn_debug ("segments created: count=%llu",
                  (unsigned long long) res.rows [0].via.array.ptr [0].via.u64);
    qn_pg_result_free (&res);
}

static void
s_on_rollup_reply (void *self_, void *arg, const qn_env_t *env)
{
    (void) arg;
    self_t *self = self_;
    self->rollup_running = false;
    qn_pg_result_t res;
    qn_pg_result_decode (env ? env->body.ptr : NULL, env ? env->body.len : 0, &res);
    char why [300];
    if (qn_pg_result_failed (&res, why, sizeof why))
        s_failed (self, "ingest rollup", why);
    qn_pg_result_free (&res);
}

static void
s_on_segments_tick (void *self_, void *arg)
{
    (void) arg;
    self_t *self = self_;
    if (!self->segments_running
    &&  s_exec (self, QN_SQL_ENSURE_SEGMENTS, 0, false, s_on_segments_reply) == 0)
        self->segments_running = true;
    if (!self->rollup_running
    &&  s_exec (self, QN_SQL_INGEST_ROLLUP, 0, false, s_on_rollup_reply) == 0)
        self->rollup_running = true;
}

static int
s_on_start (void *self_, const qn_env_t *env)
{
    (void) env;
    self_t *self = self_;
    qn_timer_add (self->kernel, self->interval_ms, self->interval_ms, s_on_tick, NULL);
    qn_timer_add (self->kernel, S_SEGMENTS_MS, S_SEGMENTS_MS, s_on_segments_tick, NULL);
    qn_info ("retention every %u ms", self->interval_ms);
    return 0;
}

static void
s_destroy (void **self_p)
{
    self_t *self = *self_p;
    if (!self)
        return;
    msgpack_sbuffer_destroy (&self->out);
    qn_pg_args_free (&self->args);
    free (self);
    *self_p = NULL;
}

static const qn_route_t s_routes [] = {
    { QN_MSG_START, s_on_start },
    { 0, NULL }
};

qn_actor_t *
qn_retention_new (qn_kernel_t *kernel, const qn_config_t *config)
{
    self_t *self = qn_zalloc (sizeof *self);
    self->kernel = kernel;
    self->config = config;
    int64_t ms = config->retention_interval_ms < config->eviction_interval_ms
               ? config->retention_interval_ms : config->eviction_interval_ms;
    self->interval_ms = ms > 0 ? (uint32_t) ms : 60000;
    msgpack_sbuffer_init (&self->out);
    qn_pg_args_init (&self->args);
    qn_actor_def_t def = {
        .name = "retention", .routes = s_routes, .self = self, .destroy = s_destroy
    };
    return qn_actor_spawn (kernel, &def);
}
